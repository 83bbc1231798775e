//! The plan: what this process does, derived once at start from what the user said (`Config`,
//! the settings) and what the cluster holds (`Facts`: topics and their partition counts). The
//! settings say *what* join; the plan says *how* it runs here: which topic each join input is
//! read from and how it is placed (co-partitioned, broadcast, repartitioned), the internal
//! topics to create and verify, the units of state (tasks), the repartition routers and the
//! worker threads. `sidejoin check` prints it; `sidejoin run` executes it; no runtime code
//! edits or clones the settings to express a decision — it reads the plan.
//!
//! Deriving is pure (`derive`): every start-up check that needs only metadata lives there, so
//! it is tested without Kafka. What needs I/O beyond metadata (the co-partitioning probe, an Avro
//! side's schema, the other side's key placement a router mirrors) is checked by
//! `runtime::startup` against this plan.

mod derive;
mod describe;
mod facts;
mod placement;
mod star;

use std::path::PathBuf;

use sidejoin_core::change::Side;
use sidejoin_core::format::Reading;

pub(crate) use derive::{derive, repartition_topic, worker_plans, PlanError};
pub(crate) use facts::Facts;
pub(crate) use placement::{placements_on_many_partitions, Decision, How};

/// How a join input reaches the tasks (SPEC §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Read through the consumer group: partition `i` of the topic feeds task `i`.
    CoPartitioned,
    /// Every task reads every partition of the topic (`SIDEJOIN_BROADCAST`).
    Broadcast,
    /// Re-keyed by `by` from the side's own topic into the internal repartition topic by a
    /// router (`SIDEJOIN_<SIDE>_HASH_BY`), which the join reads through the group.
    Repartitioned {
        by: Vec<String>,
        own_topic: String,
        own_partitions: i32,
    },
}

/// One join input as the tasks read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Source {
    pub side: Side,
    /// The topic the join reads: the side's own, or its repartition topic.
    pub topic: String,
    pub partitions: i32,
    /// How its records decode: in the side's own format, or as the changes a router wrote.
    pub reading: Reading,
    pub placement: Placement,
    /// Why it is placed so, in words (`check` prints it; SPEC §6).
    pub why: String,
}

impl Source {
    /// Whether the consumer group reads it (not broadcast).
    pub(crate) fn grouped(&self) -> bool {
        self.placement != Placement::Broadcast
    }
}

/// What an internal topic is for, which decides how it is created and what is verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopicKind {
    /// A side's state mirror: compacted, one partition per task (SPEC §7).
    Changelog,
    /// A router's output: no retention (purged below the join's committed offsets), exactly
    /// the partition count the join needs.
    Repartition,
    /// `SIDEJOIN_DLQ_TOPIC`: created with one partition when missing, any count accepted.
    DeadLetter,
}

/// A topic sidejoin creates when missing and verifies when present.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InternalTopic {
    pub name: String,
    pub partitions: i32,
    pub kind: TopicKind,
}

/// Where a router puts the keys of the side it re-keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// sidejoin's own keys and partitioner (the other side is broadcast or repartitioned too).
    Own,
    /// Where the other side's producer puts the same join keys, learnt from its records.
    Mirror { topic: String, partitions: i32 },
}

/// The repartition step of one side (`runtime::router`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RouterPlan {
    pub side: Side,
    /// The side's own topic, read in full by one router of the application.
    pub source_topic: String,
    /// The repartition topic it writes.
    pub topic: String,
    pub partitions: i32,
    /// The columns it re-keys by.
    pub by: Vec<String>,
    pub target: Target,
}

/// One processing thread of this instance (`SIDEJOIN_WORKERS`), as Kafka Streams' stream
/// threads: its own consumer, producers, engine and state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkerPlan {
    pub index: usize,
    /// Its state directory: `SIDEJOIN_STATE_DIR` itself for a single worker (existing volumes
    /// keep working), `<SIDEJOIN_STATE_DIR>/worker-<i>` for each of several.
    pub state_dir: PathBuf,
    /// Its static group membership id (`SIDEJOIN_INSTANCE_ID`, suffixed `-<i>` for several:
    /// ids in a group are unique), which its transactional id follows.
    pub instance_id: Option<String>,
    /// Its share of the instance's state caches and write buffers, MiB.
    pub block_cache_mb: usize,
    pub cache_mb: usize,
    pub write_buffer_mb: usize,
}

/// Where the joined records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OutputPlan {
    pub topic: String,
    pub partitions: i32,
}

/// Everything this process runs, derived once (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Plan {
    /// The join inputs in order: left then right (a star join's fact, then its dimensions).
    pub sources: Vec<Source>,
    pub output: OutputPlan,
    /// Units of join state: the partition count of the grouped sources.
    pub tasks: i32,
    /// The changelog topic of each input (`<app>-<side>-changelog`), in input order, when the
    /// state is durable.
    pub changelogs: Option<Vec<String>>,
    /// The dead-letter topic, when undecodable records go there (`SIDEJOIN_ON_ERROR=dlq`).
    pub dead_letters: Option<String>,
    pub routers: Vec<RouterPlan>,
    pub workers: Vec<WorkerPlan>,
    /// Records' keys are checked against their join keys (co-partitioned inputs of more than
    /// one partition, read in their own format).
    pub checks_keys: bool,
}

impl Plan {
    pub(crate) fn source(&self, side: Side) -> &Source {
        &self.sources[side.index()]
    }

    /// The decoding of each input, in input order (what the pipeline is built with).
    pub(crate) fn readings(&self) -> Vec<Reading> {
        self.sources.iter().map(|s| s.reading).collect()
    }

    /// The broadcast sources, in input order.
    pub(crate) fn broadcasts(&self) -> impl Iterator<Item = &Source> {
        self.sources.iter().filter(|s| !s.grouped())
    }

    /// Every topic sidejoin creates when missing and verifies when present.
    pub(crate) fn internal_topics(&self) -> Vec<InternalTopic> {
        let mut all = Vec::new();
        if let Some(name) = &self.dead_letters {
            all.push(InternalTopic {
                name: name.clone(),
                partitions: 1,
                kind: TopicKind::DeadLetter,
            });
        }
        for r in &self.routers {
            all.push(InternalTopic {
                name: r.topic.clone(),
                partitions: r.partitions,
                kind: TopicKind::Repartition,
            });
        }
        for name in self.changelogs.iter().flatten() {
            all.push(InternalTopic {
                name: name.clone(),
                partitions: self.tasks,
                kind: TopicKind::Changelog,
            });
        }
        all
    }
}
