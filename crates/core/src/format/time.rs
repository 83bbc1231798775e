//! Row times for interval joins (SPEC §4): epoch milliseconds as a JSON number, RFC 3339 /
//! ISO-8601 strings (`2021-11-01T00:01:03Z`, offsets, fractions; no zone means UTC) and
//! `2021-11-01 00:01:03[.fff]` (UTC). Anything else — a missing time, a numeric string — is an
//! error naming the column and the value.

use chrono::{DateTime, NaiveDateTime};

use super::DecodeError;
use crate::row::scan::JsonKind;
use crate::row::Json;

fn parse_string(s: &str) -> Option<i64> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.timestamp_millis());
    }
    ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(s, f).ok())
        .map(|t| t.and_utc().timestamp_millis())
}

/// The time in epoch milliseconds held by `value` (the column `column`).
pub fn parse_time(value: Option<Json<'_>>, column: &str) -> Result<i64, DecodeError> {
    let bad = |what: String| {
        DecodeError::new(format!(
            "time column `{column}` {what}: expected epoch milliseconds (a number) or an ISO-8601 timestamp"
        ))
    };
    let Some(v) = value.filter(|v| !v.is_null()) else {
        return Err(bad("is missing".into()));
    };
    match v.kind() {
        JsonKind::Number => v
            .as_i64()
            .or_else(|| {
                v.as_f64()
                    .filter(|f| f.is_finite() && f.abs() < 9.2e18)
                    .map(|f| f.floor() as i64)
            })
            .ok_or_else(|| bad(format!("holds {v:?}, out of range"))),
        JsonKind::String => {
            let s = v.as_str().unwrap_or_default();
            parse_string(s.trim()).ok_or_else(|| bad(format!("holds {s:?}")))
        }
        other => Err(bad(format!("holds {}", other.described()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn t(v: Value) -> Result<i64, DecodeError> {
        let text = serde_json::to_vec(&v).unwrap();
        parse_time(Some(Json::new_unchecked(&text)), "row_time")
    }

    #[test]
    fn accepted_forms() {
        let base = 1_635_724_863_000; // 2021-11-01T00:01:03Z
        assert_eq!(t(json!(base)).unwrap(), base);
        assert_eq!(t(json!("2021-11-01T00:01:03Z")).unwrap(), base);
        assert_eq!(t(json!("2021-11-01T08:01:03+08:00")).unwrap(), base);
        assert_eq!(t(json!("2021-11-01T00:01:03.250Z")).unwrap(), base + 250);
        assert_eq!(t(json!("2021-11-01T00:01:03")).unwrap(), base);
        assert_eq!(t(json!("2021-11-01 00:01:03")).unwrap(), base);
        assert_eq!(t(json!("2021-11-01 00:01:03.5")).unwrap(), base + 500);
    }

    #[test]
    fn rejected_forms_name_the_column() {
        for v in [
            json!("1635724863000"),
            json!("yesterday"),
            json!(true),
            json!({"t": 1}),
        ] {
            let e = t(v.clone()).unwrap_err();
            assert!(e.0.contains("`row_time`"), "{v}: {e}");
        }
        assert!(parse_time(None, "row_time")
            .unwrap_err()
            .0
            .contains("is missing"));
    }
}
