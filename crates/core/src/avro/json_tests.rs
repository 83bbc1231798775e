use super::*;

fn decode(schema: &str, body: &[u8]) -> Result<String, String> {
    let schema = Schema::parse_str(schema).unwrap();
    let mut out = Vec::new();
    datum_to_json(&schema, &Names::new(), body, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

#[test]
fn decimals_are_exact_text() {
    let mut out = Vec::new();
    decimal(&[0xcf, 0xc7], 2, &mut out);
    assert_eq!(out, b"-123.45");
    for (raw, scale, text) in [
        (&[0x00][..], 2, "0.00"),
        (&[0x01], 3, "0.001"),
        (&[0xff], 0, "-1"),
        (&[0x00, 0x80], 0, "128"),
        (&[0x80], 1, "-12.8"),
    ] {
        let mut out = Vec::new();
        decimal(raw, scale, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }
    // 20 bytes: beyond any machine integer.
    let mut out = Vec::new();
    decimal(&[0x7f; 20], 0, &mut out);
    assert_eq!(out.len(), 48);
}

#[test]
fn times_before_the_epoch() {
    let mut out = Vec::new();
    timestamp(-1, 1_000_000, 3, true, &mut out).unwrap();
    assert_eq!(out, b"\"1969-12-31T23:59:59.999Z\"");
}

#[test]
fn base64_is_standard_and_padded() {
    assert_eq!(base64(b""), "");
    assert_eq!(base64(b"f"), "Zg==");
    assert_eq!(base64(b"fo"), "Zm8=");
    assert_eq!(base64(b"foo"), "Zm9v");
    assert_eq!(base64(&[0xfb, 0xff]), "+/8=");
}

#[test]
fn bodies_that_do_not_fit_are_refused() {
    let rec = r#"{"type":"record","name":"R","fields":[{"name":"a","type":["null","int"]}]}"#;
    assert_eq!(decode(rec, &[2, 4]).unwrap(), r#"{"a":2}"#);
    assert!(decode(rec, &[2, 4, 0]).unwrap_err().contains("left after"));
    assert!(decode(rec, &[6, 4])
        .unwrap_err()
        .contains("union branch #3"));
    assert!(decode(rec, &[2]).unwrap_err().contains("truncated"));
    assert!(decode(r#""string""#, &[0x80, 0x80, 0x80, 0x80, 0x08])
        .unwrap_err()
        .contains("truncated"));
    assert!(decode(r#""boolean""#, &[2])
        .unwrap_err()
        .contains("boolean byte"));
    let arr = r#"{"type":"array","items":"null"}"#;
    // A forged item count of nulls (zero bytes each) is bounded.
    assert!(decode(arr, &[0xfe, 0xff, 0xff, 0xff, 0x0f, 0]).is_err());
    assert_eq!(decode(arr, &[4, 0]).unwrap(), "[null,null]");
}

#[test]
fn maps_sort_keys_and_floats_read_as_json_writes_them() {
    let map = r#"{"type":"map","values":"double"}"#;
    let mut body = vec![4, 2, b'b'];
    body.extend_from_slice(&1.0f64.to_le_bytes());
    body.extend_from_slice(&[2, b'a']);
    body.extend_from_slice(&f64::NAN.to_le_bytes());
    body.push(0);
    assert_eq!(decode(map, &body).unwrap(), r#"{"a":"NaN","b":1.0}"#);
}
