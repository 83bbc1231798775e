//! Configuration (SPEC §9): `SIDEJOIN_*` variables → raw strings (envy) → a validated `Config`.
//!
//! Every problem is collected and reported together; each names its variable, the bad value and
//! what is expected. Nothing here reads the process environment itself: callers pass the
//! variables in, so tests and `check` see exactly what `run` sees.

mod checks;
mod csv;
mod error;
pub mod output;
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

use std::net::SocketAddr;

use error::Problems;
use raw::RawConfig;
use values::{parse_bool, parse_columns, parse_duration_ms, parse_enum, parse_positive};

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

/// `SIDEJOIN_SCHEMA_REGISTRY_*`: the registry, when its URL is set (the others need it).
fn registry(p: &mut Problems, raw: &RawConfig) -> Option<RegistrySpec> {
    let timeout_ms = duration(
        p,
        "SCHEMA_REGISTRY_TIMEOUT",
        &raw.schema_registry_timeout,
        10_000,
    );
    let Some(url) = raw.schema_registry_url.as_deref().map(str::trim) else {
        for (name, v) in [
            (
                "SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
                &raw.schema_registry_username,
            ),
            (
                "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
                &raw.schema_registry_password,
            ),
            (
                "SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION",
                &raw.schema_registry_ca_location,
            ),
        ] {
            if v.is_some() {
                p.add(name, None, "needs SIDEJOIN_SCHEMA_REGISTRY_URL");
            }
        }
        return None;
    };
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    let host = url.split_once("://").map_or("", |(_, rest)| rest);
    if !scheme_ok || host.is_empty() {
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            Some(url),
            "expected an http:// or https:// URL, e.g. http://registry:8081",
        );
    } else if host.split('/').next().unwrap_or_default().contains('@') {
        // Credentials in the URL would end up in logs; they have their own variables.
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            None,
            "must not hold credentials: use SIDEJOIN_SCHEMA_REGISTRY_USERNAME/_PASSWORD",
        );
    }
    if raw.schema_registry_password.is_some() && raw.schema_registry_username.is_none() {
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
            None,
            "needs SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
        );
    }
    if timeout_ms <= 0 {
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT",
            raw.schema_registry_timeout.as_deref(),
            "must be positive, e.g. 10s",
        );
    }
    Some(RegistrySpec {
        url: url.to_owned(),
        username: raw.schema_registry_username.clone(),
        password: raw.schema_registry_password.clone(),
        ca_location: raw.schema_registry_ca_location.clone(),
        timeout_ms,
    })
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

fn http_addr(p: &mut Problems, raw: &RawConfig) -> SocketAddr {
    let default: SocketAddr = "0.0.0.0:9464".parse().expect("valid literal address");
    opt(p, &raw.http_addr, |v| {
        v.trim().parse::<SocketAddr>().map_err(|_| {
            ConfigError::new(
                "SIDEJOIN_HTTP_ADDR",
                Some(v),
                "expected host:port, e.g. 0.0.0.0:9464 (port 0 picks a free port)",
            )
        })
    })
    .unwrap_or(default)
}

/// A static group member's id (`group.instance.id`): what Kafka accepts for it, 1–249 of
/// `[A-Za-z0-9._-]` (a Kubernetes pod name is one).
/// The most worker threads one instance runs.
const MAX_WORKERS: usize = 256;

/// `SIDEJOIN_WORKERS`: 1 to `MAX_WORKERS`.
fn parse_workers(v: &str) -> Result<usize, ConfigError> {
    let n = parse_positive("SIDEJOIN_WORKERS", v)?;
    if n > MAX_WORKERS {
        return Err(ConfigError::new(
            "SIDEJOIN_WORKERS",
            Some(v),
            format!("expected at most {MAX_WORKERS} worker threads"),
        ));
    }
    Ok(n)
}

/// The default `SIDEJOIN_WORKERS`: the cores available to the process.
fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WORKERS)
}

fn parse_instance_id(v: &str) -> Result<String, ConfigError> {
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if v.is_empty() || v.len() > 249 || !v.chars().all(legal) {
        return Err(ConfigError::new(
            "SIDEJOIN_INSTANCE_ID",
            Some(v),
            "expected 1 to 249 characters of A-Z, a-z, 0-9, '.', '_' and '-' (e.g. the pod name)",
        ));
    }
    Ok(v.to_owned())
}

/// Passthrough properties: `(every client, consumer only, producer only)`. A property that
/// starts with `consumer.` or `producer.` (`SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS`) is for
/// that client alone; librdkafka has no property of its own with either prefix.
type KafkaProperties = (
    Vec<(String, String)>,
    Vec<(String, String)>,
    Vec<(String, String)>,
);

