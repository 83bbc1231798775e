//! Which settings may hold secrets, and the `Debug` of the types that carry them: a secret
//! value never reaches a log line, `check`'s output, an error message or `{:?}`.
//!
//! The rule is by variable, not by value: every `SIDEJOIN_KAFKA_*` passthrough value is treated
//! as secret (sidejoin cannot know which of librdkafka's properties — `sasl.password`,
//! `ssl.key.pem`, `sasl.oauthbearer.config`, … — hold one, and new ones appear), and so is
//! `SIDEJOIN_SCHEMA_REGISTRY_PASSWORD`. Their names are shown, their values never.

use std::fmt;

use crate::{Config, KafkaSpec};

const REDACTED: &str = "<redacted>";

/// Whether the value of variable `name` may be a secret (and must not be shown).
pub fn is_secret_var(name: &str) -> bool {
    name.starts_with(crate::raw::KAFKA_PREFIX) || name == "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD"
}

/// `(property, value)` pairs shown as `property=<redacted>`.
struct Names<'a>(&'a [(String, String)]);

impl fmt::Debug for Names<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, _)| (k, REDACTED)))
            .finish()
    }
}

/// `(variable, value)` pairs with the secret ones' values replaced.
struct Settings<'a>(&'a [(String, String)]);

impl fmt::Debug for Settings<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if is_secret_var(k) {
                    REDACTED
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}

impl fmt::Debug for KafkaSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KafkaSpec")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("application_id", &self.application_id)
            .field("instance_id", &self.instance_id)
            .field("properties", &Names(&self.properties))
            .field("consumer_properties", &Names(&self.consumer_properties))
            .field("producer_properties", &Names(&self.producer_properties))
            .field("guarantee", &self.guarantee)
            .field("commit_interval_ms", &self.commit_interval_ms)
            .field("max_task_idle_ms", &self.max_task_idle_ms)
            .field("auto_offset_reset", &self.auto_offset_reset)
            .field("registry", &self.registry)
            .field("dlq_topic", &self.dlq_topic)
            .finish()
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Config")
            .field("join", &self.join)
            .field("output", &self.output)
            .field("kafka", &self.kafka)
            .field("process", &self.process)
            .field("warnings", &self.warnings)
            .field("sql_settings", &Settings(&self.sql_settings))
            .finish()
    }
}
