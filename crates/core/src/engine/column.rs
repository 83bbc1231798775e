//! Column lookups without hashing. Rows of one schema keep their columns in one order, so a
//! column remembers where it was found last and checks that position first; otherwise the row's
//! column index is scanned, comparing escaped names as bytes.
//!
//! A `Column` is not `Sync` (its hint is a `Cell`): each pipeline owns its plan.

use std::cell::Cell;

use crate::row::{escape_name, value::NULL, Json, Row};

#[derive(Debug)]
pub struct Column {
    name: String,
    /// The name as JSON text writes it (without quotes): what rows store.
    escaped: Box<[u8]>,
    hint: Cell<usize>,
}

impl Clone for Column {
    fn clone(&self) -> Self {
        Column {
            name: self.name.clone(),
            escaped: self.escaped.clone(),
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
        let name = name.into();
        let mut escaped = Vec::with_capacity(name.len());
        escape_name(&name, &mut escaped);
        Column {
            name,
            escaped: escaped.into_boxed_slice(),
            hint: Cell::new(0),
        }
    }

    pub fn list(names: &[String]) -> Vec<Column> {
        names.iter().map(Column::new).collect()
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name as rows store it (JSON-escaped, without quotes).
    pub fn escaped(&self) -> &[u8] {
        &self.escaped
    }

    /// The value of this column in `row`, if present.
    #[inline]
    pub fn get<'r>(&self, row: &'r Row) -> Option<Json<'r>> {
        let (i, v) = row.find(&self.escaped, self.hint.get())?;
        self.hint.set(i);
        Some(v)
    }

    /// The value of this column in `row`, `null` when missing.
    #[inline]
    pub fn value<'r>(&self, row: &'r Row) -> Json<'r> {
        self.get(row).unwrap_or(NULL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: serde_json::Value) -> Row {
        Row::from_value(&v).unwrap()
    }

    #[test]
    fn finds_columns_in_any_order() {
        let c = Column::new("b");
        let r1 = row(json!({"a": 1, "b": 2}));
        let r2 = row(json!({"b": 3, "a": 1}));
        let r3 = row(json!({"a": 1}));
        assert_eq!(c.get(&r1).unwrap().as_bytes(), b"2");
        assert_eq!(c.get(&r2).unwrap().as_bytes(), b"3");
        assert_eq!(c.get(&r1).unwrap().as_bytes(), b"2");
        assert!(c.get(&r3).is_none());
        assert!(c.value(&r3).is_null());
        let wide: serde_json::Map<String, serde_json::Value> =
            (0..40).map(|i| (format!("c{i}"), json!(i))).collect();
        let wide = row(serde_json::Value::Object(wide));
        assert_eq!(Column::new("c33").get(&wide).unwrap().as_bytes(), b"33");
        let quoted = row(json!({"a\"b": 5}));
        assert_eq!(Column::new("a\"b").get(&quoted).unwrap().as_bytes(), b"5");
    }
}
