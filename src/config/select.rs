//! The `SIDEJOIN_SELECT` grammar: `item, item, …` where an item is `l.col`, `r.col`,
//! `left.col`, `right.col`, `l.*` or `r.*`, a column optionally followed by `AS name`.

use crate::changelog::Side;
use crate::engine::project::SelectItem;

use super::error::ConfigError;
use super::values::is_identifier;

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
        let tokens: Vec<&str> = raw.split_whitespace().collect();
        let (reference, alias) = match tokens.as_slice() {
            [r] => (*r, None),
            [r, kw, a] if kw.eq_ignore_ascii_case("as") => (*r, Some(*a)),
            [] => return Err(err("empty item (two commas in a row, or a trailing comma)".into())),
            _ => {
                return Err(err(format!(
                    "item `{}`: expected `l.col`, `r.col`, `l.*`, `r.*`, or a column followed by `AS name`",
                    raw.trim()
                )))
            }
        };
        let Some((prefix, column)) = reference.split_once('.') else {
            return Err(err(format!(
                "item `{reference}`: expected a side prefix (`l.`, `r.`, `left.` or `right.`) before the column"
            )));
        };
        let side = match prefix.to_ascii_lowercase().as_str() {
            "l" | "left" => Side::Left,
            "r" | "right" => Side::Right,
            _ => {
                return Err(err(format!(
                "item `{reference}`: unknown side prefix `{prefix}` (expected l, r, left or right)"
            )))
            }
        };
        if column == "*" {
            if alias.is_some() {
                return Err(err(format!(
                    "item `{}`: `{prefix}.*` cannot have AS",
                    raw.trim()
                )));
            }
            items.push(SelectItem::All(side));
            continue;
        }
        if !is_identifier(column) {
            return Err(err(format!(
                "item `{reference}`: column name `{column}` must match [A-Za-z_][A-Za-z0-9_]*"
            )));
        }
        if let Some(a) = alias {
            if !is_identifier(a) {
                return Err(err(format!(
                    "output name `{a}` must match [A-Za-z_][A-Za-z0-9_]*"
                )));
            }
            if aliases.contains(&a) {
                return Err(err(format!("duplicate output name `{a}`")));
            }
            aliases.push(a);
        }
        items.push(SelectItem::Column {
            side,
            column: column.to_owned(),
            alias: alias.map(str::to_owned),
        });
    }
    Ok(items)
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
