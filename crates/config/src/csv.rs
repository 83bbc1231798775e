//! The csv format's settings (SPEC §2): `SIDEJOIN_<SIDE>_COLUMNS` (`name TYPE, …`, as a Flink
//! `CREATE TABLE` declares them; the type decides how a field becomes JSON) and Flink's csv
//! options as `SIDEJOIN_<SIDE>_CSV_*` variables.

use super::error::{ConfigError, Problems};
use super::raw::RawConfig;
use super::types::{ColumnKind, ColumnSpec, CsvSpec, Format};
use super::values::parse_bool;
use crate::Side;

const NAMES: [&str; 7] = [
    "COLUMNS",
    "CSV_FIELD_DELIMITER",
    "CSV_QUOTE_CHARACTER",
    "CSV_DISABLE_QUOTE_CHARACTER",
    "CSV_ESCAPE_CHARACTER",
    "CSV_NULL_LITERAL",
    "CSV_IGNORE_PARSE_ERRORS",
];

/// The kind of a declared type (its name before any `(…)`), if csv can read it.
pub(crate) fn kind_of(ty: &str) -> Option<ColumnKind> {
    let base = ty
        .split('(')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_uppercase();
    Some(match base.as_str() {
        "STRING" | "VARCHAR" | "CHAR" | "CHARACTER VARYING" | "TEXT" | "TIMESTAMP"
        | "TIMESTAMP_LTZ" | "DATE" | "TIME" => ColumnKind::String,
        "TINYINT" | "SMALLINT" | "INT" | "INTEGER" | "BIGINT" => ColumnKind::Integer,
        "FLOAT" | "DOUBLE" | "DOUBLE PRECISION" | "REAL" | "DECIMAL" | "DEC" | "NUMERIC" => {
            ColumnKind::Number
        }
        "BOOLEAN" | "BOOL" => ColumnKind::Boolean,
        _ => return None,
    })
}

/// Splits `a INT, b DECIMAL(10,2)` at the commas outside parentheses.
fn split_top(value: &str) -> Vec<&str> {
    let (mut depth, mut start, mut out) = (0i32, 0, Vec::new());
    for (i, c) in value.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&value[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&value[start..]);
    out
}

/// `name TYPE, name TYPE` (a missing type is STRING).
pub(crate) fn parse_columns_typed(var: &str, value: &str) -> Result<Vec<ColumnSpec>, ConfigError> {
    let err = |m: String| ConfigError::new(var, Some(value), m);
    let mut out: Vec<ColumnSpec> = Vec::new();
    for part in split_top(value) {
        let part = part.trim();
        let (name, ty) = match part.split_once(char::is_whitespace) {
            Some((n, t)) => (n.trim(), t.trim()),
            None => (part, "STRING"),
        };
        if name.is_empty() {
            return Err(err(
                "expected `name TYPE, name TYPE, …` with no empty entry".into(),
            ));
        }
        let Some(kind) = kind_of(ty) else {
            return Err(err(format!(
                "column `{name}`: type `{ty}` cannot be read from csv (STRING/VARCHAR/CHAR, TINYINT…BIGINT, FLOAT/DOUBLE/DECIMAL, BOOLEAN, DATE/TIME/TIMESTAMP as text)"
            )));
        };
        if out.iter().any(|c| c.name == name) {
            return Err(err(format!("column `{name}` is listed twice")));
        }
        out.push(ColumnSpec {
            name: name.to_owned(),
            ty: ty.to_ascii_uppercase(),
            kind,
        });
    }
    Ok(out)
}

/// One byte, as the csv reader needs.
fn one_char(var: &str, value: &str) -> Result<u8, ConfigError> {
    match value.as_bytes() {
        [b] if b.is_ascii() => Ok(*b),
        _ => Err(ConfigError::new(
            var,
            Some(value),
            "expected exactly one ASCII character (a tab is written as a tab, or '\\t' in SQL)",
        )),
    }
}

/// `SIDEJOIN_<SIDE>_<NAMES[i]>`.
fn csv_var(side: Side, i: usize) -> String {
    format!("SIDEJOIN_{}_{}", side.var(), NAMES[i])
}

/// The csv settings of `side`; problems when they are set on a side that is not csv, or when
/// a csv side lacks its columns.
pub(super) fn csv_spec(
    p: &mut Problems,
    raw: &RawConfig,
    side: Side,
    format: Format,
) -> Option<CsvSpec> {
    let vals = raw.csv_of(side);
    if format != Format::Csv {
        refuse_unless_csv(p, side, &vals);
        return None;
    }
    let columns = csv_columns(p, side, vals[0]);
    let byte = |p: &mut Problems, i: usize, default: u8| {
        vals[i]
            .as_deref()
            .and_then(|v| p.take(one_char(&csv_var(side, i), v)))
            .unwrap_or(default)
    };
    let delimiter = byte(p, 1, b',');
    let quote = byte(p, 2, b'"');
    let flag = |p: &mut Problems, i: usize| {
        vals[i]
            .as_deref()
            .and_then(|v| p.take(parse_bool(&csv_var(side, i), v)))
            .unwrap_or(false)
    };
    let no_quote = flag(p, 3);
    let escape = vals[4]
        .as_deref()
        .and_then(|v| p.take(one_char(&csv_var(side, 4), v)));
    Some(CsvSpec {
        columns,
        delimiter,
        quote: (!no_quote).then_some(quote),
        escape,
        null_literal: vals[5].clone(),
        ignore_parse_errors: flag(p, 6),
    })
}

/// A problem for each csv variable (`vals`, in `NAMES` order) set on a side that is not csv.
fn refuse_unless_csv(p: &mut Problems, side: Side, vals: &[&Option<String>]) {
    for (i, v) in vals.iter().enumerate() {
        if v.is_some() {
            p.add(
                csv_var(side, i),
                None,
                format!(
                    "only applies to the csv format (SIDEJOIN_{}_FORMAT=csv)",
                    side.var()
                ),
            );
        }
    }
}

/// `SIDEJOIN_<SIDE>_COLUMNS`, which a csv side needs.
fn csv_columns(p: &mut Problems, side: Side, value: &Option<String>) -> Vec<ColumnSpec> {
    match value {
        Some(v) => p
            .take(parse_columns_typed(&csv_var(side, 0), v))
            .unwrap_or_default(),
        None => {
            p.add(
                csv_var(side, 0),
                None,
                "required by the csv format: the columns in field order, `name TYPE, …` (e.g. `user_id STRING, score INT`)",
            );
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_columns() {
        let c =
            parse_columns_typed("V", "user_id VARCHAR, score INT, d DECIMAL(10, 2), x").unwrap();
        let kinds: Vec<ColumnKind> = c.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ColumnKind::String,
                ColumnKind::Integer,
                ColumnKind::Number,
                ColumnKind::String
            ]
        );
        assert_eq!(c[2].ty, "DECIMAL(10, 2)");
        let e = parse_columns_typed("V", "a MAP<STRING, INT>").unwrap_err();
        assert!(
            e.message.contains("cannot be read from csv"),
            "{}",
            e.message
        );
        assert!(parse_columns_typed("V", "a INT, a INT").is_err());
    }
}
