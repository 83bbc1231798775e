//! The `SIDEJOIN_*` environment as given: every variable a string, read with envy, plus the
//! `SIDEJOIN_KAFKA_*` passthrough and the unknown-variable check (with a suggestion).
//!
//! Nothing here interprets a value; `config::load` validates them one by one.

use std::collections::BTreeMap;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

use super::error::Problems;
use crate::raw_dims::{self, RawDim};
use crate::Side;

pub(crate) const PREFIX: &str = "SIDEJOIN_";
/// `SIDEJOIN_KAFKA_<PROPERTY>` variables are passed to librdkafka.
pub(crate) const KAFKA_PREFIX: &str = "SIDEJOIN_KAFKA_";

/// Every known variable, without its `SIDEJOIN_` prefix, lower-cased (envy's convention). No
/// `Debug`: it holds the registry password.
#[derive(Default, Deserialize)]
pub(crate) struct RawConfig {
    // Kafka and process
    pub bootstrap_servers: Option<String>,
    pub application_id: Option<String>,
    pub instance_id: Option<String>,
    pub left_topic: Option<String>,
    pub right_topic: Option<String>,
    pub output_topic: Option<String>,
    pub http_addr: Option<String>,
    pub state_dir: Option<String>,
    pub state_block_cache_mb: Option<String>,
    pub state_write_buffer_mb: Option<String>,
    pub state_cache_mb: Option<String>,
    pub log_format: Option<String>,
    pub shutdown_timeout: Option<String>,
    pub watchdog_timeout: Option<String>,
    pub workers: Option<String>,
    pub processing_guarantee: Option<String>,
    pub commit_interval: Option<String>,
    pub max_task_idle: Option<String>,
    pub auto_offset_reset: Option<String>,
    pub schema_registry_url: Option<String>,
    pub schema_registry_username: Option<String>,
    pub schema_registry_password: Option<String>,
    pub schema_registry_ca_location: Option<String>,
    pub schema_registry_timeout: Option<String>,
    pub schema_registry_retry_timeout: Option<String>,
    // Join
    pub join_type: Option<String>,
    pub left_key: Option<String>,
    pub right_key: Option<String>,
    pub left_primary_key: Option<String>,
    pub right_primary_key: Option<String>,
    pub left_format: Option<String>,
    pub right_format: Option<String>,
    pub null_keys_match: Option<String>,
    pub select: Option<String>,
    pub allow_generated_retracts: Option<String>,
    pub dedup_left: Option<String>,
    pub dedup_right: Option<String>,
    pub state_ttl: Option<String>,
    pub left_state_ttl: Option<String>,
    pub right_state_ttl: Option<String>,
    // Interval join
    pub interval_lower: Option<String>,
    pub interval_upper: Option<String>,
    pub left_time: Option<String>,
    pub right_time: Option<String>,
    pub watermark_delay: Option<String>,
    pub allowed_lateness: Option<String>,
    pub idle_timeout: Option<String>,
    pub max_wait: Option<String>,
    // Scale-out
    pub left_hash_by: Option<String>,
    pub right_hash_by: Option<String>,
    pub broadcast: Option<String>,
    // Output and errors
    pub output_mode: Option<String>,
    pub output_key: Option<String>,
    pub output_format: Option<String>,
    pub output_avro_schema: Option<String>,
    pub on_error: Option<String>,
    pub on_copartition_violation: Option<String>,
    pub dlq_topic: Option<String>,
    // Flink SQL as configuration: read by `config::sql_source` from the environment before this
    // struct is; listed here so that they are known variables.
    #[allow(dead_code)]
    pub sql: Option<String>,
    #[allow(dead_code)]
    pub sql_file: Option<String>,
    // The csv format
    pub left_columns: Option<String>,
    pub right_columns: Option<String>,
    pub left_csv_field_delimiter: Option<String>,
    pub right_csv_field_delimiter: Option<String>,
    pub left_csv_quote_character: Option<String>,
    pub right_csv_quote_character: Option<String>,
    pub left_csv_disable_quote_character: Option<String>,
    pub right_csv_disable_quote_character: Option<String>,
    pub left_csv_escape_character: Option<String>,
    pub right_csv_escape_character: Option<String>,
    pub left_csv_null_literal: Option<String>,
    pub right_csv_null_literal: Option<String>,
    pub left_csv_ignore_parse_errors: Option<String>,
    pub right_csv_ignore_parse_errors: Option<String>,
    /// A star join's further dimensions (`SIDEJOIN_DIM<N>_*`, `raw_dims.rs`), index 0 = `dim2`;
    /// not envy's fields: read apart from the others.
    #[serde(skip)]
    pub dims: Vec<RawDim>,
}

