//! Configuration (SPEC §9): `SIDEJOIN_*` variables → raw strings (envy) → a validated `Config`.
//!
//! Every problem is collected and reported together; each names its variable, the bad value and
//! what is expected. Nothing here reads the process environment itself: callers pass the
//! variables in, so tests and `check` see exactly what `run` sees.

mod checks;
mod csv;
mod error;
mod kafka;
pub mod output;
mod process;
mod raw;
pub mod reference;
pub mod select;
mod side;
pub mod sql;
mod sql_source;
mod types;
mod values;

pub use error::{ConfigError, ConfigErrors};
pub use output::{key_uniqueness, update_sources};
pub use raw::known_vars;
pub use side::Side;
pub use types::*;

use error::Problems;
use raw::RawConfig;
use values::{parse_bool, parse_columns, parse_duration_ms, parse_enum};

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

fn side_spec(p: &mut Problems, raw: &RawConfig, side: Side, default_ttl: i64) -> SideSpec {
    let (key, pk, format, dedup, ttl, time, hash_by, topic) = match side {
        Side::Left => (
            &raw.left_key,
            &raw.left_primary_key,
            &raw.left_format,
            &raw.dedup_left,
            &raw.left_state_ttl,
            &raw.left_time,
            &raw.left_hash_by,
            &raw.left_topic,
        ),
        Side::Right => (
            &raw.right_key,
            &raw.right_primary_key,
            &raw.right_format,
            &raw.dedup_right,
            &raw.right_state_ttl,
            &raw.right_time,
            &raw.right_hash_by,
            &raw.right_topic,
        ),
    };
    let s = side.var();
    let key_var = var(&format!("{s}_KEY"));
    let key = match key {
        Some(v) => p.take(parse_columns(&key_var, v)).unwrap_or_default(),
        None => {
            p.add(
                &key_var,
                None,
                "required: the join key column(s) of this side, comma-separated",
            );
            Vec::new()
        }
    };
    let pk_var = var(&format!("{s}_PRIMARY_KEY"));
    let primary_key = opt(p, pk, |v| parse_columns(&pk_var, v));
    let format_var = var(&format!("{s}_FORMAT"));
    let format =
        opt(p, format, |v| parse_enum(&format_var, v, &Format::CHOICES)).unwrap_or(Format::Json);
    let time = match time.as_deref().map(str::trim) {
        None | Some("$timestamp") => TimeSource::RecordTimestamp,
        Some(c) if !c.is_empty() && !c.contains(',') => TimeSource::Column(c.to_owned()),
        Some(_) => {
            p.add(
                var(&format!("{s}_TIME")),
                time.as_deref(),
                "expected one column name, or $timestamp for the Kafka record timestamp",
            );
            TimeSource::RecordTimestamp
        }
    };
    let hash_var = var(&format!("{s}_HASH_BY"));
    let hash_by = opt(p, hash_by, |v| match v.trim() {
        "$join_key" => Ok(key.clone()),
        v => parse_columns(&hash_var, v),
    });
    SideSpec {
        side,
        key,
        primary_key,
        format,
        dedup: boolean(p, &format!("DEDUP_{s}"), dedup, false),
        ttl_ms: duration(p, &format!("{s}_STATE_TTL"), ttl, default_ttl),
        time,
        hash_by,
        topic: topic.clone(),
        csv: csv::csv_spec(p, raw, side, format),
    }
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

    let join_type = opt(&mut p, &raw.join_type, |v| {
        parse_enum("SIDEJOIN_JOIN_TYPE", v, &JoinType::CHOICES)
    })
    .unwrap_or(JoinType::Inner);
    let default_ttl = duration(&mut p, "STATE_TTL", &raw.state_ttl, 0);
    let left = side_spec(&mut p, &raw, Side::Left, default_ttl);
    let right = side_spec(&mut p, &raw, Side::Right, default_ttl);
    let select = match &raw.select {
        Some(v) => p
            .take(select::parse_select(v))
            .unwrap_or_else(select::default_select),
        None => select::default_select(),
    };
    let broadcast = opt(&mut p, &raw.broadcast, |v| {
        parse_enum(
            "SIDEJOIN_BROADCAST",
            v,
            &[("left", Side::Left), ("right", Side::Right)],
        )
    });
    let mut join = JoinSpec {
        join_type,
        left,
        right,
        null_keys_match: boolean(&mut p, "NULL_KEYS_MATCH", &raw.null_keys_match, false),
        allow_generated_retracts: boolean(
            &mut p,
            "ALLOW_GENERATED_RETRACTS",
            &raw.allow_generated_retracts,
            true,
        ),
        select,
        interval: None,
        broadcast,
    };
    let mut warnings = sql.as_ref().map(|t| t.warnings.clone()).unwrap_or_default();
    join.interval = checks::interval(&mut p, &raw, &join, &mut warnings);
    checks::sides(&mut p, &join);

    let output = output::output_spec(&mut p, &raw, &join, &mut warnings);

    let kafka = kafka::kafka_spec(&mut p, &raw, kafka);
    let process = process::process_spec(&mut p, &raw);
    if mode == Mode::Run {
        checks::run_requirements(&mut p, &raw, &join, &output);
    }
    let sql_settings = sql
        .as_ref()
        .map(|t| {
            t.settings
                .items
                .iter()
                .map(|s| (s.var.clone(), s.value.clone()))
                .collect()
        })
        .unwrap_or_default();
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

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
