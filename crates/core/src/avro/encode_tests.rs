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
