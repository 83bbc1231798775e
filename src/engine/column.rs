//! Column lookups without hashing. Rows of one schema keep their columns in one order, so a
//! column remembers where it was found last and checks that position first; small rows are
//! otherwise scanned linearly (cheaper than hashing the name), large ones hashed.
//!
//! A `Column` is not `Sync` (its hint is a `Cell`): each pipeline owns its plan.

use std::cell::Cell;

use serde_json::Value;

use crate::changelog::Row;

/// Rows up to this many columns are scanned instead of hashed on a missed hint.
const SCAN_LIMIT: usize = 16;

#[derive(Debug)]
pub struct Column {
    name: String,
    hint: Cell<usize>,
}

impl Clone for Column {
    fn clone(&self) -> Self {
        Column {
            name: self.name.clone(),
            hint: Cell::new(self.hint.get()),
        }
    }
}

impl Eq for Column {}

impl PartialEq for Column {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Column {
    pub fn new(name: impl Into<String>) -> Self {
        Column {
            name: name.into(),
            hint: Cell::new(0),
        }
    }

    pub fn list(names: &[String]) -> Vec<Column> {
        names.iter().map(Column::new).collect()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The value of this column in `row`, if present.
    #[inline]
    pub fn get<'r>(&self, row: &'r Row) -> Option<&'r Value> {
        let hint = self.hint.get();
        if let Some((k, v)) = row.iter().nth(hint) {
            if *k == self.name {
                return Some(v);
            }
        }
        if row.len() > SCAN_LIMIT {
            return row.get(&self.name);
        }
        let (i, (_, v)) = row
            .iter()
            .enumerate()
            .find(|(_, (k, _))| **k == self.name)?;
        self.hint.set(i);
        Some(v)
    }

    /// The value of this column in `row`, `null` when missing.
    #[inline]
    pub fn value<'r>(&self, row: &'r Row) -> &'r Value {
        self.get(row).unwrap_or(&Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_columns_in_any_order() {
        let c = Column::new("b");
        let r1 = json!({"a": 1, "b": 2}).as_object().unwrap().clone();
        let r2 = json!({"b": 3, "a": 1}).as_object().unwrap().clone();
        let r3 = json!({"a": 1}).as_object().unwrap().clone();
        assert_eq!(c.get(&r1), Some(&json!(2)));
        assert_eq!(c.get(&r2), Some(&json!(3)));
        assert_eq!(c.get(&r1), Some(&json!(2)));
        assert_eq!(c.get(&r3), None);
        assert_eq!(c.value(&r3), &Value::Null);
        let wide: Row = (0..40).map(|i| (format!("c{i}"), json!(i))).collect();
        assert_eq!(Column::new("c33").get(&wide), Some(&json!(33)));
    }
}
