//! Configuration (SPEC §9): `SIDEJOIN_*` variables → raw strings (envy) → a validated `Config`.
//!
//! Every problem is collected and reported together; each names its variable, the bad value and
//! what is expected. Nothing here reads the process environment itself: callers pass the
//! variables in, so tests and `check` see exactly what `run` sees.

mod checks;
mod csv;
mod error;
mod hash_by;
mod join;
mod kafka;
pub mod output;
mod process;
mod raw;
mod raw_dims;
pub mod reference;
mod secrets;
pub mod select;
mod side;
pub mod sql;
mod sql_source;
mod star;
mod star_checks;
mod star_spec;
mod types;
mod values;

pub use error::{ConfigError, ConfigErrors};
pub use hash_by::HashBy;
pub use output::{key_uniqueness, update_sources};
pub use raw::known_vars;
pub use secrets::is_secret_var;
pub use side::{Side, MAX_SOURCES};
pub use star_spec::DimensionSpec;
pub use types::*;

use error::Problems;
use values::{parse_bool, parse_duration_ms};

/// What the configuration is for; `run` needs Kafka settings that replay does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Run,
    Replay,
    Check,
}

/// Librdkafka properties sidejoin sets itself (SPEC §9).
pub const OWNED_KAFKA_PROPERTIES: [&str; 7] = [
    "group.id",
    "group.instance.id",
    "enable.auto.commit",
    "enable.auto.offset.store",
    "isolation.level",
    "partitioner",
    "transactional.id",
];

fn var(name: &str) -> String {
    format!("SIDEJOIN_{name}")
}

/// Parses an optional variable, recording a problem when it is set but invalid.
fn opt<T>(
    p: &mut Problems,
    value: &Option<String>,
    parse: impl FnOnce(&str) -> Result<T, ConfigError>,
) -> Option<T> {
    value.as_deref().and_then(|v| p.take(parse(v)))
}

fn duration(p: &mut Problems, name: &str, value: &Option<String>, default: i64) -> i64 {
    let v = var(name);
    opt(p, value, |s| parse_duration_ms(&v, s, false)).unwrap_or(default)
}

fn boolean(p: &mut Problems, name: &str, value: &Option<String>, default: bool) -> bool {
    let v = var(name);
    opt(p, value, |s| parse_bool(&v, s)).unwrap_or(default)
}

/// Validates the `SIDEJOIN_*` variables among `env` for `mode`.
pub fn load(
    env: impl IntoIterator<Item = (String, String)>,
    mode: Mode,
) -> Result<Config, ConfigErrors> {
    let mut p = Problems::default();
    // SQL first: it becomes variables, which are then validated like any others.
    let sql_source::Merged { env, sql } = sql_source::merge(env.into_iter().collect())?;
    let raw::RawEnv { vars: raw, kafka } = raw::read(env, &mut p);

    let mut join = join::join_spec(&mut p, &raw);
    join.aliases = sql.as_ref().map(|t| t.aliases.clone()).unwrap_or_default();
    let mut warnings = sql.as_ref().map(|t| t.warnings.clone()).unwrap_or_default();
    join.interval = checks::interval(&mut p, &raw, &join, &mut warnings);
    checks::sides(&mut p, &join);
    star_checks::star(&mut p, &raw, &join);

    let output = output::output_spec(&mut p, &raw, &join, &mut warnings);

    let kafka = kafka::kafka_spec(&mut p, &raw, kafka, &mut warnings);
    let process = process::process_spec(&mut p, &raw);
    if mode == Mode::Run {
        checks::run_requirements(&mut p, &raw, &join, &output);
    }
    let sql_settings = sql_settings(sql.as_ref());
    p.into_result(|| Config {
        join,
        output,
        kafka,
        process,
        warnings,
        sql_settings,
    })
    .map_err(|e| sql_source::annotate(e, sql.as_ref()))
}

/// The settings the SQL stood for, as `(variable, value)`, in the order `check` prints them.
fn sql_settings(sql: Option<&sql::Translation>) -> Vec<(String, String)> {
    sql.map(|t| {
        t.settings
            .items
            .iter()
            .map(|s| (s.var.clone(), s.value.clone()))
            .collect()
    })
    .unwrap_or_default()
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "star_tests.rs"]
mod star_tests;
