//! Every topic sidejoin administers, in one place (SPEC §6–7): waiting until the brokers
//! answer, reading what the cluster holds (`Facts` for planning), and creating or verifying the
//! plan's internal topics — changelogs (compacted, one partition per task), repartition topics
//! (no retention, exactly the partitions the join needs) and the dead-letter topic (created
//! with one partition when missing).
//!
//! What it does not do: decide which topics exist or how many partitions they need (the plan).

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, ResourceSpecifier, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::error::KafkaError;
use rdkafka::metadata::Metadata;
use rdkafka::types::RDKafkaErrorCode;
use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;
use crate::config::KafkaSpec;
use crate::plan::{Facts, InternalTopic, TopicKind};

use super::{clients, reach};

/// Why a topic could not be made fit for the plan.
#[derive(Debug, thiserror::Error)]
pub enum TopicError {
    /// The topic exists but does not fit (a wrong partition count or cleanup policy): the
    /// message says what to change.
    #[error("{0}")]
    Unfit(String),
    #[error("cannot create {what} topic `{topic}`: {error}")]
    NotCreated {
        what: &'static str,
        topic: String,
        error: RDKafkaErrorCode,
    },
    #[error("Kafka: {}", super::redact(.0))]
    Kafka(#[from] KafkaError),
    /// A passthrough property librdkafka does not accept (value redacted).
    #[error("{0}")]
    ClientConfig(String),
    /// The brokers refused sidejoin's credentials or certificate for `reach::REFUSED_FOR`.
    #[error("{0}")]
    Refused(String),
    #[error("stopped while waiting for Kafka")]
    Cancelled,
}

/// Fetches metadata, retrying with backoff (1 s doubling to 30 s) until the brokers answer or
/// `shutdown` is cancelled; the instance stays not ready meanwhile. Brokers that refuse the
/// credentials or the TLS handshake are named as such and, after `reach::REFUSED_FOR` of
/// nothing else, stop the start (`reach` says why).
pub(crate) fn wait_for_brokers(
    kafka: &KafkaSpec,
    shutdown: &CancellationToken,
) -> Result<Metadata, TopicError> {
    let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(30));
    let brokers = kafka.bootstrap_servers.as_deref().unwrap_or_default();
    tracing::info!("connecting to Kafka at {brokers}");
    let mut refused_since = None;
    loop {
        match reach::metadata(kafka) {
            Ok(m) if !m.brokers().is_empty() => return Ok(m),
            // A refused property is not a connection problem: retrying cannot help.
            Err((e @ KafkaError::ClientConfig(..), _)) => {
                return Err(TopicError::ClientConfig(super::redact(&e)))
            }
            Ok(_) => tracing::warn!(
                "Kafka at {brokers} answered without brokers; retrying in {:?}",
                backoff.next()
            ),
            Err((_, Some(refusal))) => {
                let since = *refused_since.get_or_insert_with(Instant::now);
                let why = refusal.describe(brokers);
                if since.elapsed() >= reach::REFUSED_FOR {
                    return Err(TopicError::Refused(format!(
                        "{why}; refused for {:?}, giving up: retrying cannot fix credentials",
                        reach::REFUSED_FOR
                    )));
                }
                tracing::error!(
                    "{why}; not ready; retrying in {:?}, giving up (exit 2) once refused for {:?}",
                    backoff.next(),
                    reach::REFUSED_FOR
                );
            }
            Err((e, None)) => {
                refused_since = None;
                tracing::warn!(
                    "Kafka at {brokers} is unreachable ({e}); not ready; retrying in {:?}",
                    backoff.next()
                );
            }
        }
        if !backoff.wait(shutdown) {
            return Err(TopicError::Cancelled);
        }
    }
}

/// What planning needs of `md`: the topics that exist with their partition counts.
pub(crate) fn facts(md: &Metadata) -> Facts {
    Facts {
        partitions: md
            .topics()
            .iter()
            .filter(|t| t.error().is_none() && !t.partitions().is_empty())
            .map(|t| (t.name().to_owned(), t.partitions().len() as i32))
            .collect(),
        brokers: md.brokers().len(),
    }
}

