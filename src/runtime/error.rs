//! Why `sidejoin run` stops: typed errors, each naming what went wrong and, where the user must
//! act, what to change; and the exit code each maps to (2: the configuration or the topics
//! must change, as for a configuration error; 1: anything else).

use crate::change::Side;
use crate::kafka::topics::TopicError;
use crate::kafka::transactions::TxnError;
use crate::plan::PlanError;

/// Why sidejoin cannot start against this cluster.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The settings do not fit the topics (missing topics, unequal partition counts).
    #[error(transparent)]
    Plan(#[from] PlanError),
    /// An internal topic could not be made fit, or a passthrough property was refused.
    #[error(transparent)]
    Topic(#[from] TopicError),
    /// Something the user must change, found by a start-up check beyond metadata (a router's
    /// placement, an Avro side without the hashed columns, state of another topology).
    #[error("{0}")]
    Refused(String),
    /// An input topic is keyed by something other than the join key (the start-up probe,
    /// `SIDEJOIN_ON_COPARTITION_VIOLATION=fail`).
    #[error("{0}")]
    Copartitioning(String),
    /// The schema registry refused sidejoin (credentials, a bad CA file, …): the configuration's
    /// to fix (exit 2); an unreachable registry is waited for instead.
    #[error("schema registry: {0}")]
    Registry(#[from] crate::avro::AvroSetupError),
    #[error("Kafka: {}", crate::kafka::redact(.0))]
    Kafka(#[from] rdkafka::error::KafkaError),
}

impl StartupError {
    /// 2 for what the configuration or the topics must change, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            StartupError::Plan(_)
            | StartupError::Refused(_)
            | StartupError::Copartitioning(_)
            | StartupError::Registry(_) => 2,
            StartupError::Topic(
                TopicError::Unfit(_) | TopicError::ClientConfig(_) | TopicError::Refused(_),
            ) => 2,
            _ => 1,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error("Kafka: {}", crate::kafka::redact(.0))]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error(
        "cannot decode the {side} record at topic {topic} partition {partition} offset {offset}: {error} \
         (SIDEJOIN_ON_ERROR=fail; the records before it are committed, a restart resumes at it)"
    )]
    Failed {
        topic: String,
        partition: i32,
        offset: i64,
        side: Side,
        error: String,
    },
    #[error(
        "the {side} record at topic {topic} partition {partition} offset {offset} is not co-partitioned: {why}; {fix} \
         (SIDEJOIN_ON_COPARTITION_VIOLATION=fail; the records before it are committed, a restart resumes at it)"
    )]
    Copartition {
        topic: String,
        partition: i32,
        offset: i64,
        side: Side,
        why: String,
        fix: String,
    },
    #[error(
        "an output record could not be delivered: {0}; nothing after the last commit is committed"
    )]
    Delivery(String),
    #[error("shutdown did not finish within SIDEJOIN_SHUTDOWN_TIMEOUT ({0} ms)")]
    ShutdownTimeout(i64),
    #[error("cannot serve HTTP on SIDEJOIN_HTTP_ADDR: {0}")]
    Http(std::io::Error),
    /// The join state cannot be read or written (the disk, a corrupt value).
    #[error("state: {0}")]
    State(#[from] crate::engine::state::StateError),
    /// A state directory that cannot be used.
    #[error("SIDEJOIN_STATE_DIR: {0}")]
    StateDir(String),
    /// A changelog topic was deleted, or deleted and created again, under this running
    /// instance (`durable::identity`): its state no longer has a changelog.
    #[error(
        "changelog topic `{topic}` was replaced under this instance (topic ID {was}, now {now}): \
         the state it mirrored is gone from Kafka; on restart the local state is discarded and \
         restored from what the topic holds now"
    )]
    ChangelogReplaced {
        topic: String,
        was: String,
        now: String,
    },
    /// A changelog topic that cannot be restored from.
    #[error("restore: {0}")]
    Restore(String),
    /// The consumer can no longer work, e.g. fenced by another instance with the same
    /// `SIDEJOIN_INSTANCE_ID`.
    #[error("the consumer failed fatally: {0}")]
    ConsumerFatal(String),
    #[error("the processing thread panicked: {0}")]
    Panicked(String),
    /// A checkpoint transaction failed for good (the producer cannot go on: fenced).
    #[error("checkpoint transaction: {0}")]
    Transaction(#[from] TxnError),
    /// A checkpoint transaction was aborted: what it held is dropped and the partitions are
    /// restored from what was committed (handled by the run loop, never returned by `run`).
    #[error("checkpoint transaction aborted: {0}")]
    Aborted(String),
    /// Shutdown came while newly assigned partitions were being restored: nothing was
    /// processed since the revoke before it committed (handled by the run loop as a clean
    /// stop, never returned by `run`).
    #[error("stopped while restoring")]
    StoppedRestoring,
}

impl RunError {
    /// The process exit code: 2 for what the configuration must change (topics that do not
    /// exist or do not fit the join, a Kafka property librdkafka refuses), as for a
    /// configuration error; 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Startup(e) => e.exit_code(),
            _ => 1,
        }
    }
}
