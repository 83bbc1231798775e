//! SELECT projection (SPEC §3): builds the output row from a left and a right row, either of
//! which may be missing (null padding), and names its columns.
//!
//! Naming: `AS` names are reserved first; every other column keeps its own name unless that name
//! is already taken in the row, in which case it gets the first free suffix `0`, `1`, … (as Flink
//! does for `a.*, b.*`). With a `*` item the names depend on the rows, so they are decided per
//! output row: a right column is suffixed only when the left part of that row has the name.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::column::Column;
use crate::changelog::{Row, Side};

/// An output row: column names (shared by every row of a fixed SELECT) and values, in order.
/// Cheaper to build than a `Row` (no hashing) and serialised as the same JSON object.
#[derive(Debug, Clone, PartialEq)]
pub struct OutRow {
    names: Names,
    values: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq)]
enum Names {
    Fixed(Arc<[String]>),
    Owned(Vec<String>),
}

impl OutRow {
    fn names(&self) -> &[String] {
        match &self.names {
            Names::Fixed(n) => n,
            Names::Owned(n) => n,
        }
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.names()
            .iter()
            .position(|n| n == name)
            .map(|i| &self.values[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.names().iter().map(String::as_str).zip(&self.values)
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The row as a JSON object.
    pub fn to_map(&self) -> Row {
        self.iter()
            .map(|(k, v)| (k.to_owned(), v.clone()))
            .collect()
    }
}

impl Serialize for OutRow {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.values.len()))?;
        for (k, v) in self.iter() {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// One item of `SIDEJOIN_SELECT`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SelectItem {
    /// `l.col [AS alias]` / `r.col [AS alias]`
    Column {
        side: Side,
        column: String,
        alias: Option<String>,
    },
    /// `l.*` / `r.*`
    All(Side),
}

/// A compiled SELECT list.
#[derive(Debug, Clone)]
pub struct Projection {
    items: Vec<SelectItem>,
    /// Output names decided once, when the list has no `*` item: `(name, side, column)`.
    fixed: Option<Vec<(String, Side, Column)>>,
    /// The fixed names, shared by every output row.
    fixed_names: Arc<[String]>,
    /// `AS` names, which other columns must not take.
    reserved: Vec<String>,
}

/// The first free name among `base`, `base0`, `base1`, …
fn free_name(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (0u64..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken(n))
        .expect("an unbounded range always has a free name")
}

impl Projection {
    pub fn new(items: Vec<SelectItem>) -> Self {
        let reserved: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                SelectItem::Column { alias: Some(a), .. } => Some(a.clone()),
                _ => None,
            })
            .collect();
        let fixed = items
            .iter()
            .all(|i| matches!(i, SelectItem::Column { .. }))
            .then(|| {
                let mut names: Vec<(String, Side, Column)> = Vec::new();
                for item in &items {
                    if let SelectItem::Column {
                        side,
                        column,
                        alias,
                    } = item
                    {
                        let name = match alias {
                            Some(a) => a.clone(),
                            None => free_name(column, |n| {
                                reserved.iter().any(|r| r == n)
                                    || names.iter().any(|(m, _, _)| m == n)
                            }),
                        };
                        names.push((name, *side, Column::new(column.as_str())));
                    }
                }
                names
            });
        let fixed_names = fixed.iter().flatten().map(|(n, _, _)| n.clone()).collect();
        Projection {
            items,
            fixed,
            fixed_names,
            reserved,
        }
    }

    pub fn items(&self) -> &[SelectItem] {
        &self.items
    }

    /// The output column names, when they do not depend on the rows (no `*` item).
    pub fn fixed_columns(&self) -> Option<Vec<&str>> {
        self.fixed
            .as_ref()
            .map(|f| f.iter().map(|(n, _, _)| n.as_str()).collect())
    }

    /// The input column an output column is taken from, when names are fixed.
    pub fn source_of(&self, name: &str) -> Option<(Side, &str)> {
        self.fixed
            .as_ref()?
            .iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, s, c)| (*s, c.name()))
    }

    /// Whether a `side.*` item selects every column of `side`.
    pub fn selects_all_of(&self, side: Side) -> bool {
        self.items.contains(&SelectItem::All(side))
    }

    /// Columns of `side` named by the list (not counting `*`).
    pub fn columns_of(&self, side: Side) -> Vec<String> {
        self.items
            .iter()
            .filter_map(|i| match i {
                SelectItem::Column {
                    side: s, column, ..
                } if *s == side => Some(column.clone()),
                _ => None,
            })
            .collect()
    }

    /// The output row for a left and a right row; a missing side is null-padded.
    pub fn project(&self, left: Option<&Row>, right: Option<&Row>) -> OutRow {
        let pick = |side: Side| match side {
            Side::Left => left,
            Side::Right => right,
        };
        let value = |side: Side, column: &str| {
            pick(side)
                .and_then(|r| r.get(column))
                .cloned()
                .unwrap_or(Value::Null)
        };
        if let Some(fixed) = &self.fixed {
            return OutRow {
                names: Names::Fixed(self.fixed_names.clone()),
                values: fixed
                    .iter()
                    .map(|(_, side, column)| {
                        pick(*side)
                            .and_then(|r| column.get(r))
                            .cloned()
                            .unwrap_or(Value::Null)
                    })
                    .collect(),
            };
        }
        let mut names: Vec<String> = Vec::new();
        let mut values = Vec::new();
        for item in &self.items {
            match item {
                SelectItem::Column {
                    side,
                    column,
                    alias,
                } => {
                    let name = match alias {
                        Some(a) => a.clone(),
                        None => self.name_for(&names, column),
                    };
                    names.push(name);
                    values.push(value(*side, column));
                }
                SelectItem::All(side) => {
                    for (column, v) in pick(*side).into_iter().flatten() {
                        let name = self.name_for(&names, column);
                        names.push(name);
                        values.push(v.clone());
                    }
                }
            }
        }
        OutRow {
            names: Names::Owned(names),
            values,
        }
    }

    fn name_for(&self, taken: &[String], column: &str) -> String {
        free_name(column, |n| {
            taken.iter().any(|t| t == n) || self.reserved.iter().any(|r| r == n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn row(v: Value) -> Row {
        v.as_object().unwrap().clone()
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
        let out = all().project(Some(&l), Some(&r));
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!({"id": 1, "id0": 2, "id1": 1, "w": 3})
        );
        // A right-padded row keeps the right names.
        let out = all().project(None, Some(&r));
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!({"id": 1, "w": 3})
        );
        let out = all().project(Some(&l), None);
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
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
        assert_eq!(p.fixed_columns().unwrap(), vec!["id", "id1", "id0"]);
        let out = p.project(Some(&row(json!({"id": 7}))), None);
        assert_eq!(
            serde_json::to_value(&out).unwrap(),
            json!({"id": 7, "id1": null, "id0": null})
        );
        assert_eq!(p.source_of("id1"), Some((Side::Right, "id")));
    }
}