/// Creates `topic` when `facts` say it is missing, else verifies it fits its kind.
pub(crate) fn ensure(
    kafka: &KafkaSpec,
    facts: &Facts,
    topic: &InternalTopic,
) -> Result<(), TopicError> {
    match facts.partitions(&topic.name) {
        None => create(kafka, facts, topic),
        Some(n) => verify(kafka, topic, n),
    }
}

fn create(kafka: &KafkaSpec, facts: &Facts, topic: &InternalTopic) -> Result<(), TopicError> {
    let admin: AdminClient<DefaultClientContext> = clients::admin(kafka).create()?;
    let replication = facts.brokers.clamp(1, 3) as i32;
    let (name, partitions) = (topic.name.as_str(), topic.partitions);
    let mut new = NewTopic::new(name, partitions, TopicReplication::Fixed(replication));
    let (what, done) = match topic.kind {
        TopicKind::Changelog => {
            // Keep the newest segments uncompacted for a while: cheap, and restores read the
            // recent history as written.
            new = new
                .set("cleanup.policy", "compact")
                .set("min.compaction.lag.ms", "60000");
            (
                "changelog",
                format!("created changelog topic `{name}` ({partitions} partitions, compacted)"),
            )
        }
        TopicKind::Repartition => {
            new = new
                .set("cleanup.policy", "delete")
                .set("retention.ms", "-1");
            (
                "repartition",
                format!("created repartition topic `{name}` ({partitions} partitions)"),
            )
        }
        TopicKind::DeadLetter => (
            "dead-letter",
            format!("created topic `{name}` ({partitions} partitions)"),
        ),
    };
    let results = futures::executor::block_on(admin.create_topics([&new], &AdminOptions::new()))?;
    for r in results {
        match r {
            Ok(_) => tracing::info!("{done}"),
            Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, error)) => {
                return Err(TopicError::NotCreated {
                    what,
                    topic: t,
                    error,
                })
            }
        }
    }
    Ok(())
}

/// An existing internal topic must have the partitions the plan needs (changelog and
/// repartition topics: a record's partition is its task's) and a changelog must be compacted.
fn verify(kafka: &KafkaSpec, topic: &InternalTopic, n: i32) -> Result<(), TopicError> {
    let (name, want) = (&topic.name, topic.partitions);
    match topic.kind {
        TopicKind::DeadLetter => Ok(()),
        TopicKind::Changelog if n != want => Err(TopicError::Unfit(format!(
            "changelog topic `{name}` has {n} partitions but the inputs have {want}: \
             each input partition needs its own changelog partition; delete the topic (the state \
             is rebuilt from the inputs) or use another SIDEJOIN_APPLICATION_ID"
        ))),
        TopicKind::Repartition if n != want => Err(TopicError::Unfit(format!(
            "repartition topic `{name}` has {n} partitions but the join needs {want} (the partition \
             count of the side it meets): stop sidejoin, delete the topic and its router group's offsets \
             (it is rebuilt from the side's topic), or use another SIDEJOIN_APPLICATION_ID"
        ))),
        TopicKind::Repartition => Ok(()),
        TopicKind::Changelog => verify_compacted(kafka, name),
    }
}

fn verify_compacted(kafka: &KafkaSpec, name: &str) -> Result<(), TopicError> {
    let admin: AdminClient<DefaultClientContext> = clients::admin(kafka).create()?;
    let resource = ResourceSpecifier::Topic(name);
    let described =
        futures::executor::block_on(admin.describe_configs([&resource], &AdminOptions::new()))?;
    let policy = described
        .into_iter()
        .flatten()
        .find_map(|r| r.get("cleanup.policy").and_then(|e| e.value.clone()))
        .unwrap_or_default();
    if policy.split(',').any(|p| p.trim() == "compact") {
        return Ok(());
    }
    Err(TopicError::Unfit(format!(
        "changelog topic `{name}` has cleanup.policy={policy}, not compact: retention \
         would delete state; set cleanup.policy=compact on it \
         (kafka-configs --alter --add-config cleanup.policy=compact)"
    )))
}
