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
//! Layout: a thin reference-counted allocation (one pointer wide) whose header is the row's
//! shape number (`shape`: its column names, interned); its bytes are the JSON text, then per
//! column `(value start, value end)` as little-endian integers of the index width (1 byte for
//! text under 256 bytes, 2 under 64 KiB, else 4), then the column count (`u16`; `u32` with
//! 4-byte offsets) and the width. A name's position follows from the values around it: compact
//! text puts it between `,"` (or `{"`) and `":`. Small rows thus cost their text plus about
//! 2 bytes per column and 27 bytes in all.

pub mod scan;
pub mod shape;
pub mod value;

use std::cell::RefCell;

use triomphe::ThinArc;

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
pub struct Row(ThinArc<u32, u8>);

thread_local! {
    /// Where `seal` lays a row out before its one allocation is made.
    static LAYOUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// The index width (bytes per offset) for JSON text of `len` bytes.
fn width_for(len: usize) -> usize {
    if len < 256 {
        1
    } else if len <= u16::MAX as usize {
        2
    } else {
        4
    }
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

/// The column names of compact object text `json` with value spans `spans`.
fn names<'a>(json: &'a [u8], spans: &'a [(usize, usize)]) -> impl Iterator<Item = &'a [u8]> + 'a {
    spans.iter().enumerate().map(move |(i, &(start, _))| {
        let name_start = if i == 0 { 2 } else { spans[i - 1].1 + 2 };
        &json[name_start..start - 2]
    })
}

/// Seals `json` (compact object text without repeated names), its value spans and its shape
/// number into one allocation.
fn seal(json: &[u8], spans: &[(usize, usize)], shape: u32) -> Row {
    let width = width_for(json.len());
    LAYOUT.with(|l| {
        let b = &mut *l.borrow_mut();
        b.clear();
        b.extend_from_slice(json);
        for &(start, end) in spans {
            for offset in [start, end] {
                b.extend_from_slice(&(offset as u32).to_le_bytes()[..width]);
            }
        }
        if width == 4 {
            b.extend_from_slice(&(spans.len() as u32).to_le_bytes());
        } else {
            // Fewer than 64 KiB of text cannot hold 65,536 columns.
            b.extend_from_slice(&(spans.len() as u16).to_le_bytes());
        }
        b.push(width as u8);
        Row(ThinArc::from_header_and_slice(shape, b))
    })
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
        if compact {
            let spans: smallvec::SmallVec<[(usize, usize); 16]> =
                members.iter().map(|m| m.value).collect();
            let shape = shape::intern(names(input, &spans));
            if !shape.repeats {
                return seal(input, &spans, shape.id);
            }
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
        seal(json, &spans, shape::intern(names(json, &spans)).id)
    }

    /// The row of a serde_json object (tests, and formats that build trees).
    pub fn from_value(value: &serde_json::Value) -> Result<Row, RowError> {
        Row::parse(&serde_json::to_vec(value).expect("values serialise"))
    }

    /// The empty row `{}`.
    pub fn empty() -> Row {
        seal(b"{}", &[], shape::intern(std::iter::empty()).id)
    }

    /// The row's layout, decoded once per operation.
    #[inline]
    fn index(&self) -> Index<'_> {
        let b: &[u8] = &self.0.slice;
        let n = b.len();
        let width = b[n - 1] as usize;
        let (cols, trailer) = if width == 4 {
            (
                u32::from_le_bytes([b[n - 5], b[n - 4], b[n - 3], b[n - 2]]) as usize,
                5,
            )
        } else {
            (u16::from_le_bytes([b[n - 3], b[n - 2]]) as usize, 3)
        };
        let json_len = n - trailer - cols * 2 * width;
        Index {
            b,
            json_len,
            cols,
            offset_bytes: width,
        }
    }

    /// The compact JSON text of the row.
    pub fn json(&self) -> &[u8] {
        let ix = self.index();
        &ix.b[..ix.json_len]
    }

    /// Number of columns (present ones; `null` values included).
    pub fn width(&self) -> usize {
        self.index().cols
    }

    /// The row's shape number: rows with equal numbers other than `shape::UNKNOWN` have exactly
    /// the same column names in the same order.
    #[inline]
    pub fn shape(&self) -> u32 {
        self.0.header.header
    }

    /// Column `i`: its escaped name (no quotes) and its value.
    pub fn column(&self, i: usize) -> (&[u8], Json<'_>) {
        self.index().column(i)
    }

    /// The value of column `i`.
    #[inline]
    pub fn value_at(&self, i: usize) -> Json<'_> {
        let ix = self.index();
        let (start, end) = ix.span(i);
        Json::new_unchecked(&ix.b[start..end])
    }

    /// Whether the row's column names are `names`, in order.
    pub fn has_names<N: AsRef<[u8]>>(&self, names: &[N]) -> bool {
        let ix = self.index();
        // Names are short: a plain loop beats a `memcmp` call per name.
        ix.cols == names.len()
            && ix.columns().zip(names).all(|((n, _), m)| {
                let m = m.as_ref();
                n.len() == m.len() && n.iter().zip(m).all(|(a, b)| a == b)
            })
    }

    /// The text of columns `from..=to` as the row holds it, names included: `"a":1,"b":2`.
    pub fn run(&self, from: usize, to: usize) -> &[u8] {
        let ix = self.index();
        let start = if from == 0 {
            1
        } else {
            ix.span(from - 1).1 + 1
        };
        &ix.b[start..ix.span(to).1]
    }

    /// Where column `i`'s name (inside the quotes) and value are in `json()`.
    pub fn column_ranges(&self, i: usize) -> (std::ops::Range<usize>, std::ops::Range<usize>) {
        let ix = self.index();
        let (start, end) = ix.span(i);
        let name_start = if i == 0 { 2 } else { ix.span(i - 1).1 + 2 };
        (name_start..start - 2, start..end)
    }

    /// The value of the column named `name` (escaped form), with its position; `hint` is
    /// where to look first.
    #[inline]
    pub fn find(&self, name: &[u8], hint: usize) -> Option<(usize, Json<'_>)> {
        let ix = self.index();
        if hint < ix.cols {
            let (n, v) = ix.column(hint);
            if n == name {
                return Some((hint, v));
            }
        }
        ix.columns()
            .enumerate()
            .find(|(_, (n, _))| *n == name)
            .map(|(i, (_, v))| (i, v))
    }

    /// The value of the column named `name` (escaped form), if present.
    pub fn get(&self, name: &[u8]) -> Option<Json<'_>> {
        self.find(name, 0).map(|(_, v)| v)
    }

    pub fn columns(&self) -> impl Iterator<Item = (&[u8], Json<'_>)> + '_ {
        self.index().columns()
    }

    /// The row as a serde_json object (tests and diagnostics).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_slice(self.json()).unwrap_or(serde_json::Value::Null)
    }

    /// Bytes held by the row's allocation (for memory accounting).
    pub fn allocated(&self) -> usize {
        self.0.slice.len() + 24
    }
}

