//! The Kafka edge: client configurations (sidejoin's own properties plus the
//! `SIDEJOIN_KAFKA_*` passthrough), topic checks, the consumer context that turns rebalances and
//! statistics into events and metrics, and the Java-compatible partitioner.
//!
//! Nothing here joins: records go in and out as bytes.

pub(crate) mod clients;
pub(crate) mod context;
pub(crate) mod deliveries;
pub(crate) mod flush;
pub(crate) mod native_heap;
pub(crate) mod reach;
pub(crate) mod topic_ids;
pub(crate) mod topics;
pub(crate) mod transactions;

use crate::config::KafkaSpec;

/// An id unlikely to be made twice: the process id and the time in nanoseconds.
pub(crate) fn unique_id() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{nanos:x}", std::process::id())
}

/// A client error as text, with the offending property's value left out: the value may be a
/// secret (a mistyped `sasl.password`, say).
pub(crate) fn redact(e: &rdkafka::error::KafkaError) -> String {
    match e {
        rdkafka::error::KafkaError::ClientConfig(_, desc, key, value) => {
            let desc = if value.is_empty() {
                desc.clone()
            } else {
                desc.replace(value.as_str(), "***")
            };
            format!(
                "SIDEJOIN_KAFKA_{}: librdkafka refused property `{key}`: {desc}",
                key.to_ascii_uppercase().replace('.', "_")
            )
        }
        other => other.to_string(),
    }
}

/// The passthrough property names (values are never shown: they may be secrets).
pub(crate) fn describe_properties(k: &KafkaSpec) -> String {
    let names: Vec<String> = (k.properties.iter().map(|(p, _)| p.clone()))
        .chain(
            k.consumer_properties
                .iter()
                .map(|(p, _)| format!("consumer {p}")),
        )
        .chain(
            k.producer_properties
                .iter()
                .map(|(p, _)| format!("producer {p}")),
        )
        .collect();
    if names.is_empty() {
        "none".to_owned()
    } else {
        names.join(", ")
    }
}
