//! Value semantics of SPEC §1 as bytes: a canonical, self-delimiting encoding of JSON values,
//! join keys and whole rows, plus direct equality tests.
//!
//! Two values encode to the same bytes exactly when SPEC calls them equal: strings compare
//! exactly, numbers numerically (`1` = `1.0`), arrays and objects structurally (object member order
//! does not matter). A row encodes its non-null columns sorted by name, so a missing column equals
//! `null`. Every encoding is self-delimiting, so concatenations of encodings are prefix-free and can
//! be split again; that is what lets state keys be built by concatenation.
//!
//! This module does not decide what matches what (null keys): the engine does.

use serde_json::{Number, Value};

use super::column::Column;
use crate::changelog::Row;

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const UINT: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

/// A number reduced to one representation per numeric value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Numeric {
    Int(i64),
    Uint(u64),
    Float(f64),
}

fn numeric(n: &Number) -> Numeric {
    if let Some(i) = n.as_i64() {
        return Numeric::Int(i);
    }
    if let Some(u) = n.as_u64() {
        return Numeric::Uint(u);
    }
    let f = n.as_f64().unwrap_or(f64::NAN);
    // 2^63 and 2^64 are exact in f64; integral floats inside the integer ranges are integers.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    if f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f) {
        Numeric::Int(f as i64)
    } else if f.fract() == 0.0 && (TWO_63..TWO_64).contains(&f) {
        Numeric::Uint(f as u64)
    } else {
        Numeric::Float(f)
    }
}

fn put_len(out: &mut Vec<u8>, mut n: usize) {
    // LEB128 varint.
    loop {
        let byte = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_str(out: &mut Vec<u8>, s: &str) {
    put_len(out, s.len());
    out.extend_from_slice(s.as_bytes());
}

/// Appends the canonical encoding of `v`.
pub fn encode_value(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(n) => match numeric(n) {
            Numeric::Int(i) => {
                out.push(INT);
                out.extend_from_slice(&((i as u64) ^ (1 << 63)).to_be_bytes());
            }
            Numeric::Uint(u) => {
                out.push(UINT);
                out.extend_from_slice(&u.to_be_bytes());
            }
            Numeric::Float(f) => {
                out.push(FLOAT);
                out.extend_from_slice(&f.to_bits().to_be_bytes());
            }
        },
        Value::String(s) => {
            out.push(STRING);
            put_str(out, s);
        }
        Value::Array(items) => {
            out.push(ARRAY);
            put_len(out, items.len());
            for item in items {
                encode_value(item, out);
            }
        }
        Value::Object(map) => {
            out.push(OBJECT);
            put_len(out, map.len());
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (k, v) in members {
                put_str(out, k);
                encode_value(v, out);
            }
        }
    }
}

/// Appends the encoding of the join key `columns` of `row`. Returns `true` when any key column is
/// null or missing.
pub fn encode_key(row: &Row, columns: &[Column], out: &mut Vec<u8>) -> bool {
    let mut has_null = false;
    for c in columns {
        let v = c.value(row);
        has_null |= v.is_null();
        encode_value(v, out);
    }
    has_null
}

/// Appends the encoding of a whole row: non-null columns sorted by name.
pub fn encode_row(row: &Row, out: &mut Vec<u8>) {
    let mut columns: Vec<(&String, &Value)> = row.iter().filter(|(_, v)| !v.is_null()).collect();
    columns.sort_unstable_by(|a, b| a.0.cmp(b.0));
    out.push(OBJECT);
    put_len(out, columns.len());
    for (k, v) in columns {
        put_str(out, k);
        encode_value(v, out);
    }
}

/// SPEC §1 equality of two values.
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => numeric(x) == numeric(y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => false,
    }
}

/// SPEC §1 equality of two rows: column by column, a missing column equal to `null`.
pub fn rows_equal(a: &Row, b: &Row) -> bool {
    let covers = |x: &Row, y: &Row| {
        x.iter()
            .all(|(k, v)| values_equal(v, y.get(k).unwrap_or(&Value::Null)))
    };
    covers(a, b) && covers(b, a)
}

/// Equality of two rows on the given columns only (dedup's "used columns", SPEC §3.4).
pub fn rows_equal_on(a: &Row, b: &Row, columns: &[Column]) -> bool {
    columns.iter().all(|c| values_equal(c.value(a), c.value(b)))
}