/// A row's bytes with its trailer read: where the index is and how wide its entries are.
#[derive(Clone, Copy)]
struct Index<'a> {
    b: &'a [u8],
    json_len: usize,
    cols: usize,
    offset_bytes: usize,
}

impl<'a> Index<'a> {
    #[inline]
    fn span(&self, i: usize) -> (usize, usize) {
        let b = self.b;
        match self.offset_bytes {
            1 => {
                let at = self.json_len + i * 2;
                (b[at] as usize, b[at + 1] as usize)
            }
            2 => {
                let at = self.json_len + i * 4;
                (
                    u16::from_le_bytes([b[at], b[at + 1]]) as usize,
                    u16::from_le_bytes([b[at + 2], b[at + 3]]) as usize,
                )
            }
            _ => {
                let at = self.json_len + i * 8;
                (
                    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]) as usize,
                    u32::from_le_bytes([b[at + 4], b[at + 5], b[at + 6], b[at + 7]]) as usize,
                )
            }
        }
    }

    #[inline]
    fn column(&self, i: usize) -> (&'a [u8], Json<'a>) {
        let (start, end) = self.span(i);
        let name_start = if i == 0 { 2 } else { self.span(i - 1).1 + 2 };
        (
            &self.b[name_start..start - 2],
            Json::new_unchecked(&self.b[start..end]),
        )
    }

    /// Every column in order, each span read once.
    fn columns(self) -> impl Iterator<Item = (&'a [u8], Json<'a>)> {
        let mut name_start = 2;
        (0..self.cols).map(move |i| {
            let (start, end) = self.span(i);
            let name = &self.b[name_start..start - 2];
            name_start = end + 2;
            (name, Json::new_unchecked(&self.b[start..end]))
        })
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
        seal(&json, &spans, shape::intern(names(&json, &spans)).id)
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
