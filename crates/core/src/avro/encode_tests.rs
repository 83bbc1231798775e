use super::*;
use crate::avro::encode_values::base64_decode;

#[test]
fn decimals_are_minimal_twos_complement() {
    let b = |v: Value, scale| minimal(&unscaled(&v, scale).unwrap());
    assert_eq!(b(serde_json::json!(-123.45), 2), vec![0xcf, 0xc7]);
    assert_eq!(b(serde_json::json!(1.23), 3), vec![0x04, 0xce]);
    assert_eq!(b(serde_json::json!(128), 0), vec![0x00, 0x80]);
    assert_eq!(b(serde_json::json!(-128), 0), vec![0x80]);
    assert_eq!(b(serde_json::json!(0), 2), vec![0x00]);
    assert!(unscaled(&serde_json::json!(1.234), 2).is_err());
}

#[test]
fn base64_round_trips() {
    for b in [&b""[..], b"\xff\x00", b"\x01\x02\x03\x04", b"abcde"] {
        assert_eq!(base64_decode(&super::super::json::base64(b)).unwrap(), b);
    }
}

/// `body` written with `schema` → its JSON text → encoded again: the same bytes; returns the text.
fn round_trip(schema: &str, body: &[u8]) -> String {
    let schema = crate::avro::schema::WriterSchema::parse(schema).unwrap();
    let mut text = Vec::new();
    super::super::json::datum_to_json(&schema.root, &schema.names, body, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    let mut again = Vec::new();
    encode(&schema.root, &schema.names, &value, &mut again)
        .unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(again, body, "{text}");
    text
}

/// Zig-zag varint of a long, as Avro writes it.
fn avro_long(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    long(v, &mut out);
    out
}

/// Fuzzing found it (avro_round_trip): timestamps past year 9999 decoded to extended-year text
/// the encoder refused, and the encoder refused texts outside the years 1677–2262 (it counted
/// nanoseconds in an i64). Outside 0000–9999 a timestamp is its number; inside, text of any year.
#[test]
fn timestamps_of_any_year_round_trip() {
    let millis = r#"{"type": "long", "logicalType": "timestamp-millis"}"#;
    let micros = r#"{"type": "long", "logicalType": "local-timestamp-micros"}"#;
    // 1203-06-22T00:00:00.001Z, 9999-12-31T23:59:59.999Z, 0000-01-01T00:00:00Z.
    for ms in [
        -24_189_321_599_999,
        253_402_300_799_999,
        -62_167_219_200_000,
    ] {
        assert!(round_trip(millis, &avro_long(ms)).contains('Z'));
    }
    assert_eq!(
        round_trip(millis, &avro_long(253_402_300_800_000)),
        "253402300800000"
    );
    assert_eq!(
        round_trip(millis, &avro_long(i64::MIN)),
        i64::MIN.to_string()
    );
    assert_eq!(
        round_trip(micros, &avro_long(i64::MAX)),
        i64::MAX.to_string()
    );
    assert_eq!(
        round_trip(micros, &avro_long(-30_000_000_000_000_001)),
        "\"1019-05-04T18:39:59.999999\""
    );
    // Fuzzing found it too: the lowest and highest nanosecond timestamps, as text, overflowed
    // seconds × 10⁹ before their nanoseconds were added.
    let nanos = r#"{"type": "long", "logicalType": "local-timestamp-nanos"}"#;
    assert_eq!(
        round_trip(nanos, &avro_long(i64::MIN)),
        "\"1677-09-21T00:12:43.145224192\""
    );
    assert_eq!(
        round_trip(nanos, &avro_long(i64::MAX)),
        "\"2262-04-11T23:47:16.854775807\""
    );
}

/// Fuzzing found it (avro_round_trip): a decimal wider than a double came back rounded (serde_json
/// parsed it into an f64) or in exponent form the encoder refused. Numbers keep their text
/// (`arbitrary_precision`) and the encoder reads exponents exactly.
#[test]
fn decimals_of_any_width_round_trip() {
    let schema = r#"{"type": "bytes", "logicalType": "decimal", "precision": 60, "scale": 2}"#;
    // 2^200 + 1 unscaled: 61 digits, far past a double's 17.
    let mut two_pow_200_plus_1 = vec![0x01];
    two_pow_200_plus_1.extend([0u8; 24]);
    two_pow_200_plus_1.push(0x01);
    let mut body = avro_long(two_pow_200_plus_1.len() as i64);
    body.extend(&two_pow_200_plus_1);
    assert_eq!(
        round_trip(schema, &body),
        "16069380442589902755419620923411626025222029937827928353013.77"
    );
    let exact = |text: &str, scale| {
        minimal(&unscaled(&serde_json::from_str(text).unwrap(), scale).unwrap())
    };
    assert_eq!(exact("1.5e3", 1), exact("1500", 1));
    assert_eq!(exact("-12E-1", 2), exact("-1.20", 2));
    assert_eq!(exact("0e99999999999", 2), vec![0x00]);
    assert!(unscaled(&serde_json::from_str("1e-3").unwrap(), 2).is_err());
    let too_wide = unscaled(&serde_json::from_str("1e5000").unwrap(), 0).unwrap_err();
    assert!(too_wide.contains("more than 2466 digits"), "{too_wide}");
    let long_text = format!("\"{}x\"", "9".repeat(10_000));
    let refused = unscaled(&serde_json::from_str(&long_text).unwrap(), 0).unwrap_err();
    assert!(refused.len() < 200, "{refused}");
}

/// Fuzzing found it (avro_round_trip): a double read from an Avro datum came back from its own
/// JSON text 1 ULP off — serde_json's default float parsing is not correctly rounded; the
/// workspace enables `float_roundtrip`.
#[test]
fn doubles_survive_their_json_text_exactly() {
    let body = [0x0a, 0x02, 0xfa, 0xfa, 0x00, 0x02, 0x51, 0x51];
    let mut text = Vec::new();
    super::super::json::datum_to_json(&Schema::Double, &Names::new(), &body, &mut text).unwrap();
    let value: Value = serde_json::from_slice(&text).unwrap();
    let mut again = Vec::new();
    encode(&Schema::Double, &Names::new(), &value, &mut again).unwrap();
    assert_eq!(again, body, "{}", String::from_utf8_lossy(&text));
}
