//! Durations of the SQL: `INTERVAL '10' MINUTE` literals, Flink duration strings
//! (`'1 h'`, `'30 min'`, `'3600000'` ms) and their `SIDEJOIN_*` spelling (`10m`).

use sqlparser::ast::{DateTimeField, Expr, Value};

use super::error::{At, Result, SqlError};

fn field_ms(f: &DateTimeField) -> Option<i64> {
    use DateTimeField as F;
    Some(match f {
        F::Millisecond | F::Milliseconds => 1,
        F::Second | F::Seconds => 1_000,
        F::Minute | F::Minutes => 60_000,
        F::Hour | F::Hours => 3_600_000,
        F::Day | F::Days => 86_400_000,
        _ => return None,
    })
}

/// `INTERVAL 'n' UNIT` (SECOND, MINUTE, HOUR, DAY, MILLISECOND) → ms.
pub(super) fn interval_ms(expr: &Expr, at: At) -> Result<i64> {
    let bad = || {
        SqlError::new(
            at,
            expr.to_string(),
            "expected INTERVAL 'n' SECOND|MINUTE|HOUR|DAY (a whole number and one unit)",
        )
    };
    let Expr::Interval(i) = expr else {
        return Err(bad());
    };
    if i.last_field.is_some() {
        return Err(bad());
    }
    let n: i64 = match i.value.as_ref() {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => s.trim().parse().map_err(|_| bad())?,
            Value::Number(s, _) => s.parse().map_err(|_| bad())?,
            _ => return Err(bad()),
        },
        _ => return Err(bad()),
    };
    let unit = i
        .leading_field
        .as_ref()
        .and_then(field_ms)
        .ok_or_else(bad)?;
    n.checked_mul(unit).ok_or_else(bad)
}

/// A Flink duration string (`TimeUtils.parseDuration`): a whole number, optional spaces and a
/// unit (`ms`, `s`, `sec`, `min`, `m`, `h`, `hour`, `d`, `day`, plurals); no unit means ms.
pub(super) fn flink_duration_ms(text: &str) -> Option<i64> {
    let t = text.trim();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: i64 = t[..end].parse().ok()?;
    let unit = t[end..].trim().to_ascii_lowercase();
    let scale = match unit.as_str() {
        "" | "ms" | "milli" | "millis" | "millisecond" | "milliseconds" => 1,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000,
        "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
        "h" | "hour" | "hours" => 3_600_000,
        "d" | "day" | "days" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(scale)
}

/// Milliseconds in `SIDEJOIN_*` duration syntax: the largest unit that divides them.
pub(super) fn env_duration(ms: i64) -> String {
    if ms == 0 {
        return "0".to_owned();
    }
    let units = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "m"),
        (1_000, "s"),
    ];
    for (scale, unit) in units {
        if ms % scale == 0 {
            return format!("{}{unit}", ms / scale);
        }
    }
    format!("{ms}ms")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(flink_duration_ms("1 h"), Some(3_600_000));
        assert_eq!(flink_duration_ms("30min"), Some(1_800_000));
        assert_eq!(flink_duration_ms("250"), Some(250));
        assert_eq!(flink_duration_ms("1 fortnight"), None);
        assert_eq!(env_duration(-600_000), "-10m");
        assert_eq!(env_duration(1_500), "1500ms");
        assert_eq!(env_duration(0), "0");
        assert_eq!(env_duration(86_400_000), "1d");
    }
}