impl RawConfig {
    /// The csv settings of one input: columns, delimiter, quote, disable-quote, escape, null
    /// literal, ignore-parse-errors.
    pub(crate) fn csv_of(&self, side: Side) -> [&Option<String>; 7] {
        if let Some(d) = self.dim(side) {
            return d.csv();
        }
        if side == Side::Left {
            [
                &self.left_columns,
                &self.left_csv_field_delimiter,
                &self.left_csv_quote_character,
                &self.left_csv_disable_quote_character,
                &self.left_csv_escape_character,
                &self.left_csv_null_literal,
                &self.left_csv_ignore_parse_errors,
            ]
        } else {
            [
                &self.right_columns,
                &self.right_csv_field_delimiter,
                &self.right_csv_quote_character,
                &self.right_csv_disable_quote_character,
                &self.right_csv_escape_character,
                &self.right_csv_null_literal,
                &self.right_csv_ignore_parse_errors,
            ]
        }
    }

    /// The variables of a further dimension (`dim2`…), `None` for the left and right sides.
    pub(crate) fn dim(&self, side: Side) -> Option<&RawDim> {
        side.index()
            .checked_sub(raw_dims::FIRST_DIM)
            .and_then(|i| self.dims.get(i))
    }
}

/// The environment split into known variables and librdkafka properties (no `Debug`: the
/// values may be secrets).
#[derive(Default)]
pub(crate) struct RawEnv {
    pub vars: RawConfig,
    /// `(librdkafka property, value, variable name)`, in variable-name order.
    pub kafka: Vec<(String, String, String)>,
}

/// Names of the fields of a struct, read from its `Deserialize` implementation.
fn field_names<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    struct Probe(&'static [&'static str]);

    impl<'de> Deserializer<'de> for &mut Probe {
        type Error = de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            self.0 = fields;
            Err(de::Error::custom("probed"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
            byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
            identifier ignored_any
        }
    }

    let mut probe = Probe(&[]);
    let _ = T::deserialize(&mut probe);
    probe.0
}

/// Every known variable name, with its prefix (`SIDEJOIN_JOIN_TYPE`, …), the dimensions' last.
pub fn known_vars() -> Vec<String> {
    field_names::<RawConfig>()
        .iter()
        .map(|f| format!("{PREFIX}{}", f.to_ascii_uppercase()))
        .chain(raw_dims::known().into_iter().map(|(_, _, v)| v))
        .collect()
}

/// The known variable closest to `name`, if any is close enough to be a likely typo.
fn nearest(name: &str, known: &[String]) -> Option<String> {
    known
        .iter()
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|(d, k)| *d <= 3.max(k.len() / 4))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k.clone())
}

