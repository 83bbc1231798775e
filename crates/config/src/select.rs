//! The `SIDEJOIN_SELECT` grammar: `item, item, …` where an item is `l.col`, `r.col`,
//! `left.col`, `right.col`, `l.*` or `r.*` — in a star join also `dim2.col`, `d2.col`, `dim2.*`
//! … for its further dimensions — a column optionally followed by `AS name`; and the output
//! names of a SELECT list (SPEC §3, §14).
//!
//! Naming: `AS` names are reserved first; every other column keeps its own name unless that name
//! is already taken in the row, in which case it gets the first free suffix `0`, `1`, … (as Flink
//! does for `a.*, b.*`). With a `*` item the names depend on the rows, so they are decided per
//! output row (by the engine's projection): a right column is suffixed only when the left part of
//! that row has the name.

use crate::Side;

use super::error::ConfigError;
use super::values::is_identifier;

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

/// A SELECT list with the output names that do not depend on the rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Select {
    items: Vec<SelectItem>,
    /// Output names decided once, when the list has no `*` item: `(name, side, column)`.
    fixed: Option<Vec<(String, Side, String)>>,
    /// `AS` names, which other columns must not take.
    reserved: Vec<String>,
}

/// The first free name among `base`, `base0`, `base1`, …
pub fn free_name(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (0u64..)
        .map(|i| format!("{base}{i}"))
        .find(|n| !taken(n))
        .expect("an unbounded range always has a free name")
}

impl Select {
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
                let mut names: Vec<(String, Side, String)> = Vec::new();
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
                        names.push((name, *side, column.clone()));
                    }
                }
                names
            });
        Select {
            items,
            fixed,
            reserved,
        }
    }

    pub fn items(&self) -> &[SelectItem] {
        &self.items
    }

    /// `(output name, side, input column)` for every item, when names do not depend on rows.
    pub fn fixed(&self) -> Option<&[(String, Side, String)]> {
        self.fixed.as_deref()
    }

    /// The `AS` names.
    pub fn reserved(&self) -> &[String] {
        &self.reserved
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
            .map(|(_, s, c)| (*s, c.as_str()))
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
}

const VAR: &str = "SIDEJOIN_SELECT";

/// The default projection: every left column, then every right column.
pub fn default_select() -> Vec<SelectItem> {
    vec![SelectItem::All(Side::Left), SelectItem::All(Side::Right)]
}

pub fn parse_select(value: &str) -> Result<Vec<SelectItem>, ConfigError> {
    let err = |msg: String| ConfigError::new(VAR, Some(value), msg);
    if value.trim().is_empty() {
        return Err(err(
            "expected a comma-separated list such as `l.user_id AS user_id, l.user_name, r.score`"
                .into(),
        ));
    }
    let mut items = Vec::new();
    let mut aliases: Vec<&str> = Vec::new();
    for raw in value.split(',') {
        items.push(parse_item(raw, &mut aliases).map_err(err)?);
    }
    Ok(items)
}

/// One item of the list, `raw` as written between its commas; `aliases` are the `AS` names
/// before it, which it must not repeat. The error is the message.
fn parse_item<'a>(raw: &'a str, aliases: &mut Vec<&'a str>) -> Result<SelectItem, String> {
    let tokens: Vec<&str> = raw.split_whitespace().collect();
    let (reference, alias) = match tokens.as_slice() {
        [r] => (*r, None),
        [r, kw, a] if kw.eq_ignore_ascii_case("as") => (*r, Some(*a)),
        [] => return Err("empty item (two commas in a row, or a trailing comma)".into()),
        _ => {
            let item = raw.trim();
            return Err(format!(
                "item `{item}`: expected `l.col`, `r.col`, `l.*`, `r.*`, or a column followed by `AS name`"
            ));
        }
    };
    let Some((prefix, column)) = reference.split_once('.') else {
        return Err(format!(
            "item `{reference}`: expected a side prefix (`l.`, `r.`, `left.` or `right.`) before the column"
        ));
    };
    let side = side_of(reference, prefix)?;
    if column == "*" {
        if alias.is_some() {
            return Err(format!(
                "item `{}`: `{prefix}.*` cannot have AS",
                raw.trim()
            ));
        }
        return Ok(SelectItem::All(side));
    }
    if !is_identifier(column) {
        return Err(format!(
            "item `{reference}`: column name `{column}` must match [A-Za-z_][A-Za-z0-9_]*"
        ));
    }
    if let Some(a) = alias {
        if !is_identifier(a) {
            return Err(format!(
                "output name `{a}` must match [A-Za-z_][A-Za-z0-9_]*"
            ));
        }
        if aliases.contains(&a) {
            return Err(format!("duplicate output name `{a}`"));
        }
        aliases.push(a);
    }
    Ok(SelectItem::Column {
        side,
        column: column.to_owned(),
        alias: alias.map(str::to_owned),
    })
}

