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

mod builder;
pub mod scan;
pub mod shape;
pub mod value;

use std::cell::RefCell;

use triomphe::ThinArc;

pub use builder::RowBuilder;
pub use scan::{JsonKind, SyntaxError};
pub use value::Json;

/// Why bytes are not a row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RowError {
    #[error("is not valid JSON: {0}")]
    Syntax(#[from] SyntaxError),
    #[error("is not a JSON object (found {})", .0.described())]
    NotObject(JsonKind),
    /// Stored bytes (`Row::from_stored`) that are valid JSON but not the compact text sidejoin
    /// writes.
    #[error("is not compact JSON text: not a row sidejoin stored")]
    NotCompact,
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
        if scanned.kind != JsonKind::Object {
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

    /// The row of stored bytes (a state value, a changelog record): the compact object text
    /// sidejoin wrote, verified in full — the grammar and the compact form — because the bytes
    /// crossed a disk or a topic, and the accessors index the text by the spans found here.
    pub fn from_stored(bytes: &[u8]) -> Result<Row, RowError> {
        let scanned = scan::scan(bytes)?;
        if scanned.kind != JsonKind::Object {
            return Err(RowError::NotObject(scanned.kind));
        }
        let row = Row::from_scanned(bytes, &scanned.members, scanned.compact);
        // Text with escaped names is not `compact` to `scan` yet may be what sidejoin wrote:
        // whatever was rebuilt must be the stored bytes exactly.
        if !scanned.compact && row.json() != bytes {
            return Err(RowError::NotCompact);
        }
        Ok(row)
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

#[cfg(test)]
#[path = "row_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "bounds_tests.rs"]
mod bounds_tests;
