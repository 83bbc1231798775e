//! Building a row column by column (decoders that assemble a row: CSV, Debezium, routing).

use std::ops::Range;

use super::{names, scan, seal, shape, Row};

/// Builds a row column by column; a name set twice keeps its first position and its last
/// value.
///
/// Setting a column never looks for its name (a record may have 100,000 columns): every call
/// appends to one buffer, and `finish` settles repeated names once, by sorting, in O(n log n).
#[derive(Default)]
pub struct RowBuilder {
    /// The names and compact values of every call, back to back.
    buf: Vec<u8>,
    columns: Vec<Column>,
}

/// One `set_raw` (`strong`) or `set_if_absent` call: where its name and value are in `buf`.
struct Column {
    name: Range<usize>,
    value: Range<usize>,
    strong: bool,
}

impl RowBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts from the columns of `row`.
    pub fn from_row(row: &Row) -> Self {
        let mut b = Self::new();
        for (n, v) in row.columns() {
            b.push(n, v.as_bytes(), true);
        }
        b
    }

    /// Sets column `name` (escaped form) to the valid JSON `value` (whitespace is removed).
    pub fn set_raw(&mut self, name: &[u8], value: &[u8]) {
        self.push(name, value, true);
    }

    /// Sets column `name` unless the row has it already.
    pub fn set_if_absent(&mut self, name: &[u8], value: &[u8]) {
        self.push(name, value, false);
    }

    fn push(&mut self, name: &[u8], value: &[u8], strong: bool) {
        let at = self.buf.len();
        self.buf.extend_from_slice(name);
        let mid = self.buf.len();
        scan::compact_into(value, &mut self.buf);
        self.columns.push(Column {
            name: at..mid,
            value: mid..self.buf.len(),
            strong,
        });
    }

    /// For each column in order, whether it stays and where its value comes from: each name
    /// once, at its first position, with the value of its last `set_raw` (or of its first
    /// `set_if_absent`, when no `set_raw` set it) — what setting the columns one by one, each
    /// looking for its name, would have left. `None`: a later repeat, dropped.
    fn settled(&self) -> Vec<Option<usize>> {
        let name = |i: usize| &self.buf[self.columns[i].name.clone()];
        let mut order: Vec<usize> = (0..self.columns.len()).collect();
        // Stable: equal names stay in call order.
        order.sort_by(|&a, &b| name(a).cmp(name(b)));
        let mut source = vec![None; self.columns.len()];
        for same in order.chunk_by(|&a, &b| name(a) == name(b)) {
            let last_strong = same.iter().rev().find(|&&i| self.columns[i].strong);
            source[same[0]] = Some(*last_strong.unwrap_or(&same[0]));
        }
        source
    }

    pub fn finish(self) -> Row {
        let mut json = Vec::with_capacity(self.buf.len() + 4 * self.columns.len() + 2);
        let mut spans: smallvec::SmallVec<[(usize, usize); 16]> = smallvec::SmallVec::new();
        json.push(b'{');
        for (i, source) in self.settled().into_iter().enumerate() {
            let Some(from) = source else { continue };
            if !spans.is_empty() {
                json.push(b',');
            }
            json.push(b'"');
            json.extend_from_slice(&self.buf[self.columns[i].name.clone()]);
            json.extend_from_slice(b"\":");
            let start = json.len();
            json.extend_from_slice(&self.buf[self.columns[from].value.clone()]);
            spans.push((start, json.len()));
        }
        json.push(b'}');
        seal(&json, &spans, shape::intern(names(&json, &spans)).id)
    }
}