/// Splits the `SIDEJOIN_*` variables of `env` into known ones and Kafka properties; every unknown
/// variable is a problem.
pub(crate) fn read(
    env: impl IntoIterator<Item = (String, String)>,
    problems: &mut Problems,
) -> RawEnv {
    let known = known_vars();
    let dim_vars: Vec<String> = raw_dims::known().into_iter().map(|(_, _, v)| v).collect();
    let mut ours = BTreeMap::new();
    let mut dims = Vec::new();
    let mut kafka = Vec::new();
    for (name, value) in env {
        if !name.starts_with(PREFIX) {
            continue;
        }
        if let Some(prop) = name.strip_prefix(KAFKA_PREFIX) {
            if prop.is_empty() {
                problems.add(
                    &name,
                    None,
                    "expected SIDEJOIN_KAFKA_<PROPERTY>, e.g. SIDEJOIN_KAFKA_SECURITY_PROTOCOL",
                );
            } else {
                kafka.push((prop.to_ascii_lowercase().replace('_', "."), value, name));
            }
        } else if dim_vars.contains(&name) {
            dims.push((name, value));
        } else if known.contains(&name) {
            ours.insert(name, value);
        } else {
            let hint = match nearest(&name, &known) {
                Some(k) => format!("unknown variable; did you mean {k}?"),
                None => "unknown variable (see docs/src/reference/configuration.md)".to_owned(),
            };
            // The value is not echoed: an unknown variable may hold a secret.
            problems.add(&name, None, hint);
        }
    }
    kafka.sort_by(|a, b| a.2.cmp(&b.2));
    let mut vars = envy::prefixed(PREFIX)
        .from_iter::<_, RawConfig>(ours)
        .unwrap_or_else(|e| {
            problems.add(
                "SIDEJOIN_*",
                None,
                format!("cannot read the environment: {e}"),
            );
            RawConfig::default()
        });
    vars.dims = raw_dims::read(&dims).unwrap_or_else(|e| {
        problems.add(
            "SIDEJOIN_DIM*",
            None,
            format!("cannot read the environment: {e}"),
        );
        Vec::new()
    });
    RawEnv { vars, kafka }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn known_vars_come_from_the_struct() {
        let known = known_vars();
        assert!(known.contains(&"SIDEJOIN_JOIN_TYPE".to_owned()));
        assert!(known.contains(&"SIDEJOIN_DLQ_TOPIC".to_owned()));
        assert!(known.contains(&"SIDEJOIN_DIM7_ON".to_owned()));
        assert!(known.contains(&"SIDEJOIN_DEDUP_DIM2".to_owned()));
        assert!(!known.contains(&"SIDEJOIN_DIMS".to_owned()));
        assert_eq!(known.len(), field_names::<RawConfig>().len() + 6 * 16);
    }

    #[test]
    fn reads_known_and_kafka_vars() {
        let mut p = Problems::default();
        let raw = read(
            env(&[
                ("SIDEJOIN_JOIN_TYPE", "left"),
                ("SIDEJOIN_KAFKA_SECURITY_PROTOCOL", "SASL_SSL"),
                ("PATH", "/bin"),
            ]),
            &mut p,
        );
        assert!(p.is_empty());
        assert_eq!(raw.vars.join_type.as_deref(), Some("left"));
        assert_eq!(raw.kafka[0].0, "security.protocol");
    }

    #[test]
    fn reads_dimension_vars() {
        let mut p = Problems::default();
        let raw = read(
            env(&[
                ("SIDEJOIN_DIM2_KEY", "c1"),
                ("SIDEJOIN_DEDUP_DIM3", "true"),
                ("SIDEJOIN_DIM3_CSV_NULL_LITERAL", "NULL"),
            ]),
            &mut p,
        );
        assert!(p.is_empty());
        let d = &raw.vars.dims;
        assert_eq!(d.len(), 6);
        assert_eq!(d[0].key.as_deref(), Some("c1"));
        assert_eq!(d[1].dedup.as_deref(), Some("true"));
        assert_eq!(d[1].csv_null_literal.as_deref(), Some("NULL"));
        assert!(d[0].is_set() && d[1].is_set() && !d[2].is_set());
        let c = raw.vars.csv_of(Side::at(3).unwrap());
        assert_eq!(c[5].as_deref(), Some("NULL"));
    }

    #[test]
    fn unknown_var_suggests_nearest() {
        let mut p = Problems::default();
        read(env(&[("SIDEJOIN_JION_TYPE", "left")]), &mut p);
        let errs = p.into_result(|| ()).unwrap_err().0;
        assert_eq!(errs[0].var, "SIDEJOIN_JION_TYPE");
        assert!(
            errs[0].message.contains("SIDEJOIN_JOIN_TYPE"),
            "{}",
            errs[0].message
        );
    }
}
