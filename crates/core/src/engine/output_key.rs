//! The output key (SPEC §5): the key columns' values as compact JSON, written from the same
//! input rows (or projected output columns) as the output row, numbers normalised so that equal
//! keys give equal bytes.

use std::ops::Range;

use super::column::Column;
use super::project::{escaped, pick, OutCol, Projection};
use crate::change::Side;
use crate::config::{KeyColumn, KeySource};
use crate::row::{escape_name, Json, JsonKind, Row};

#[derive(Debug, Clone)]
enum KeyPart {
    /// A column of an input row: keys derived through `l.*`/`r.*`, and output columns of fixed
    /// SELECT lists (which hold exactly an input column's value).
    Input(Side, Column),
    /// The output column of that (escaped) name, found per row (star lists).
    Named(Vec<u8>),
}

/// The output key (`SIDEJOIN_OUTPUT_KEY`): compact JSON of the key columns in order, e.g.
/// `{"user_id":"1"}`, numbers written without an integral fraction so `1` and `1.0` give the
/// same bytes.
#[derive(Debug, Clone)]
pub struct OutputKey {
    /// `"name":` and where the value comes from.
    parts: Vec<(Vec<u8>, KeyPart)>,
}

impl OutputKey {
    pub fn new(key: &[KeyColumn], projection: &Projection) -> Self {
        let parts = key
            .iter()
            .map(|k| {
                let mut prefix = vec![b'"'];
                escape_name(&k.name, &mut prefix);
                prefix.extend_from_slice(b"\":");
                let part = match &k.source {
                    KeySource::Input(side, c) => KeyPart::Input(*side, Column::new(c.as_str())),
                    KeySource::Output => match projection.select().source_of(&k.name) {
                        Some((side, c)) => KeyPart::Input(side, Column::new(c)),
                        None => KeyPart::Named(escaped(&k.name)),
                    },
                };
                (prefix, part)
            })
            .collect();
        OutputKey { parts }
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Whether `write` needs the projected columns (a key named after output columns of a star
    /// list).
    pub fn needs_columns(&self) -> bool {
        self.parts
            .iter()
            .any(|(_, p)| matches!(p, KeyPart::Named(_)))
    }

    /// Appends the key of the output row just projected into `out` (whose columns are `cols`),
    /// built from the input rows `rows` (left, right, further dimensions).
    pub fn write(&self, out: &mut Vec<u8>, cols: &[OutCol], rows: &[Option<&Row>]) {
        out.push(b'{');
        for (i, (prefix, part)) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(prefix);
            let value: Option<Range<usize>> = match part {
                KeyPart::Input(side, c) => match pick(*side, rows).and_then(|r| c.get(r)) {
                    Some(v) => {
                        write_key_value(v, out);
                        continue;
                    }
                    None => None,
                },
                KeyPart::Named(n) => cols
                    .iter()
                    .find(|c| &out[c.name.clone()] == n.as_slice())
                    .map(|c| c.value.clone()),
            };
            match value {
                Some(range) if is_key_canonical(&out[range.clone()]) => {
                    out.extend_from_within(range)
                }
                Some(range) => {
                    let v = out[range].to_vec();
                    write_key_value(Json::new_unchecked(&v), out);
                }
                None => out.extend_from_slice(b"null"),
            }
        }
        out.push(b'}');
    }
}

/// Whether `write_key_value` would write the value text as it is: no fraction or exponent, no
/// escapes, no nested values.
fn is_key_canonical(text: &[u8]) -> bool {
    match text.first() {
        Some(b'"') => !text.contains(&b'\\'),
        Some(b'-' | b'0'..=b'9') => {
            !text.starts_with(b"-0") && !text.iter().any(|c| matches!(c, b'.' | b'e' | b'E'))
        }
        Some(b'[' | b'{') => false,
        _ => true,
    }
}

/// Writes a key value: integral numbers without a fraction (`1.0` as `1`), strings without
/// needless escapes, so equal values give equal bytes.
pub fn write_key_value(v: Json<'_>, out: &mut Vec<u8>) {
    let text = v.as_bytes();
    if is_key_canonical(text) {
        out.extend_from_slice(text);
        return;
    }
    let written = match v.kind() {
        JsonKind::Number => {
            use crate::row::value::Numeric;
            match v.numeric() {
                Some(Numeric::Int(i)) => serde_json::to_writer(&mut *out, &i),
                Some(Numeric::Uint(u)) => serde_json::to_writer(&mut *out, &u),
                Some(Numeric::Float(f)) => serde_json::to_writer(&mut *out, &f),
                None => {
                    out.extend_from_slice(text);
                    Ok(())
                }
            }
        }
        JsonKind::String if text.contains(&b'\\') => {
            serde_json::to_writer(&mut *out, v.as_str().unwrap_or_default().as_ref())
        }
        JsonKind::Array | JsonKind::Object => {
            serde_json::to_writer(&mut *out, &normalize_numbers(&v.to_value()))
        }
        _ => {
            out.extend_from_slice(text);
            Ok(())
        }
    };
    // Writing JSON values into a Vec cannot fail.
    debug_assert!(written.is_ok());
}

/// Integral numbers without a fraction, recursively (nested key values).
fn normalize_numbers(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                Value::Number(serde_json::Number::from(f as i64))
            } else {
                v.clone()
            }
        }
        Value::Array(a) => Value::Array(a.iter().map(normalize_numbers).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), normalize_numbers(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}