/// The input a qualifier names, in any case: `l`/`left`, `r`/`right`, and a star join's further
/// dimensions `dim2`/`d2` … `dim7`/`d7`.
pub(crate) fn input_named(prefix: &str) -> Option<Side> {
    let p = prefix.to_ascii_lowercase();
    match p.as_str() {
        "l" | "left" => Some(Side::Left),
        "r" | "right" => Some(Side::Right),
        _ => {
            let n = p.strip_prefix("dim").or_else(|| p.strip_prefix('d'))?;
            let n: usize = n.parse().ok().filter(|n| *n >= 2)?;
            Side::at(n)
        }
    }
}

/// The side a `prefix` names (`input_named`), in item `reference`.
fn side_of(reference: &str, prefix: &str) -> Result<Side, String> {
    input_named(prefix).ok_or_else(|| {
        format!(
            "item `{reference}`: unknown side prefix `{prefix}` (expected l, r, left or right; dim2 … dim7 or d2 … d7 in a star join)"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(side: Side, c: &str, a: Option<&str>) -> SelectItem {
        SelectItem::Column {
            side,
            column: c.into(),
            alias: a.map(Into::into),
        }
    }

    #[test]
    fn parses_items() {
        let s = parse_select("l.user_id AS user_id, left.user_name, R.score as s, r.*").unwrap();
        assert_eq!(
            s,
            vec![
                col(Side::Left, "user_id", Some("user_id")),
                col(Side::Left, "user_name", None),
                col(Side::Right, "score", Some("s")),
                SelectItem::All(Side::Right),
            ]
        );
    }

    #[test]
    fn parses_dimension_items() {
        let dim = |n| Side::at(n).unwrap();
        let s = parse_select("l.id, dim2.name AS n, D3.*, d7.x").unwrap();
        assert_eq!(
            s,
            vec![
                col(Side::Left, "id", None),
                col(dim(2), "name", Some("n")),
                SelectItem::All(dim(3)),
                col(dim(7), "x", None),
            ]
        );
        for bad in ["dim8.a", "d1.a", "dim.a", "dimx.a", "d02x.a"] {
            let e = parse_select(bad).unwrap_err();
            assert!(
                e.message.contains("unknown side prefix"),
                "{bad}: {}",
                e.message
            );
        }
    }

    #[test]
    fn fixed_names_get_free_suffixes() {
        let s = Select::new(vec![
            col(Side::Left, "id", None),
            col(Side::Right, "id", None),
            col(Side::Right, "x", Some("id0")),
        ]);
        assert_eq!(s.fixed_columns().unwrap(), vec!["id", "id1", "id0"]);
        assert_eq!(s.source_of("id1"), Some((Side::Right, "id")));
        assert!(Select::new(default_select()).fixed_columns().is_none());
    }

    #[test]
    fn rejects_bad_items() {
        for (bad, needle) in [
            ("x.a", "unknown side prefix `x`"),
            ("a", "side prefix"),
            ("l.a AS b, r.c AS b", "duplicate output name `b`"),
            ("l.a b", "expected"),
            ("l.a,,r.b", "empty item"),
            ("l.* AS x", "cannot have AS"),
            ("l.a-b", "must match"),
            ("", "expected"),
        ] {
            let e = parse_select(bad).unwrap_err();
            assert!(e.message.contains(needle), "{bad}: {}", e.message);
            assert_eq!(e.var, VAR);
        }
    }
}
