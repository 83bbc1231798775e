//! `csv` (Flink's format): a record value is one delimited line whose fields are the declared
//! columns in order; each field becomes JSON by its column's type (`INT` 25 → `25`, `VARCHAR` 1 →
//! `"1"`), and the JSON text becomes a row through the same constructor as the `json` format's,
//! so nothing after decoding knows the record was csv. A line that cannot be read is a decode
//! error; whether it is skipped instead is the pipeline's call (`csv.ignore-parse-errors`).

use super::DecodeError;
use crate::change::{Event, Kind, Row};
use crate::config::{ColumnKind, CsvSpec};

/// Reads one line into its fields (the csv crate does quoting, escapes and delimiters).
fn fields(spec: &CsvSpec, bytes: &[u8]) -> Result<csv::ByteRecord, DecodeError> {
    let mut b = csv::ReaderBuilder::new();
    b.has_headers(false)
        .flexible(true)
        .delimiter(spec.delimiter)
        .quoting(spec.quote.is_some())
        .quote(spec.quote.unwrap_or(b'"'))
        .escape(spec.escape)
        .buffer_capacity(bytes.len().clamp(64, 8 * 1024));
    let mut reader = b.from_reader(bytes);
    let mut record = csv::ByteRecord::new();
    let err = |e: csv::Error| DecodeError::new(format!("the csv line cannot be read: {e}"));
    if !reader.read_byte_record(&mut record).map_err(err)? {
        return Err(DecodeError::new("the csv record is an empty line"));
    }
    let mut extra = csv::ByteRecord::new();
    if reader.read_byte_record(&mut extra).map_err(err)? {
        return Err(DecodeError::new(
            "the csv record holds more than one line (one record value is one line)",
        ));
    }
    Ok(record)
}

/// The JSON text of one field of a column of `kind`.
fn field_json(
    kind: ColumnKind,
    name: &str,
    ty: &str,
    raw: &[u8],
    out: &mut String,
) -> Result<(), DecodeError> {
    let text = std::str::from_utf8(raw)
        .map_err(|_| DecodeError::new(format!("csv column `{name}` ({ty}) is not valid UTF-8")))?;
    let t = text.trim();
    let bad = |what: &str| {
        DecodeError::new(format!(
            "csv column `{name}` ({ty}): `{text}` is not {what}"
        ))
    };
    match kind {
        ColumnKind::String => {
            out.push_str(&serde_json::to_string(text).expect("strings serialise"));
        }
        // An empty field of a non-text column reads as null (there is no empty number).
        _ if t.is_empty() => out.push_str("null"),
        ColumnKind::Integer => {
            let n: i64 = t.parse().map_err(|_| bad("an integer"))?;
            out.push_str(&n.to_string());
        }
        ColumnKind::Number => {
            let f: f64 = t.parse().map_err(|_| bad("a number"))?;
            if !f.is_finite() {
                return Err(bad("a finite number"));
            }
            // Keep the digits as written when they are already JSON (`1.10` stays `1.10`).
            if serde_json::from_str::<serde_json::Number>(t).is_ok() {
                out.push_str(t);
            } else {
                out.push_str(&serde_json::to_string(&f).expect("finite numbers serialise"));
            }
        }
        ColumnKind::Boolean => match t.to_ascii_lowercase().as_str() {
            "true" => out.push_str("true"),
            "false" => out.push_str("false"),
            _ => return Err(bad("a boolean (true or false)")),
        },
    }
    Ok(())
}

pub(super) fn decode(spec: &CsvSpec, value: Option<&[u8]>) -> Result<Option<Event>, DecodeError> {
    let Some(bytes) = value else {
        return Ok(None);
    };
    let record = fields(spec, bytes)?;
    if record.len() != spec.columns.len() {
        let names: Vec<&str> = spec.columns.iter().map(|c| c.name.as_str()).collect();
        return Err(DecodeError::new(format!(
            "the csv line has {} field(s) but the table declares {} ({})",
            record.len(),
            names.len(),
            names.join(", ")
        )));
    }
    let mut json = String::with_capacity(bytes.len() * 2 + 16);
    json.push('{');
    for (i, (col, raw)) in spec.columns.iter().zip(record.iter()).enumerate() {
        if i > 0 {
            json.push(',');
        }
        json.push_str(&serde_json::to_string(&col.name).expect("strings serialise"));
        json.push(':');
        if spec.null_literal.as_deref().map(str::as_bytes) == Some(raw) {
            json.push_str("null");
        } else {
            field_json(col.kind, &col.name, &col.ty, raw, &mut json)?;
        }
    }
    json.push('}');
    let row = Row::parse(json.as_bytes())
        .map_err(|e| DecodeError::new(format!("the csv line made invalid JSON: {e}")))?;
    Ok(Some(Event::Change(Kind::Insert, row)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ColumnSpec;

    fn spec(cols: &[(&str, ColumnKind)]) -> CsvSpec {
        CsvSpec {
            columns: cols
                .iter()
                .map(|(n, k)| ColumnSpec {
                    name: n.to_string(),
                    ty: format!("{k:?}"),
                    kind: *k,
                })
                .collect(),
            delimiter: b',',
            quote: Some(b'"'),
            escape: None,
            null_literal: None,
            ignore_parse_errors: false,
        }
    }

    fn row(spec: &CsvSpec, line: &str) -> Result<String, DecodeError> {
        match decode(spec, Some(line.as_bytes()))? {
            Some(Event::Change(Kind::Insert, r)) => {
                Ok(String::from_utf8(r.json().to_vec()).unwrap())
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn typed_fields() {
        let s = spec(&[
            ("user_id", ColumnKind::String),
            ("score", ColumnKind::Integer),
        ]);
        assert_eq!(row(&s, "1,25").unwrap(), r#"{"user_id":"1","score":25}"#);
        assert_eq!(
            row(&s, "\"a,b\",\n").unwrap(),
            r#"{"user_id":"a,b","score":null}"#
        );
        let e = row(&s, "1,x").unwrap_err();
        assert!(e.0.contains("`x` is not an integer"), "{e}");
        let e = row(&s, "1,2,3").unwrap_err();
        assert!(e.0.contains("3 field(s)"), "{e}");
        let e = row(&s, "1\n2,3").unwrap_err();
        assert!(e.0.contains("more than one line"), "{e}");
    }

    #[test]
    fn numbers_booleans_and_null_literal() {
        let mut s = spec(&[
            ("d", ColumnKind::Number),
            ("b", ColumnKind::Boolean),
            ("s", ColumnKind::String),
        ]);
        s.null_literal = Some("\\N".into());
        s.delimiter = b'\t';
        assert_eq!(
            row(&s, "1.10\tTRUE\t\\N").unwrap(),
            r#"{"d":1.10,"b":true,"s":null}"#
        );
        assert_eq!(
            row(&s, ".5\tfalse\t").unwrap(),
            r#"{"d":0.5,"b":false,"s":""}"#
        );
        assert!(row(&s, "1\tyes\tx").is_err());
    }
}