/// Equality of the key `columns` of two rows, null equal to null (SPEC §2, "does not change").
pub fn keys_equal(a: &Row, a_cols: &[Column], b: &Row, b_cols: &[Column]) -> bool {
    a_cols
        .iter()
        .zip(b_cols)
        .all(|(x, y)| values_equal(x.value(a), y.value(b)))
}

/// Reads one LEB128 length written by this module; returns it and the bytes consumed.
fn read_len(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut n = 0usize;
    for (i, b) in bytes.iter().enumerate().take(10) {
        n |= ((b & 0x7f) as usize) << (7 * i);
        if b & 0x80 == 0 {
            return Some((n, i + 1));
        }
    }
    None
}

/// Length in bytes of the one encoded value at the start of `bytes`.
pub fn encoded_len(bytes: &[u8]) -> Option<usize> {
    let tag = *bytes.first()?;
    let rest = &bytes[1..];
    let body = match tag {
        NULL | FALSE | TRUE => 0,
        INT | UINT | FLOAT => 8,
        STRING => {
            let (len, used) = read_len(rest)?;
            used + len
        }
        ARRAY => {
            let (count, mut used) = read_len(rest)?;
            for _ in 0..count {
                used += encoded_len(rest.get(used..)?)?;
            }
            used
        }
        OBJECT => {
            let (count, mut used) = read_len(rest)?;
            for _ in 0..count {
                let (klen, kused) = read_len(rest.get(used..)?)?;
                used += kused + klen;
                used += encoded_len(rest.get(used..)?)?;
            }
            used
        }
        _ => return None,
    };
    (rest.len() >= body).then_some(1 + body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn enc(v: Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value(&v, &mut out);
        out
    }

    fn row(v: Value) -> Row {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn numbers_compare_numerically() {
        assert_eq!(enc(json!(1)), enc(json!(1.0)));
        assert_eq!(enc(json!(-0.0)), enc(json!(0)));
        assert_ne!(enc(json!(1)), enc(json!(1.5)));
        assert_eq!(enc(json!(1e19)), enc(json!(10_000_000_000_000_000_000u64)));
        assert_ne!(enc(json!(1)), enc(json!("1")));
        assert!(values_equal(&json!(2), &json!(2.0)));
        assert!(!values_equal(&json!(2), &json!("2")));
    }

    #[test]
    fn objects_compare_structurally() {
        assert_eq!(
            enc(json!({"a": 1, "b": [1, 2]})),
            enc(json!({"b": [1.0, 2], "a": 1}))
        );
        assert_ne!(enc(json!([1, 2])), enc(json!([2, 1])));
        assert!(values_equal(
            &json!({"a": 1, "b": 2}),
            &json!({"b": 2, "a": 1.0})
        ));
    }

    #[test]
    fn rows_treat_missing_as_null() {
        let a = row(json!({"k": 1, "v": null}));
        let b = row(json!({"k": 1.0}));
        assert!(rows_equal(&a, &b));
        let (mut x, mut y) = (Vec::new(), Vec::new());
        encode_row(&a, &mut x);
        encode_row(&b, &mut y);
        assert_eq!(x, y);
        assert!(!rows_equal(&a, &row(json!({"k": 1, "v": 0}))));
    }

    #[test]
    fn encodings_are_self_delimiting() {
        for v in [
            json!(null),
            json!(true),
            json!(-5),
            json!(1.5),
            json!("héllo"),
            json!([1, "a", [null]]),
            json!({"x": {"y": [1, 2]}}),
        ] {
            let mut bytes = enc(v);
            let len = bytes.len();
            bytes.extend_from_slice(&[9, 9, 9]);
            assert_eq!(encoded_len(&bytes), Some(len));
        }
    }

    #[test]
    fn key_reports_nulls() {
        let r = row(json!({"a": 1, "b": null}));
        let mut out = Vec::new();
        assert!(encode_key(
            &r,
            &[Column::new("a"), Column::new("b")],
            &mut out
        ));
        out.clear();
        assert!(encode_key(&r, &[Column::new("c")], &mut out));
        out.clear();
        assert!(!encode_key(&r, &[Column::new("a")], &mut out));
    }
}
