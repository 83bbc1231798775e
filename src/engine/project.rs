//! SELECT projection (SPEC §3) as byte concatenation: the output row for a left and a right row
//! (either may be missing: null padding) is written as compact JSON straight from the input rows'
//! stored text, and the output key (SPEC §5) from the same values. No tree is built.
//!
//! Output names follow `config::select`: fixed lists have their names (and the `"name":`
//! fragments) decided once; with a `*` item they are decided per output row, a column taking the
//! first free suffix when its name is already taken in that row.

use std::ops::Range;

use super::column::Column;
use crate::changelog::Side;
use crate::config::select::{Select, SelectItem};
use crate::config::{KeyColumn, KeySource};
use crate::row::{escape_name, Json, Kind, Row};

/// Where one column of a projected output row is, in the output buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutCol {
    pub name: Range<usize>,
    pub value: Range<usize>,
}

#[derive(Debug, Clone)]
struct Fixed {
    /// `"name":`
    prefix: Vec<u8>,
    side: Side,
    column: Column,
}

#[derive(Debug, Clone)]
enum Item {
    Column {
        side: Side,
        column: Column,
        /// The escaped `AS` name.
        alias: Option<Vec<u8>>,
    },
    All(Side),
}

/// A compiled SELECT list.
#[derive(Debug, Clone)]
pub struct Projection {
    select: Select,
    fixed: Option<Vec<Fixed>>,
    items: Vec<Item>,
    /// Escaped `AS` names, which other columns must not take.
    reserved: Vec<Vec<u8>>,
}

fn escaped(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    escape_name(name, &mut out);
    out
}

fn pick<'r>(side: Side, left: Option<&'r Row>, right: Option<&'r Row>) -> Option<&'r Row> {
    match side {
        Side::Left => left,
        Side::Right => right,
    }
}

impl Projection {
    pub fn new(items: Vec<SelectItem>) -> Self {
        let select = Select::new(items);
        let fixed = select.fixed().map(|names| {
            names
                .iter()
                .map(|(name, side, column)| {
                    let mut prefix = vec![b'"'];
                    escape_name(name, &mut prefix);
                    prefix.extend_from_slice(b"\":");
                    Fixed {
                        prefix,
                        side: *side,
                        column: Column::new(column.as_str()),
                    }
                })
                .collect()
        });
        let items = select
            .items()
            .iter()
            .map(|i| match i {
                SelectItem::Column {
                    side,
                    column,
                    alias,
                } => Item::Column {
                    side: *side,
                    column: Column::new(column.as_str()),
                    alias: alias.as_deref().map(escaped),
                },
                SelectItem::All(side) => Item::All(*side),
            })
            .collect();
        let reserved = select.reserved().iter().map(|r| escaped(r)).collect();
        Projection {
            select,
            fixed,
            items,
            reserved,
        }
    }

    pub fn select(&self) -> &Select {
        &self.select
    }

    /// Appends the output row for a left and a right row (a missing side is null-padded) to
    /// `out` as compact JSON, and where each of its columns is to `cols`.
    pub fn project_into(
        &self,
        left: Option<&Row>,
        right: Option<&Row>,
        out: &mut Vec<u8>,
        cols: &mut Vec<OutCol>,
    ) {
        cols.clear();
        out.push(b'{');
        if let Some(fixed) = &self.fixed {
            for (i, f) in fixed.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                let name = out.len() + 1..out.len() + f.prefix.len() - 2;
                out.extend_from_slice(&f.prefix);
                let start = out.len();
                match pick(f.side, left, right).and_then(|r| f.column.get(r)) {
                    Some(v) => out.extend_from_slice(v.as_bytes()),
                    None => out.extend_from_slice(b"null"),
                }
                cols.push(OutCol {
                    name,
                    value: start..out.len(),
                });
            }
        } else {
            for item in &self.items {
                match item {
                    Item::Column {
                        side,
                        column,
                        alias,
                    } => {
                        let value = pick(*side, left, right)
                            .and_then(|r| column.get(r))
                            .map_or(&b"null"[..], |v| v.as_bytes());
                        match alias {
                            Some(a) => push_column(out, cols, a, value),
                            None => self.push_free(out, cols, column.escaped(), value),
                        }
                    }
                    Item::All(side) => {
                        for (name, value) in
                            pick(*side, left, right).into_iter().flat_map(Row::columns)
                        {
                            self.push_free(out, cols, name, value.as_bytes());
                        }
                    }
                }
            }
        }
        out.push(b'}');
    }

    /// Writes a column under the first free name among `base`, `base0`, `base1`, …
    fn push_free(&self, out: &mut Vec<u8>, cols: &mut Vec<OutCol>, base: &[u8], value: &[u8]) {
        let taken = |out: &Vec<u8>, cols: &Vec<OutCol>, n: &[u8]| {
            self.reserved.iter().any(|r| r == n) || cols.iter().any(|c| &out[c.name.clone()] == n)
        };
        if !taken(out, cols, base) {
            return push_column(out, cols, base, value);
        }
        let mut name = base.to_vec();
        for i in 0u64.. {
            name.truncate(base.len());
            name.extend_from_slice(i.to_string().as_bytes());
            if !taken(out, cols, &name) {
                return push_column(out, cols, &name, value);
            }
        }
    }

    /// The output row as a `Row` (tests and diagnostics; the hot path uses `project_into`).
    pub fn project(&self, left: Option<&Row>, right: Option<&Row>) -> Row {
        let mut out = Vec::new();
        self.project_into(left, right, &mut out, &mut Vec::new());
        Row::from_compact(&out)
    }
}