fn kafka_properties(p: &mut Problems, props: Vec<(String, String, String)>) -> KafkaProperties {
    let mut out: KafkaProperties = Default::default();
    for (prop, value, name) in props {
        let (list, bare) = if let Some(bare) = prop.strip_prefix("consumer.") {
            (&mut out.1, bare)
        } else if let Some(bare) = prop.strip_prefix("producer.") {
            (&mut out.2, bare)
        } else {
            (&mut out.0, prop.as_str())
        };
        if bare.is_empty() {
            p.add(
                &name,
                None,
                "expected SIDEJOIN_KAFKA_CONSUMER_<PROPERTY> or SIDEJOIN_KAFKA_PRODUCER_<PROPERTY>",
            );
        } else if OWNED_KAFKA_PROPERTIES.contains(&bare) {
            // The value is not echoed: passthrough values may be secrets.
            p.add(
                &name,
                None,
                format!("`{bare}` is set by sidejoin itself and cannot be overridden"),
            );
        } else {
            list.push((bare.to_owned(), value));
        }
    }
    out
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

    let application_id = raw
        .application_id
        .clone()
        .unwrap_or_else(|| "sidejoin".to_owned());
    let (properties, consumer_properties, producer_properties) = kafka_properties(&mut p, kafka);
    let kafka = KafkaSpec {
        bootstrap_servers: raw.bootstrap_servers.clone(),
        dlq_topic: raw
            .dlq_topic
            .clone()
            .unwrap_or_else(|| format!("{application_id}.dlq")),
        application_id,
        instance_id: opt(&mut p, &raw.instance_id, parse_instance_id),
        properties,
        consumer_properties,
        producer_properties,
        guarantee: opt(&mut p, &raw.processing_guarantee, |v| {
            parse_enum(
                "SIDEJOIN_PROCESSING_GUARANTEE",
                v,
                &[
                    ("at_least_once", Guarantee::AtLeastOnce),
                    ("exactly_once", Guarantee::ExactlyOnce),
                ],
            )
        })
        .unwrap_or(Guarantee::AtLeastOnce),
        commit_interval_ms: duration(&mut p, "COMMIT_INTERVAL", &raw.commit_interval, 100),
        max_task_idle_ms: duration(&mut p, "MAX_TASK_IDLE", &raw.max_task_idle, 1_000),
        auto_offset_reset: opt(&mut p, &raw.auto_offset_reset, |v| {
            parse_enum(
                "SIDEJOIN_AUTO_OFFSET_RESET",
                v,
                &[
                    ("earliest", OffsetReset::Earliest),
                    ("latest", OffsetReset::Latest),
                ],
            )
        })
        .unwrap_or(OffsetReset::Earliest),
        registry: registry(&mut p, &raw),
    };
    let process = ProcessSpec {
        http_addr: http_addr(&mut p, &raw),
        state_dir: raw
            .state_dir
            .clone()
            .unwrap_or_else(|| "./sidejoin-state".to_owned())
            .into(),
        state_block_cache_mb: opt(&mut p, &raw.state_block_cache_mb, |v| {
            parse_positive("SIDEJOIN_STATE_BLOCK_CACHE_MB", v)
        })
        .unwrap_or(128),
        state_cache_mb: opt(&mut p, &raw.state_cache_mb, |v| {
            parse_positive("SIDEJOIN_STATE_CACHE_MB", v)
        })
        .unwrap_or(128),
        state_write_buffer_mb: opt(&mut p, &raw.state_write_buffer_mb, |v| {
            parse_positive("SIDEJOIN_STATE_WRITE_BUFFER_MB", v)
        })
        .unwrap_or(64),
        log_format: opt(&mut p, &raw.log_format, |v| {
            parse_enum(
                "SIDEJOIN_LOG_FORMAT",
                v,
                &[("text", LogFormat::Text), ("json", LogFormat::Json)],
            )
        })
        .unwrap_or(LogFormat::Text),
        shutdown_timeout_ms: duration(&mut p, "SHUTDOWN_TIMEOUT", &raw.shutdown_timeout, 30_000),
        workers: opt(&mut p, &raw.workers, parse_workers).unwrap_or_else(default_workers),
        worker: 0,
        on_error: opt(&mut p, &raw.on_error, |v| {
            parse_enum(
                "SIDEJOIN_ON_ERROR",
                v,
                &[
                    ("dlq", OnError::Dlq),
                    ("fail", OnError::Fail),
                    ("skip", OnError::Skip),
                ],
            )
        })
        .unwrap_or(OnError::Dlq),
        on_copartition_violation: opt(&mut p, &raw.on_copartition_violation, |v| {
            parse_enum(
                "SIDEJOIN_ON_COPARTITION_VIOLATION",
                v,
                &[("warn", OnViolation::Warn), ("fail", OnViolation::Fail)],
            )
        })
        .unwrap_or(OnViolation::Warn),
    };
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
mod tests {
    use super::*;

    fn load_vars(pairs: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
        load(
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            Mode::Replay,
        )
    }

    #[test]
    fn minimal_config_has_defaults() {
        let c = load_vars(&[("SIDEJOIN_LEFT_KEY", "id"), ("SIDEJOIN_RIGHT_KEY", "id")]).unwrap();
        assert_eq!(c.join.join_type, JoinType::Inner);
        assert!(c.join.allow_generated_retracts);
        assert_eq!(c.output.mode, OutputMode::Changelog);
        assert_eq!(c.kafka.dlq_topic, "sidejoin.dlq");
        assert_eq!(c.process.http_addr.port(), 9464);
        assert_eq!(c.output.key[0].name, "id");
    }

    #[test]
    fn instance_id_takes_what_kafka_accepts() {
        let base = [("SIDEJOIN_LEFT_KEY", "id"), ("SIDEJOIN_RIGHT_KEY", "id")];
        let with = |id: &str| load_vars(&[base[0], base[1], ("SIDEJOIN_INSTANCE_ID", id)]);
        let c = with("sidejoin-0").unwrap();
        assert_eq!(c.kafka.instance_id.as_deref(), Some("sidejoin-0"));
        assert_eq!(load_vars(&base).unwrap().kafka.instance_id, None);
        for bad in ["", "pod/0", "a b", &"x".repeat(250)] {
            let e = with(bad).unwrap_err();
            assert_eq!(e.0[0].var, "SIDEJOIN_INSTANCE_ID", "{bad:?}");
            assert!(e.0[0].message.contains("1 to 249 characters"), "{}", e.0[0]);
        }
        let e =
            load_vars(&[base[0], base[1], ("SIDEJOIN_KAFKA_GROUP_INSTANCE_ID", "x")]).unwrap_err();
        assert_eq!(e.0[0].var, "SIDEJOIN_KAFKA_GROUP_INSTANCE_ID");
    }

    #[test]
    fn kafka_properties_for_one_client_are_apart() {
        let c = load_vars(&[
            ("SIDEJOIN_LEFT_KEY", "id"),
            ("SIDEJOIN_RIGHT_KEY", "id"),
            ("SIDEJOIN_KAFKA_SECURITY_PROTOCOL", "ssl"),
            ("SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", "6000"),
            ("SIDEJOIN_KAFKA_PRODUCER_COMPRESSION_TYPE", "lz4"),
        ])
        .unwrap();
        let pairs = |v: &[(String, String)]| {
            v.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(pairs(&c.kafka.properties), ["security.protocol=ssl"]);
        assert_eq!(
            pairs(&c.kafka.consumer_properties),
            ["session.timeout.ms=6000"]
        );
        assert_eq!(
            pairs(&c.kafka.producer_properties),
            ["compression.type=lz4"]
        );
        for (var, problem) in [
            ("SIDEJOIN_KAFKA_CONSUMER_GROUP_ID", "set by sidejoin itself"),
            (
                "SIDEJOIN_KAFKA_PRODUCER_TRANSACTIONAL_ID",
                "set by sidejoin itself",
            ),
            (
                "SIDEJOIN_KAFKA_CONSUMER_",
                "SIDEJOIN_KAFKA_CONSUMER_<PROPERTY>",
            ),
        ] {
            let e = load_vars(&[
                ("SIDEJOIN_LEFT_KEY", "id"),
                ("SIDEJOIN_RIGHT_KEY", "id"),
                (var, "x"),
            ])
            .unwrap_err();
            assert_eq!(e.0[0].var, var);
            assert!(e.0[0].message.contains(problem), "{}", e.0[0]);
        }
    }

    #[test]
    fn owned_kafka_property_is_refused_without_echoing_the_value() {
        let e = load_vars(&[
            ("SIDEJOIN_LEFT_KEY", "id"),
            ("SIDEJOIN_RIGHT_KEY", "id"),
            ("SIDEJOIN_KAFKA_GROUP_ID", "secret-ish"),
        ])
        .unwrap_err();
        assert_eq!(e.0[0].var, "SIDEJOIN_KAFKA_GROUP_ID");
        assert!(!e.to_string().contains("secret-ish"));
    }
}
