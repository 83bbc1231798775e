//! The Kafka edge: client configurations (sidejoin's own properties plus the
//! `SIDEJOIN_KAFKA_*` passthrough), topic checks, the consumer context that turns rebalances and
//! statistics into events and metrics, and the Java-compatible partitioner.
//!
//! Nothing here joins: records go in and out as bytes.

pub mod admin;
pub mod context;
pub mod deliveries;
pub mod partitioner;

use rdkafka::ClientConfig;

use crate::config::{Config, OffsetReset};

/// Properties every client gets: brokers, a client id, sidejoin's `defaults` for the role, then
/// the user's passthrough properties (which may override the defaults): the shared ones, then
/// `own`, the role's.
fn common(
    cfg: &Config,
    role: &str,
    defaults: &[(&str, &str)],
    own: &[(String, String)],
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set(
        "bootstrap.servers",
        cfg.kafka.bootstrap_servers.as_deref().unwrap_or_default(),
    );
    c.set("client.id", format!("{}-{role}", cfg.kafka.application_id));
    for (k, v) in defaults {
        c.set(*k, *v);
    }
    for (k, v) in cfg.kafka.properties.iter().chain(own) {
        c.set(k, v);
    }
    c
}

/// Consumer defaults: fetches of 4 MiB per partition (librdkafka's 1 MiB leaves a fast consumer
/// waiting on fetch round trips: half the throughput on a local broker) and at most 16 MiB
/// prefetched per partition (librdkafka: 64 MiB), which bounds memory.
const CONSUMER_DEFAULTS: [(&str, &str); 2] = [
    ("max.partition.fetch.bytes", "4194304"),
    ("queued.max.messages.kbytes", "16384"),
];

/// Producer defaults: batches of up to 5 ms (librdkafka's default).
const PRODUCER_DEFAULTS: [(&str, &str); 1] = [("linger.ms", "5")];

/// The group consumer of both input topics: range assignment (partition i of both topics on one
/// member), manual offset storage and commits, read_committed; a static member when
/// `SIDEJOIN_INSTANCE_ID` is set (a restart within the session timeout gets its partitions back
/// without a rebalance, as Kafka Streams' `group.instance.id`).
pub fn consumer_config(cfg: &Config) -> ClientConfig {
    let mut c = common(
        cfg,
        "consumer",
        &CONSUMER_DEFAULTS,
        &cfg.kafka.consumer_properties,
    );
    if let Some(id) = &cfg.kafka.instance_id {
        c.set("group.instance.id", id);
    }
    c.set("group.id", &cfg.kafka.application_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("isolation.level", "read_committed")
        .set("partition.assignment.strategy", "range")
        .set("statistics.interval.ms", "1000")
        .set(
            "auto.offset.reset",
            match cfg.kafka.auto_offset_reset {
                OffsetReset::Earliest => "earliest",
                OffsetReset::Latest => "latest",
            },
        );
    c
}

/// The idempotent producer of output (and dead-letter) records. Keyed records get an explicit
/// partition from `partitioner`; keyless ones use librdkafka's `murmur2_random` (random).
pub fn producer_config(cfg: &Config) -> ClientConfig {
    let mut c = common(
        cfg,
        "producer",
        &PRODUCER_DEFAULTS,
        &cfg.kafka.producer_properties,
    );
    c.set("enable.idempotence", "true")
        .set("acks", "all")
        .set("partitioner", "murmur2_random");
    c
}

/// A plain client for metadata and topic creation.
pub fn admin_config(cfg: &Config) -> ClientConfig {
    common(cfg, "admin", &[], &[])
}

/// A client error as text, with the offending property's value left out: the value may be a
/// secret (a mistyped `sasl.password`, say).
pub fn redact(e: &rdkafka::error::KafkaError) -> String {
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
pub fn describe_properties(cfg: &Config) -> String {
    let k = &cfg.kafka;
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
