//! Building a row column by column (decoders that assemble a row: CSV, Debezium, routing).

use super::{names, scan, seal, shape, Row};

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
