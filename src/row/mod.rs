//! The one row representation sidejoin uses from decode to output (SPEC §1: a row is a JSON
//! object, a missing column reads as `null`): the object's compact JSON text, kept as it arrived
//! when it was already compact, plus an index of where each top-level column's value is. One
//! shared allocation per row; cloning a `Row` is a reference-count increment.
//!
//! Values keep their text (`1.50` stays `1.50`); equality and keys read them on demand
//! (`value::Json`). Top-level names are stored in their shortest escaped form, so a name compares
//! by bytes; a name repeated in one object keeps its first position and its last value, as
//! serde_json does.
//!
//! Layout of the allocation: the JSON text, then per column `(value start, value end)` as
//! little-endian `u16` (or `u32` when the text is 64 KiB or longer), then the column count
//! (`u32`) and the index width (`u8`). A name's position follows from the values around it:
//! compact text puts it between `,"` (or `{"`) and `":`.

pub mod scan;
pub mod value;

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::FxHashSet;

pub use scan::{Kind, SyntaxError};
pub use value::Json;

/// Why bytes are not a row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    #[error("is not valid JSON: {0}")]
    Syntax(#[from] SyntaxError),
    #[error("is not a JSON object (found {})", .0.described())]
    NotObject(Kind),
}

#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Row(Arc<[u8]>);

const TRAILER: usize = 5;

