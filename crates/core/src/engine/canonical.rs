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

use serde_json::Value;

use super::column::Column;
use crate::row::scan::JsonKind;
use crate::row::value::{numeric_of, Numeric};
use crate::row::{Json, Row};

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const UINT: u8 = 4;
const FLOAT: u8 = 5;
const STRING: u8 = 6;
const ARRAY: u8 = 7;
const OBJECT: u8 = 8;

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

fn put_bytes(out: &mut Vec<u8>, s: &[u8]) {
    put_len(out, s.len());
    out.extend_from_slice(s);
}

fn put_numeric(out: &mut Vec<u8>, n: Numeric) {
    match n {
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
    }
}

/// Appends the canonical encoding of the value `v` (compact JSON text).
pub fn encode_value(v: Json<'_>, out: &mut Vec<u8>) {
    match v.kind() {
        JsonKind::Null => out.push(NULL),
        JsonKind::Bool => out.push(if v.as_bool() == Some(true) {
            TRUE
        } else {
            FALSE
        }),
        JsonKind::Number => put_numeric(out, v.numeric().unwrap_or(Numeric::Float(f64::NAN))),
        JsonKind::String => {
            out.push(STRING);
            let text = v.as_str().unwrap_or_default();
            put_bytes(out, text.as_bytes());
        }
        JsonKind::Array | JsonKind::Object => encode_tree(&v.to_value(), out),
    }
}

/// Appends the canonical encoding of a serde_json value (nested arrays and objects).
pub fn encode_tree(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(n) => put_numeric(out, numeric_of(n)),
        Value::String(s) => {
            out.push(STRING);
            put_bytes(out, s.as_bytes());
        }
        Value::Array(items) => {
            out.push(ARRAY);
            put_len(out, items.len());
            for item in items {
                encode_tree(item, out);
            }
        }
        Value::Object(map) => {
            out.push(OBJECT);
            put_len(out, map.len());
            let mut members: Vec<(&String, &Value)> = map.iter().collect();
            members.sort_unstable_by(|a, b| a.0.cmp(b.0));
            for (k, v) in members {
                put_bytes(out, k.as_bytes());
                encode_tree(v, out);
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

/// Whether an encoded join key holds a null column.
pub fn has_null(join_key: &[u8]) -> bool {
    let mut at = 0;
    while at < join_key.len() {
        if join_key[at] == NULL {
            return true;
        }
        match encoded_len(&join_key[at..]) {
            Some(len) => at += len,
            None => return false,
        }
    }
    false
}

thread_local! {
    /// Per row shape, its columns in name order (shapes are few; sorting is per shape).
    static NAME_ORDER: std::cell::RefCell<rustc_hash::FxHashMap<u32, Box<[u16]>>> =
        std::cell::RefCell::new(rustc_hash::FxHashMap::default());
}

/// Appends the encoding of a whole row: non-null columns sorted by (escaped) name.
pub fn encode_row(row: &Row, out: &mut Vec<u8>) {
    let shape = row.shape();
    if shape == crate::row::shape::UNKNOWN || row.width() > u16::MAX as usize {
        let mut columns: smallvec::SmallVec<[(&[u8], Json<'_>); 16]> =
            row.columns().filter(|(_, v)| !v.is_null()).collect();
        columns.sort_unstable_by(|a, b| a.0.cmp(b.0));
        out.push(OBJECT);
        put_len(out, columns.len());
        for (k, v) in columns {
            put_bytes(out, k);
            encode_value(v, out);
        }
        return;
    }
    NAME_ORDER.with(|orders| {
        let mut orders = orders.borrow_mut();
        let order = orders.entry(shape).or_insert_with(|| {
            let mut order: Vec<u16> = (0..row.width() as u16).collect();
            order.sort_unstable_by_key(|&i| row.column(i as usize).0);
            order.into_boxed_slice()
        });
        let non_null = order
            .iter()
            .filter(|&&i| !row.value_at(i as usize).is_null())
            .count();
        out.push(OBJECT);
        put_len(out, non_null);
        for &i in order.iter() {
            let (k, v) = row.column(i as usize);
            if !v.is_null() {
                put_bytes(out, k);
                encode_value(v, out);
            }
        }
    })
}

/// SPEC §1 equality of two rows: column by column, a missing column equal to `null`.
pub fn rows_equal(a: &Row, b: &Row) -> bool {
    if a.json() == b.json() {
        return true;
    }
    // Rows of one schema have the same columns in the same order: compare value by value.
    // A column both rows have with different values decides at once.
    if a.width() == b.width() {
        let mut same_names = true;
        for ((na, va), (nb, vb)) in a.columns().zip(b.columns()) {
            if na != nb {
                same_names = false;
                break;
            }
            if !va.equals(&vb) {
                return false;
            }
        }
        if same_names {
            return true;
        }
    }
    let covers = |x: &Row, y: &Row| {
        x.columns().all(|(k, v)| match y.get(k) {
            Some(w) => v.equals(&w),
            None => v.is_null(),
        })
    };
    covers(a, b) && covers(b, a)
}

/// Equality of two rows on the given columns only (dedup's "used columns", SPEC §3.4).
pub fn rows_equal_on(a: &Row, b: &Row, columns: &[Column]) -> bool {
    columns.iter().all(|c| c.value(a).equals(&c.value(b)))
}

/// Equality of the key `columns` of two rows, null equal to null (SPEC §2, "does not change").
pub fn keys_equal(a: &Row, a_cols: &[Column], b: &Row, b_cols: &[Column]) -> bool {
    a_cols
        .iter()
        .zip(b_cols)
        .all(|(x, y)| x.value(a).equals(&y.value(b)))
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
        let text = serde_json::to_vec(&v).unwrap();
        let mut out = Vec::new();
        encode_value(Json::new_unchecked(&text), &mut out);
        let mut tree = Vec::new();
        encode_tree(&v, &mut tree);
        assert_eq!(out, tree, "text and tree encodings agree for {v}");
        out
    }

    fn raw(text: &str) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value(Json::new_unchecked(text.as_bytes()), &mut out);
        out
    }

    fn row(v: Value) -> Row {
        Row::from_value(&v).unwrap()
    }

    #[test]
    fn numbers_compare_numerically() {
        assert_eq!(enc(json!(1)), enc(json!(1.0)));
        assert_eq!(enc(json!(-0.0)), enc(json!(0)));
        assert_ne!(enc(json!(1)), enc(json!(1.5)));
        assert_eq!(enc(json!(1e19)), enc(json!(10_000_000_000_000_000_000u64)));
        assert_ne!(enc(json!(1)), enc(json!("1")));
        assert_eq!(raw("1.50"), raw("1.5"));
        assert_eq!(raw("1"), raw("1.0"));
        assert_eq!(raw("\"a\""), raw("\"\\u0061\""));
    }

    #[test]
    fn objects_compare_structurally() {
        assert_eq!(
            enc(json!({"a": 1, "b": [1, 2]})),
            enc(json!({"b": [1.0, 2], "a": 1}))
        );
        assert_ne!(enc(json!([1, 2])), enc(json!([2, 1])));
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
        assert!(rows_equal(
            &row(json!({"a": 1, "b": 2})),
            &row(json!({"b": 2, "a": 1}))
        ));
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
