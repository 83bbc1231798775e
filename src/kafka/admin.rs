//! Startup checks against the brokers (SPEC §6–7): wait until Kafka answers (retrying with
//! backoff, the process staying not-ready), check that the input and output topics exist and
//! that the inputs are co-partitioned, and create the dead-letter topic when missing.

use std::time::Duration;

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::metadata::Metadata;
use tokio_util::sync::CancellationToken;

use crate::change::Side;
use crate::config::Config;

/// Why sidejoin cannot start against these brokers.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error("{0}")]
    Topics(String),
    /// A passthrough property librdkafka does not accept (value redacted).
    #[error("{0}")]
    ClientConfig(String),
    #[error("Kafka: {}", super::redact(.0))]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error("stopped while waiting for Kafka")]
    Cancelled,
    /// An input topic is keyed by something other than the join key (the start-up probe,
    /// `SIDEJOIN_ON_COPARTITION_VIOLATION=fail`).
    #[error("{0}")]
    Copartitioning(String),
    /// The schema registry refused sidejoin (credentials, a bad CA file, …).
    #[error("schema registry: {0}")]
    Registry(String),
}

/// Partition counts of the topics sidejoin uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Topology {
    pub left_partitions: i32,
    pub right_partitions: i32,
    pub output_partitions: i32,
    /// Units of join state (`runtime::streams`): the partitions of the side consumed through
    /// the group (both, co-partitioned; the other side's with `SIDEJOIN_BROADCAST`).
    pub tasks: i32,
    /// The partition counts of the sides' own topics, when a side is repartitioned
    /// (`SIDEJOIN_<SIDE>_HASH_BY`: `left_partitions` etc. are then its repartition topic's).
    pub sources: [i32; 2],
}

impl Topology {
    /// One line for logs and `sidejoin check`.
    pub fn describe(&self, cfg: &Config) -> String {
        let (l, r) = (self.left_partitions, self.right_partitions);
        let out = self.output_partitions;
        let rekeyed: Vec<String> = Side::BOTH
            .into_iter()
            .filter(|s| cfg.join.side(*s).hash_by.is_some())
            .map(|s| {
                format!(
                    "; the {s} topic's {} partitions re-keyed into {} (SIDEJOIN_{}_HASH_BY)",
                    self.sources[s.index()],
                    [l, r][s.index()],
                    s.var()
                )
            })
            .collect();
        let rekeyed = rekeyed.concat();
        let line = match cfg.join.broadcast {
            None => format!(
                "topics: left {l} partitions, right {r} partitions (co-partitioned), output {out} partitions"
            ),
            Some(b) => format!(
                "topics: left {l} partitions, right {r} partitions ({b} broadcast: every worker reads all {} of its partitions for each of the {} tasks of the {} side), output {out} partitions",
                if b == Side::Left { l } else { r },
                self.tasks,
                b.other()
            ),
        };
        line + &rekeyed
    }
}

const METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// Fetches cluster metadata once.
pub fn metadata(cfg: &Config) -> Result<Metadata, rdkafka::error::KafkaError> {
    let client: BaseConsumer = super::admin_config(cfg).create()?;
    client.fetch_metadata(None, METADATA_TIMEOUT)
}

