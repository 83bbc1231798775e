//! The crafted bodies of issue 22 against the decoder's bounds: each is refused (naming the
//! bound) or decoded, within a generous 100 ms, without an allocation proportional to a forged
//! number; decimals of up to 38 digits decode exactly as before.

use std::time::Duration;

use super::*;
use crate::test_time::within;

/// Decodes `body` as a datum of `schema` and checks the 100 ms bound the issue asks for.
fn timed(schema: &str, body: &[u8]) -> Result<String, String> {
    let schema = Schema::parse_str(schema).unwrap();
    let mut out = Vec::new();
    let what = format!("a body of {} bytes", body.len());
    let result = within(Duration::from_millis(100), &what, || {
        datum_to_json(&schema, &Names::new(), body, &mut out)
    });
    eprintln!("  {} bytes of output", out.len());
    result.map(|()| String::from_utf8(out).unwrap())
}

const BIG_DECIMAL: &str = r#"{"type":"bytes","logicalType":"big-decimal"}"#;

#[test]
fn a_big_decimal_scale_of_2_pow_40_is_refused() {
    // 8 bytes of big-decimal: unscaled [1], then the scale 2^40 as a zigzag varint.
    let body = [0x10, 0x02, 0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40];
    let e = timed(BIG_DECIMAL, &body).unwrap_err();
    assert!(
        e.contains("scale 1099511627776") && e.contains("1000"),
        "{e}"
    );
    // Within the bound it still decodes: 1 at scale 3.
    assert_eq!(
        timed(BIG_DECIMAL, &[0x06, 0x02, 0x01, 0x06]).unwrap(),
        "0.001"
    );
}

/// A varint of the zigzag form of `v`.
fn varint(v: i64, out: &mut Vec<u8>) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[test]
fn two_thousand_blocks_of_null_items_hit_the_output_bound() {
    let mut body = Vec::new();
    for _ in 0..2000 {
        varint(1 << 20, &mut body);
    }
    body.push(0);
    let e = timed(r#"{"type":"array","items":"null"}"#, &body).unwrap_err();
    assert!(e.contains("exceeds 64 times"), "{e}");
    // Empty records are zero-width too.
    let empty = r#"{"type":"array","items":{"type":"record","name":"E","fields":[]}}"#;
    assert!(timed(empty, &body)
        .unwrap_err()
        .contains("exceeds 64 times"));
    // A few null items are fine.
    assert_eq!(
        timed(r#"{"type":"array","items":"null"}"#, &[0x04, 0]).unwrap(),
        "[null,null]"
    );
}

/// Fuzzing found it (avro_round_trip): 4,216 zero-size fixed items in one block — as the
/// encoder writes them — were refused by a block count bounded by the bytes left.
#[test]
fn a_block_of_zero_width_items_is_valid() {
    let schema = r#"{"type":"array","items":{"type":"fixed","name":"Z","size":0}}"#;
    let mut body = Vec::new();
    varint(4216, &mut body);
    body.push(0);
    let text = timed(schema, &body).unwrap();
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value.as_array().map(Vec::len), Some(4216));
    let schema = Schema::parse_str(schema).unwrap();
    let mut again = Vec::new();
    crate::avro::encode::encode(&schema, &Names::new(), &value, &mut again).unwrap();
    assert_eq!(again, body);
}

#[test]
fn a_schema_of_precision_2e9_is_refused() {
    let schema =
        r#"{"type":"bytes","logicalType":"decimal","precision":2000000000,"scale":1000000000}"#;
    let e = timed(schema, &[0x02, 0x01]).unwrap_err();
    assert!(
        e.contains("precision 2000000000") && e.contains("1000 digits"),
        "{e}"
    );
}

#[test]
fn a_one_megabyte_decimal_is_refused_and_the_largest_allowed_is_fast() {
    let schema = r#"{"type":"bytes","logicalType":"decimal","precision":38,"scale":2}"#;
    let mut body = Vec::new();
    varint(1 << 20, &mut body);
    body.extend(std::iter::repeat_n(0x7f, 1 << 20));
    let e = timed(schema, &body).unwrap_err();
    assert!(
        e.contains("1048576 bytes") && e.contains("1024 bytes"),
        "{e}"
    );
    let mut body = Vec::new();
    varint(MAX_DECIMAL_BYTES as i64, &mut body);
    body.extend(std::iter::repeat_n(0x7f, MAX_DECIMAL_BYTES));
    let text = timed(schema, &body).unwrap();
    // 0x7f7f… of 1,024 bytes is about 2^8191: 2,466 digits (two after the point), and the point.
    assert_eq!(text.len(), 2466 + 1);
    assert!(text.ends_with(|c: char| c.is_ascii_digit()) && text.as_bytes()[2464] == b'.');
}

/// The two's complement big-endian bytes of `v`, as Avro writers write decimals (minimal).
fn unscaled(v: i128) -> Vec<u8> {
    let b = v.to_be_bytes();
    let mut start = 0;
    while start < 15
        && ((b[start] == 0 && b[start + 1] & 0x80 == 0)
            || (b[start] == 0xff && b[start + 1] & 0x80 != 0))
    {
        start += 1;
    }
    b[start..].to_vec()
}

/// `v` at `scale` as exact text, by integer arithmetic on i128.
fn expected(v: i128, scale: u32) -> String {
    let p = 10i128.pow(scale);
    let (int, frac) = (v.abs() / p, v.abs() % p);
    let sign = if v < 0 { "-" } else { "" };
    if scale == 0 {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac:0w$}", w = scale as usize)
    }
}

#[test]
fn decimals_of_up_to_38_digits_decode_exactly() {
    let max = 10i128.pow(38) - 1;
    let mut values = vec![
        0,
        1,
        -1,
        127,
        128,
        -128,
        -129,
        max,
        -max,
        12_345_678_901_234_567_890,
    ];
    let mut x: i128 = 0x0005_DEEC_E66D;
    for _ in 0..500 {
        x = (x.wrapping_mul(6_364_136_223_846_793_005) + 1_442_695_040_888_963_407) % max;
        values.push(x);
        values.push(-x / 7);
    }
    for v in values {
        for scale in [0u32, 2, 9, 38] {
            let schema = format!(
                r#"{{"type":"bytes","logicalType":"decimal","precision":38,"scale":{scale}}}"#
            );
            let raw = unscaled(v);
            let mut body = Vec::new();
            varint(raw.len() as i64, &mut body);
            body.extend_from_slice(&raw);
            let schema = Schema::parse_str(&schema).unwrap();
            let mut out = Vec::new();
            datum_to_json(&schema, &Names::new(), &body, &mut out).unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                expected(v, scale),
                "{v} scale {scale}"
            );
        }
    }
}
