//! `SIDEJOIN_SQL` / `SIDEJOIN_SQL_FILE`: the script is translated (`crate::sql`) into the
//! `SIDEJOIN_*` variables it means, merged with the environment, and validated with it. A
//! variable the environment sets to another value than the SQL is an error naming both; one the
//! SQL does not cover (security, state directory, HTTP) applies as usual.

use super::error::{ConfigError, ConfigErrors};
use super::raw::KAFKA_PREFIX;
use crate::sql::{self, Translation};

pub(super) struct Merged {
    pub env: Vec<(String, String)>,
    pub sql: Option<Translation>,
}

fn one(var: &str, value: Option<&str>, message: impl Into<String>) -> ConfigErrors {
    ConfigErrors(vec![ConfigError::new(var, value, message)])
}

/// Variables whose values are enums or booleans, which are case-insensitive (SPEC §9); and a
/// star join's `SIDEJOIN_DIM<N>_FORMAT` and `SIDEJOIN_DEDUP_DIM<N>`.
const CASELESS: [&str; 13] = [
    "JOIN_TYPE",
    "LEFT_FORMAT",
    "RIGHT_FORMAT",
    "OUTPUT_MODE",
    "OUTPUT_FORMAT",
    "ALLOW_GENERATED_RETRACTS",
    "DEDUP_LEFT",
    "DEDUP_RIGHT",
    "BROADCAST",
    "AUTO_OFFSET_RESET",
    "PROCESSING_GUARANTEE",
    "CSV_IGNORE_PARSE_ERRORS",
    "CSV_DISABLE_QUOTE_CHARACTER",
];

/// Whether the environment's value of `var` means the SQL's: the same text, or for enums and
/// booleans the same text in another case (topics and columns are case-sensitive).
fn same(var: &str, env: &str, sql: &str) -> bool {
    let dim_caseless = var.starts_with("SIDEJOIN_DEDUP_DIM")
        || (var.starts_with("SIDEJOIN_DIM") && var.ends_with("_FORMAT"));
    let caseless = dim_caseless || CASELESS.iter().any(|c| var.ends_with(c));
    env.trim() == sql.trim() || (caseless && env.trim().eq_ignore_ascii_case(sql.trim()))
}

pub(super) fn merge(mut env: Vec<(String, String)>) -> Result<Merged, ConfigErrors> {
    let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    let (inline, file) = (get("SIDEJOIN_SQL"), get("SIDEJOIN_SQL_FILE"));
    let (var, text) = match (inline, file) {
        (None, None) => return Ok(Merged { env, sql: None }),
        (Some(_), Some(_)) => {
            return Err(one(
                "SIDEJOIN_SQL_FILE",
                None,
                "SIDEJOIN_SQL and SIDEJOIN_SQL_FILE are both set; give the script one way",
            ))
        }
        (Some(t), None) => ("SIDEJOIN_SQL", t),
        (None, Some(path)) => match std::fs::read_to_string(&path) {
            Ok(t) => ("SIDEJOIN_SQL_FILE", t),
            Err(e) => {
                return Err(one(
                    "SIDEJOIN_SQL_FILE",
                    Some(&path),
                    format!("cannot read the SQL file: {e}"),
                ))
            }
        },
    };
    let translation = sql::translate(&text).map_err(|e| one(var, None, e.to_string()))?;
    let mut problems = Vec::new();
    for s in &translation.settings.items {
        match env.iter().find(|(k, _)| k == &s.var) {
            Some((_, v)) if same(&s.var, v, &s.value) => {}
            // Kafka passthrough values may be secrets: the variable is named, no value shown.
            Some(_) if s.var.starts_with(KAFKA_PREFIX) => problems.push(ConfigError::new(
                &s.var,
                None,
                format!(
                    "contradicts {var}: `{}` at {} sets it to another value; remove the variable or change the SQL",
                    s.construct, s.at
                ),
            )),
            Some((_, v)) => problems.push(ConfigError::new(
                &s.var,
                Some(v),
                format!(
                    "contradicts {var}: `{}` at {} means {}={:?}; remove the variable or change the SQL",
                    s.construct, s.at, s.var, s.value
                ),
            )),
            None => env.push((s.var.clone(), s.value.clone())),
        }
    }
    if !problems.is_empty() {
        return Err(ConfigErrors(problems));
    }
    Ok(Merged {
        env,
        sql: Some(translation),
    })
}

/// Adds to each error about a variable the SQL set where in the SQL it came from.
pub(super) fn annotate(mut errors: ConfigErrors, sql: Option<&Translation>) -> ConfigErrors {
    let Some(t) = sql else {
        return errors;
    };
    for e in &mut errors.0 {
        if let Some(s) = t.settings.get(&e.var) {
            e.message
                .push_str(&format!(" (set by the SQL: `{}` at {})", s.construct, s.at));
        }
    }
    errors
}