thread_local! {
    /// Where `seal` lays out a row before its one allocation is made.
    static SEAL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Appends the shortest JSON escaping of `name` (without quotes).
pub fn escape_name(name: &str, out: &mut Vec<u8>) {
    if name.bytes().all(|c| c >= 0x20 && c != b'"' && c != b'\\') {
        out.extend_from_slice(name.as_bytes());
    } else {
        let quoted = serde_json::to_vec(name).expect("strings serialise");
        out.extend_from_slice(&quoted[1..quoted.len() - 1]);
    }
}

/// Seals `json` (compact object text) and its value spans into one allocation.
fn seal(json: &[u8], spans: &[(usize, usize)]) -> Row {
    let wide = json.len() > u16::MAX as usize;
    let width = if wide { 4 } else { 2 };
    SEAL.with(|b| {
        let bytes = &mut *b.borrow_mut();
        bytes.clear();
        bytes.extend_from_slice(json);
        for &(start, end) in spans {
            if wide {
                bytes.extend_from_slice(&(start as u32).to_le_bytes());
                bytes.extend_from_slice(&(end as u32).to_le_bytes());
            } else {
                bytes.extend_from_slice(&(start as u16).to_le_bytes());
                bytes.extend_from_slice(&(end as u16).to_le_bytes());
            }
        }
        bytes.extend_from_slice(&(spans.len() as u32).to_le_bytes());
        bytes.push(width as u8);
        Row(Arc::from(&bytes[..]))
    })
}

/// Whether two members of `input` share a name (names compared as written).
fn has_duplicates(input: &[u8], members: &[scan::Member]) -> bool {
    let name = |m: &scan::Member| &input[m.name.0..m.name.1];
    if members.len() <= 16 {
        members
            .iter()
            .enumerate()
            .any(|(i, a)| members[i + 1..].iter().any(|b| name(a) == name(b)))
    } else {
        let mut seen = FxHashSet::default();
        members.iter().any(|m| !seen.insert(name(m)))
    }
}

impl Row {
    /// Validates `input` as a JSON object and makes it a row.
    pub fn parse(input: &[u8]) -> Result<Row, RowError> {
        let scanned = scan::scan(input)?;
        if scanned.kind != Kind::Object {
            return Err(RowError::NotObject(scanned.kind));
        }
        Ok(Row::from_scanned(input, &scanned.members, scanned.compact))
    }

    /// The row of an object `input` that `scan` validated, given its members.
    pub fn from_scanned(input: &[u8], members: &[scan::Member], compact: bool) -> Row {
        if compact && !has_duplicates(input, members) {
            let spans: smallvec::SmallVec<[(usize, usize); 16]> =
                members.iter().map(|m| m.value).collect();
            return seal(input, &spans);
        }
        let mut b = RowBuilder::new();
        for m in members {
            let raw = &input[m.name.0..m.name.1];
            let value = &input[m.value.0..m.value.1];
            if m.name_escaped {
                let quoted = &input[m.name.0 - 1..m.name.1 + 1];
                let name: String = serde_json::from_slice(quoted).expect("validated by scan");
                let mut canonical = Vec::new();
                escape_name(&name, &mut canonical);
                b.set_raw(&canonical, value);
            } else {
                b.set_raw(raw, value);
            }
        }
        b.finish()
    }

    /// The row of object text inside JSON that `scan` already validated (a Debezium `after`).
    pub fn from_valid(text: &[u8]) -> Row {
        let (members, compact) = scan::members(text);
        Row::from_scanned(text, &members, compact)
    }

    /// The row of compact object text that sidejoin wrote itself (stored state).
    pub fn from_compact(json: &[u8]) -> Row {
        let mut spans: smallvec::SmallVec<[(usize, usize); 16]> = smallvec::SmallVec::new();
        let mut i = 1;
        while json.get(i) == Some(&b'"') {
            let name_end = scan::skip_string(json, i);
            let start = name_end + 1;
            let end = scan::skip_value(json, start);
            spans.push((start, end));
            i = end + 1;
        }
        seal(json, &spans)
    }

    /// The row of a serde_json object (tests, and formats that build trees).
    pub fn from_value(value: &serde_json::Value) -> Result<Row, RowError> {
        Row::parse(&serde_json::to_vec(value).expect("values serialise"))
    }

    /// The empty row `{}`.
    pub fn empty() -> Row {
        seal(b"{}", &[])
    }

    fn trailer(&self) -> (usize, usize, usize) {
        let b = &self.0;
        let n = b.len();
        let width = b[n - 1] as usize;
        let cols = u32::from_le_bytes(b[n - 5..n - 1].try_into().expect("4 bytes")) as usize;
        let json_len = n - TRAILER - cols * 2 * width;
        (cols, width, json_len)
    }

    /// The compact JSON text of the row.
    pub fn json(&self) -> &[u8] {
        let (_, _, len) = self.trailer();
        &self.0[..len]
    }

    /// Number of columns (present ones; `null` values included).
    pub fn width(&self) -> usize {
        self.trailer().0
    }

    fn span(&self, i: usize) -> (usize, usize) {
        let (_, width, len) = self.trailer();
        let at = len + i * 2 * width;
        let b = &self.0;
        if width == 2 {
            (
                u16::from_le_bytes([b[at], b[at + 1]]) as usize,
                u16::from_le_bytes([b[at + 2], b[at + 3]]) as usize,
            )
        } else {
            (
                u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes")) as usize,
                u32::from_le_bytes(b[at + 4..at + 8].try_into().expect("4 bytes")) as usize,
            )
        }
    }

    /// Column `i`: its escaped name (no quotes) and its value.
    pub fn column(&self, i: usize) -> (&[u8], Json<'_>) {
        let (start, end) = self.span(i);
        let name_start = if i == 0 { 2 } else { self.span(i - 1).1 + 2 };
        let b = &self.0;
        (
            &b[name_start..start - 2],
            Json::new_unchecked(&b[start..end]),
        )
    }

    /// The value of the column named `name` (escaped form), with its position.
    pub fn find(&self, name: &[u8], hint: usize) -> Option<(usize, Json<'_>)> {
        let cols = self.width();
        if hint < cols {
            let (n, v) = self.column(hint);
            if n == name {
                return Some((hint, v));
            }
        }
        (0..cols).find_map(|i| {
            let (n, v) = self.column(i);
            (n == name).then_some((i, v))
        })
    }

    /// The value of the column named `name` (escaped form), if present.
    pub fn get(&self, name: &[u8]) -> Option<Json<'_>> {
        self.find(name, 0).map(|(_, v)| v)
    }

    pub fn columns(&self) -> impl Iterator<Item = (&[u8], Json<'_>)> + '_ {
        (0..self.width()).map(|i| self.column(i))
    }

    /// The row as a serde_json object (tests and diagnostics).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_slice(self.json()).unwrap_or(serde_json::Value::Null)
    }

    /// Bytes held by the row's allocation (for memory accounting).
    pub fn allocated(&self) -> usize {
        self.0.len() + 16
    }
}

impl std::fmt::Debug for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.json()))
    }
}

/// Builds a row column by column; a name set twice keeps its first position and its last
/// value.
pub struct RowBuilder {
    columns: Vec<(Vec<u8>, Vec<u8>)>,
}

impl Default for RowBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RowBuilder {
    pub fn new() -> Self {
        RowBuilder {
            columns: Vec::new(),
        }
    }

    /// Starts from the columns of `row`.
    pub fn from_row(row: &Row) -> Self {
        RowBuilder {
            columns: row
                .columns()
                .map(|(n, v)| (n.to_vec(), v.as_bytes().to_vec()))
                .collect(),
        }
    }

