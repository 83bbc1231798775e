//! Parsers for single variable values: booleans, durations, enums, column lists, names.
//! Each error names the variable and the bad value and says what is expected.

use super::error::ConfigError;

pub(crate) fn parse_bool(var: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim() {
        v if v.eq_ignore_ascii_case("true") => Ok(true),
        v if v.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(ConfigError::new(var, Some(value), "expected true or false")),
    }
}

/// A duration in milliseconds: one integer and one unit (`250ms`, `10s`, `5m`, `24h`, `7d`);
/// `0` needs no unit. A sign is accepted only when `signed` (interval bounds).
pub(crate) fn parse_duration_ms(var: &str, value: &str, signed: bool) -> Result<i64, ConfigError> {
    let expected = if signed {
        "expected a signed duration: an integer and a unit ms, s, m, h or d (e.g. -10m, 10m, 0)"
    } else {
        "expected a duration: an integer and a unit ms, s, m, h or d (e.g. 250ms, 10s, 5m, 24h, 7d, 0)"
    };
    let err = || ConfigError::new(var, Some(value), expected);
    let v = value.trim();
    let (negative, body) = match v.strip_prefix('-') {
        Some(rest) if signed => (true, rest),
        Some(_) => return Err(err()),
        None => (false, v.strip_prefix('+').filter(|_| signed).unwrap_or(v)),
    };
    let digits_end = body
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(body.len());
    let (digits, unit) = body.split_at(digits_end);
    if digits.is_empty() {
        return Err(err());
    }
    let n: i64 = digits.parse().map_err(|_| err())?;
    let scale: i64 = match unit {
        "" if n == 0 => 1,
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(err()),
    };
    let ms = n.checked_mul(scale).ok_or_else(err)?;
    Ok(if negative { -ms } else { ms })
}

/// A positive whole number.
pub(crate) fn parse_positive(var: &str, value: &str) -> Result<usize, ConfigError> {
    value
        .trim()
        .parse::<usize>()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| ConfigError::new(var, Some(value), "expected a positive whole number"))
}

/// One of `choices` (case-insensitive).
pub(crate) fn parse_enum<T: Copy>(
    var: &str,
    value: &str,
    choices: &[(&str, T)],
) -> Result<T, ConfigError> {
    let v = value.trim();
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(v))
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            ConfigError::new(
                var,
                Some(value),
                format!("expected one of {}", names.join(", ")),
            )
        })
}

/// A comma-separated list of column names: none empty, none repeated.
pub(crate) fn parse_columns(var: &str, value: &str) -> Result<Vec<String>, ConfigError> {
    let mut out: Vec<String> = Vec::new();
    for part in value.split(',') {
        let name = part.trim();
        if name.is_empty() {
            return Err(ConfigError::new(
                var,
                Some(value),
                "expected a comma-separated list of column names, with no empty entry",
            ));
        }
        if out.iter().any(|c| c == name) {
            return Err(ConfigError::new(
                var,
                Some(value),
                format!("column `{name}` is listed twice"),
            ));
        }
        out.push(name.to_owned());
    }
    Ok(out)
}

/// `[A-Za-z_][A-Za-z0-9_]*`, the names SELECT accepts.
pub(crate) fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let d = |s| parse_duration_ms("V", s, false);
        assert_eq!(d("250ms").unwrap(), 250);
        assert_eq!(d("10s").unwrap(), 10_000);
        assert_eq!(d("5m").unwrap(), 300_000);
        assert_eq!(d("24h").unwrap(), 86_400_000);
        assert_eq!(d("7d").unwrap(), 604_800_000);
        assert_eq!(d("0").unwrap(), 0);
        for bad in ["10", "1.5s", "10 s", "s", "-10m", "10sec", ""] {
            let e = d(bad).unwrap_err();
            assert_eq!(e.value.as_deref(), Some(bad));
        }
        assert_eq!(parse_duration_ms("V", "-10m", true).unwrap(), -600_000);
        assert_eq!(parse_duration_ms("V", "+10m", true).unwrap(), 600_000);
    }

    #[test]
    fn booleans_and_enums() {
        assert!(parse_bool("V", "TRUE").unwrap());
        assert!(parse_bool("V", "yes").is_err());
        assert_eq!(
            parse_enum("V", "Left", &[("inner", 0), ("left", 1)]).unwrap(),
            1
        );
        let e = parse_enum("V", "outer", &[("inner", 0), ("left", 1)]).unwrap_err();
        assert!(e.message.contains("inner, left"));
    }

    #[test]
    fn column_lists() {
        assert_eq!(parse_columns("V", " a, b ").unwrap(), vec!["a", "b"]);
        assert!(parse_columns("V", "a,,b").is_err());
        assert!(parse_columns("V", "a,a").is_err());
        assert!(is_identifier("_a1") && !is_identifier("1a") && !is_identifier("a-b"));
    }
}