/// Fetches metadata, retrying with backoff (1 s doubling to 30 s) until the brokers answer or
/// `shutdown` is cancelled.
pub fn wait_for_brokers(
    cfg: &Config,
    shutdown: &CancellationToken,
) -> Result<Metadata, StartupError> {
    let mut backoff = Duration::from_secs(1);
    let brokers = cfg.kafka.bootstrap_servers.as_deref().unwrap_or_default();
    tracing::info!("connecting to Kafka at {brokers}");
    loop {
        match metadata(cfg) {
            Ok(m) if !m.brokers().is_empty() => return Ok(m),
            // A refused property is not a connection problem: retrying cannot help.
            Err(e @ rdkafka::error::KafkaError::ClientConfig(..)) => {
                return Err(StartupError::ClientConfig(super::redact(&e)))
            }
            Ok(_) => tracing::warn!(
                "Kafka at {brokers} answered without brokers; retrying in {backoff:?}"
            ),
            Err(e) => tracing::warn!(
                "Kafka at {brokers} is unreachable ({e}); not ready; retrying in {backoff:?}"
            ),
        }
        let deadline = std::time::Instant::now() + backoff;
        while std::time::Instant::now() < deadline {
            if shutdown.is_cancelled() {
                return Err(StartupError::Cancelled);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        backoff = (backoff * 2).min(Duration::from_secs(30));
    }
}

fn partitions(md: &Metadata, topic: &str) -> Option<i32> {
    md.topics()
        .iter()
        .find(|t| t.name() == topic && t.error().is_none())
        .map(|t| t.partitions().len() as i32)
        .filter(|n| *n > 0)
}

/// Checks that the topics exist and that the inputs are co-partitioned.
pub fn check_topics(cfg: &Config, md: &Metadata) -> Result<Topology, StartupError> {
    let named = |var: &str, t: &Option<String>| (var.to_owned(), t.clone().unwrap_or_default());
    let topics = [
        named("SIDEJOIN_LEFT_TOPIC", &cfg.join.left.topic),
        named("SIDEJOIN_RIGHT_TOPIC", &cfg.join.right.topic),
        named("SIDEJOIN_OUTPUT_TOPIC", &cfg.output.topic),
    ];
    let missing: Vec<String> = topics
        .iter()
        .filter(|(_, t)| partitions(md, t).is_none())
        .map(|(v, t)| format!("{v}: topic `{t}` does not exist"))
        .collect();
    if !missing.is_empty() {
        return Err(StartupError::Topics(format!(
            "{} (create it first; sidejoin creates only its dead-letter and internal topics)",
            missing.join("; ")
        )));
    }
    let count = |i: usize| partitions(md, &topics[i].1).unwrap_or(0);
    let sources = [count(0), count(1)];
    let (left, right) = repartitioned_counts(cfg, sources[0], sources[1]);
    let topology = Topology {
        left_partitions: left,
        right_partitions: right,
        output_partitions: count(2),
        sources,
        tasks: match cfg.join.broadcast {
            Some(Side::Left) => right,
            _ => left,
        },
    };
    if left != right && cfg.join.broadcast.is_none() {
        // The side with fewer partitions is usually the small one: the one to broadcast.
        let small = if right < left {
            Side::Right
        } else {
            Side::Left
        };
        return Err(StartupError::Topics(format!(
            "the inputs are not co-partitioned: left topic `{}` has {left} partitions but right topic `{}` has {right}; \
             a co-partitioned join needs equal partition counts and both topics keyed by the join key: \
             set SIDEJOIN_BROADCAST={} to give every instance the whole {} side (a small table), \
             or SIDEJOIN_{}_HASH_BY=$join_key to let sidejoin re-key that side into an internal topic with \
             the other's partition count (adding partitions to a topic instead moves where new records of a \
             key go, not the old ones)",
            topics[0].1,
            topics[1].1,
            small.name(),
            small.name(),
            small.var()
        )));
    }
    Ok(topology)
}

/// The partition counts the join sees: a side repartitioned by sidejoin (`SIDEJOIN_<SIDE>_HASH_BY`,
/// still named by its own topic, as in `sidejoin check`) gets the count of its repartition
/// topic: the other side's, its own when the other is broadcast, the larger when both are
/// repartitioned (`runtime::repartition::prepare`).
fn repartitioned_counts(cfg: &Config, left: i32, right: i32) -> (i32, i32) {
    let rekeyed = |side: Side| {
        let s = cfg.join.side(side);
        s.hash_by.is_some() && s.format != crate::config::Format::Repartitioned
    };
    let target = |side: Side, own: i32, other: i32| {
        if !rekeyed(side) || cfg.join.broadcast == Some(side.other()) {
            own
        } else if rekeyed(side.other()) {
            own.max(other)
        } else {
            other
        }
    };
    (
        target(Side::Left, left, right),
        target(Side::Right, right, left),
    )
}

/// Makes sure the changelog `topic` exists, compacted, with one partition per input partition:
/// creates it when missing (SPEC §7), refuses one with another partition count or cleanup
/// policy (its records would restore the wrong partitions, or be deleted by retention).
pub fn ensure_changelog(
    cfg: &Config,
    md: &Metadata,
    topic: &str,
    partitions: i32,
) -> Result<(), StartupError> {
    let admin: AdminClient<DefaultClientContext> = super::admin_config(cfg).create()?;
    match self::partitions(md, topic) {
        None => {
            let replication = md.brokers().len().clamp(1, 3) as i32;
            let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(replication))
                .set("cleanup.policy", "compact")
                // Keep the newest segments uncompacted for a while: cheap, and restores read
                // the recent history as written.
                .set("min.compaction.lag.ms", "60000");
            let results =
                futures::executor::block_on(admin.create_topics([&new], &AdminOptions::new()))?;
            for r in results {
                match r {
                    Ok(_) => tracing::info!(
                        "created changelog topic `{topic}` ({partitions} partitions, compacted)"
                    ),
                    Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {}
                    Err((t, e)) => {
                        return Err(StartupError::Topics(format!(
                            "cannot create changelog topic `{t}`: {e}"
                        )))
                    }
                }
            }
            Ok(())
        }
        Some(n) if n != partitions => Err(StartupError::Topics(format!(
            "changelog topic `{topic}` has {n} partitions but the inputs have {partitions}: \
             each input partition needs its own changelog partition; delete the topic (the state \
             is rebuilt from the inputs) or use another SIDEJOIN_APPLICATION_ID"
        ))),
        Some(_) => {
            let resource = rdkafka::admin::ResourceSpecifier::Topic(topic);
            let described = futures::executor::block_on(
                admin.describe_configs([&resource], &AdminOptions::new()),
            )?;
            let policy = described
                .into_iter()
                .flatten()
                .find_map(|r| r.get("cleanup.policy").and_then(|e| e.value.clone()))
                .unwrap_or_default();
            if policy.split(',').any(|p| p.trim() == "compact") {
                Ok(())
            } else {
                Err(StartupError::Topics(format!(
                    "changelog topic `{topic}` has cleanup.policy={policy}, not compact: retention \
                     would delete state; set cleanup.policy=compact on it \
                     (kafka-configs --alter --add-config cleanup.policy=compact)"
                )))
            }
        }
    }
}

/// Creates `topic` with `partitions` partitions unless it exists.
pub fn ensure_topic(
    cfg: &Config,
    md: &Metadata,
    topic: &str,
    partitions: i32,
) -> Result<(), StartupError> {
    if self::partitions(md, topic).is_some() {
        return Ok(());
    }
    let admin: AdminClient<DefaultClientContext> = super::admin_config(cfg).create()?;
    let replication = md.brokers().len().clamp(1, 3) as i32;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(replication));
    let results = futures::executor::block_on(admin.create_topics([&new], &AdminOptions::new()))?;
    for r in results {
        match r {
            Ok(_) => tracing::info!("created topic `{topic}` ({partitions} partitions)"),
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, e)) => {
                return Err(StartupError::Topics(format!(
                    "cannot create topic `{t}`: {e}"
                )))
            }
        }
    }
    Ok(())
}