    /// Sets column `name` (escaped form) to the valid JSON `value` (whitespace is removed).
    pub fn set_raw(&mut self, name: &[u8], value: &[u8]) {
        let mut compact = Vec::with_capacity(value.len());
        scan::compact_into(value, &mut compact);
        match self.columns.iter_mut().find(|(n, _)| n == name) {
            Some(c) => c.1 = compact,
            None => self.columns.push((name.to_vec(), compact)),
        }
    }

    /// Sets column `name` unless the row has it already.
    pub fn set_if_absent(&mut self, name: &[u8], value: &[u8]) {
        if !self.columns.iter().any(|(n, _)| n == name) {
            self.set_raw(name, value);
        }
    }

    pub fn finish(self) -> Row {
        let size: usize = self
            .columns
            .iter()
            .map(|(n, v)| n.len() + v.len() + 4)
            .sum();
        let mut json = Vec::with_capacity(size + 2);
        let mut spans: smallvec::SmallVec<[(usize, usize); 16]> = smallvec::SmallVec::new();
        json.push(b'{');
        for (i, (name, value)) in self.columns.iter().enumerate() {
            if i > 0 {
                json.push(b',');
            }
            json.push(b'"');
            json.extend_from_slice(name);
            json.extend_from_slice(b"\":");
            let start = json.len();
            json.extend_from_slice(value);
            spans.push((start, json.len()));
        }
        json.push(b'}');
        seal(&json, &spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(r: &Row) -> Vec<String> {
        r.columns()
            .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap())
            .collect()
    }

    #[test]
    fn compact_objects_are_kept_as_they_are() {
        let text = br#"{"id":1.50,"name":"x y","tags":[1, 2]}"#;
        let r = Row::parse(text).unwrap();
        // Not compact (a space inside the array): rewritten without it.
        assert_eq!(r.json(), br#"{"id":1.50,"name":"x y","tags":[1,2]}"#);
        let r2 = Row::parse(r.json()).unwrap();
        assert_eq!(r2.json(), r.json());
        assert_eq!(r.get(b"id").unwrap().as_bytes(), b"1.50");
        assert_eq!(r.get(b"name").unwrap().as_str().unwrap(), "x y");
        assert_eq!(r.get(b"tags").unwrap().as_bytes(), b"[1,2]");
        assert!(r.get(b"missing").is_none());
        assert_eq!(names(&r), ["id", "name", "tags"]);
        assert_eq!(Row::from_compact(r.json()), r);
    }

    #[test]
    fn whitespace_escapes_and_duplicates_are_normalised() {
        let r = Row::parse(b" { \"a\" : 1 , \"\\u0062\" : \"\\u0063\", \"a\": 2 } ").unwrap();
        assert_eq!(r.json(), br#"{"a":2,"b":"\u0063"}"#);
        assert_eq!(r.get(b"b").unwrap().as_str().unwrap(), "c");
        let r = Row::parse(br#"{"q\"uote":1}"#).unwrap();
        assert_eq!(names(&r), ["q\\\"uote"]);
    }

    #[test]
    fn non_objects_and_bad_json_are_errors() {
        assert_eq!(
            Row::parse(b"\"x\"").unwrap_err().to_string(),
            "is not a JSON object (found a string)"
        );
        assert!(Row::parse(b"{\"a\":}")
            .unwrap_err()
            .to_string()
            .starts_with("is not valid JSON: expected value"));
    }

    #[test]
    fn large_rows_use_wide_offsets() {
        let big = "x".repeat(70_000);
        let r = Row::from_value(&json!({"a": big, "b": 2})).unwrap();
        assert_eq!(r.get(b"b").unwrap().as_bytes(), b"2");
        assert_eq!(r.get(b"a").unwrap().as_bytes().len(), 70_002);
        assert_eq!(Row::from_compact(r.json()), r);
    }

    #[test]
    fn builder_sets_and_replaces_columns() {
        let base = Row::parse(br#"{"v":1}"#).unwrap();
        let mut b = RowBuilder::from_row(&base);
        b.set_if_absent(b"id", b"7");
        b.set_if_absent(b"v", b"9");
        b.set_raw(b"w", b"[1, 2]");
        let r = b.finish();
        assert_eq!(r.json(), br#"{"v":1,"id":7,"w":[1,2]}"#);
        assert_eq!(Row::empty().json(), b"{}");
        assert_eq!(Row::empty().width(), 0);
    }
}
