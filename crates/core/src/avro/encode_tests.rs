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