fn push_column(out: &mut Vec<u8>, cols: &mut Vec<OutCol>, name: &[u8], value: &[u8]) {
    if !cols.is_empty() {
        out.push(b',');
    }
    out.push(b'"');
    let start = out.len();
    out.extend_from_slice(name);
    let name = start..out.len();
    out.extend_from_slice(b"\":");
    let start = out.len();
    out.extend_from_slice(value);
    cols.push(OutCol {
        name,
        value: start..out.len(),
    });
}

#[derive(Debug, Clone)]
enum KeyPart {
    /// A column of an input row (keys derived through `l.*`/`r.*`).
    Input(Side, Column),
    /// The `i`-th column of every output row (fixed SELECT lists).
    Position(usize),
    /// The output column of that (escaped) name, found per row.
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
                    KeySource::Output => match projection.select.fixed_columns() {
                        Some(names) => match names.iter().position(|n| *n == k.name) {
                            Some(i) => KeyPart::Position(i),
                            None => KeyPart::Named(escaped(&k.name)),
                        },
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

    /// Appends the key of the output row just projected into `out` (whose columns are `cols`),
    /// built from `left`/`right`.
    pub fn write(
        &self,
        out: &mut Vec<u8>,
        cols: &[OutCol],
        left: Option<&Row>,
        right: Option<&Row>,
    ) {
        out.push(b'{');
        for (i, (prefix, part)) in self.parts.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(prefix);
            let value: Option<Range<usize>> = match part {
                KeyPart::Input(side, c) => match pick(*side, left, right).and_then(|r| c.get(r)) {
                    Some(v) => {
                        write_key_value(v, out);
                        continue;
                    }
                    None => None,
                },
                KeyPart::Position(i) => cols.get(*i).map(|c| c.value.clone()),
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
        Kind::Number => {
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
        Kind::String if text.contains(&b'\\') => {
            serde_json::to_writer(&mut *out, v.as_str().unwrap_or_default().as_ref())
        }
        Kind::Array | Kind::Object => {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn row(v: Value) -> Row {
        Row::from_value(&v).unwrap()
    }

    fn all() -> Projection {
        Projection::new(vec![
            SelectItem::All(Side::Left),
            SelectItem::All(Side::Right),
        ])
    }

    #[test]
    fn default_select_suffixes_per_row() {
        let l = row(json!({"id": 1, "id0": 2}));
        let r = row(json!({"id": 1, "w": 3}));
        assert_eq!(
            all().project(Some(&l), Some(&r)).to_value(),
            json!({"id": 1, "id0": 2, "id1": 1, "w": 3})
        );
        // A right-padded row keeps the right names.
        assert_eq!(
            all().project(None, Some(&r)).to_value(),
            json!({"id": 1, "w": 3})
        );
        assert_eq!(
            all().project(Some(&l), None).to_value(),
            json!({"id": 1, "id0": 2})
        );
    }

    #[test]
    fn fixed_names_and_padding() {
        let p = Projection::new(vec![
            SelectItem::Column {
                side: Side::Left,
                column: "id".into(),
                alias: None,
            },
            SelectItem::Column {
                side: Side::Right,
                column: "id".into(),
                alias: None,
            },
            SelectItem::Column {
                side: Side::Right,
                column: "x".into(),
                alias: Some("id0".into()),
            },
        ]);
        let out = p.project(Some(&Row::parse(br#"{"id":7.50}"#).unwrap()), None);
        assert_eq!(out.json(), br#"{"id":7.50,"id1":null,"id0":null}"#);
    }

    #[test]
    fn keys_are_compact_json_in_key_order() {
        let p = Projection::new(vec![SelectItem::All(Side::Left)]);
        let l = row(json!({"b": 2.0, "a": "x", "s": "\u{0061}"}));
        let key = OutputKey::new(
            &[
                KeyColumn {
                    name: "a".into(),
                    source: KeySource::Output,
                },
                KeyColumn {
                    name: "b".into(),
                    source: KeySource::Output,
                },
                KeyColumn {
                    name: "c".into(),
                    source: KeySource::Output,
                },
                KeyColumn {
                    name: "s".into(),
                    source: KeySource::Input(Side::Left, "s".into()),
                },
            ],
            &p,
        );
        let (mut out, mut cols) = (Vec::new(), Vec::new());
        p.project_into(Some(&l), None, &mut out, &mut cols);
        let start = out.len();
        key.write(&mut out, &cols, Some(&l), None);
        assert_eq!(&out[start..], br#"{"a":"x","b":2,"c":null,"s":"a"}"#);
        let mut v = Vec::new();
        write_key_value(Json::new_unchecked(br#"{"a":1.0,"b":[2.0,2.5]}"#), &mut v);
        assert_eq!(v, br#"{"a":1,"b":[2,2.5]}"#);
        v.clear();
        write_key_value(Json::new_unchecked(br#""\u0061""#), &mut v);
        assert_eq!(v, br#""a""#);
    }
}
