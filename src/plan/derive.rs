//! Deriving the plan from the settings and the cluster's facts (pure; see `plan`).

use sidejoin_core::change::Side;
use sidejoin_core::config::{Config, OnError};
use sidejoin_core::format::Reading;

use super::placement::{decide_both, Decision, How};
use super::{Facts, OutputPlan, Placement, Plan, RouterPlan, Source, Target, WorkerPlan};

/// Why the settings cannot run against this cluster. Each names what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    /// Input or output topics that do not exist: `(variable, topic)`.
    #[error(
        "{} (create it first; sidejoin creates only its dead-letter and internal topics)",
        .0.iter().map(|(v, t)| format!("{v}: topic `{t}` does not exist")).collect::<Vec<_>>().join("; ")
    )]
    MissingTopics(Vec<(String, String)>),
    /// Two grouped inputs with different partition counts (in a star join: the fact, and a
    /// dimension that is not broadcast, named by `small`).
    #[error(
        "the inputs are not co-partitioned: left topic `{left_topic}` has {left} partitions but {small} topic `{right_topic}` has {right}; \
         a co-partitioned join needs equal partition counts and both topics keyed by the join key: \
         set SIDEJOIN_BROADCAST={small} to give every instance the whole {small} side (a small table), \
         or SIDEJOIN_{small_var}_HASH_BY=$join_key to let sidejoin re-key that side into an internal topic with \
         the other's partition count (adding partitions to a topic instead moves where new records of a \
         key go, not the old ones)",
        small_var = .small.var()
    )]
    NotCoPartitioned {
        left_topic: String,
        left: i32,
        right_topic: String,
        right: i32,
        /// The side with fewer partitions: usually the small one, the one to broadcast.
        small: Side,
    },
    /// An upsert side keyed by a primary key other than the join key, on topics that need
    /// placing: its tombstones carry only the primary key, so they cannot be re-keyed.
    #[error(
        "the {side} topic `{topic}` is an upsert topic keyed by its primary key ({primary_key}), not the join key \
         ({join_key}), so a join key's rows are spread over its partitions; sidejoin cannot re-key it by the \
         join key (a tombstone carries only the primary key): set SIDEJOIN_BROADCAST={other} if the {other} side \
         is the small one, or key the topic by the join key (then SIDEJOIN_{var}_PRIMARY_KEY is the join key)",
        other = .side.other(),
        var = .side.var()
    )]
    CannotRekey {
        side: Side,
        topic: String,
        primary_key: String,
        join_key: String,
    },
}

/// `<side>-changelog`, the suffix of a side's changelog topic after the application id.
pub(super) fn changelog_topic(cfg: &Config, side: Side) -> String {
    format!("{}-{}-changelog", cfg.kafka.application_id, side.name())
}

/// The internal topic a repartitioned side is re-keyed into: `<app>-<side>-repartition`.
pub(crate) fn repartition_topic(cfg: &Config, side: Side) -> String {
    format!("{}-{}-repartition", cfg.kafka.application_id, side.name())
}

/// The plan of `cfg` on the cluster `facts` describes; `durable`: the state is mirrored to
/// changelog topics (`run`; the in-memory and passthrough benchmark modes are not).
pub(crate) fn derive(cfg: &Config, facts: &Facts, durable: bool) -> Result<Plan, PlanError> {
    if cfg.join.is_star() {
        return super::star::derive_star(cfg, facts, durable);
    }
    let own = own_counts(cfg, facts)?;
    let output = OutputPlan {
        topic: cfg.output.topic.clone().unwrap_or_default(),
        partitions: facts
            .partitions(cfg.output.topic.as_deref().unwrap_or_default())
            .unwrap_or(0),
    };
    let decided = decide_both(cfg, own)?;
    let counts = Side::BOTH.map(|s| joined_count(&decided, s, own));
    let both_as_is = decided.iter().all(|d| d.how == How::AsIs);
    if counts[0] != counts[1] && both_as_is {
        let small = if counts[1] < counts[0] {
            Side::Right
        } else {
            Side::Left
        };
        return Err(PlanError::NotCoPartitioned {
            left_topic: cfg.join.topic(Side::Left).to_owned(),
            left: counts[0],
            right_topic: cfg.join.topic(Side::Right).to_owned(),
            right: counts[1],
            small,
        });
    }
    let sources: Vec<Source> = Side::BOTH
        .into_iter()
        .map(|side| source(cfg, side, &decided, own, counts))
        .collect();
    let tasks = match cfg.join.broadcast {
        Some(b) => counts[b.other().index()],
        None => counts[0],
    };
    let checks_keys = cfg.join.broadcast.is_none()
        && tasks > 1
        && sources.iter().any(|s| s.reading == Reading::Own);
    Ok(Plan {
        routers: routers(cfg, &sources, own),
        sources,
        output,
        tasks,
        changelogs: durable.then(|| Side::BOTH.map(|s| changelog_topic(cfg, s)).to_vec()),
        dead_letters: (cfg.process.on_error == OnError::Dlq).then(|| cfg.kafka.dlq_topic.clone()),
        workers: worker_plans(cfg),
        checks_keys,
    })
}

/// The partition counts of the sides' own topics; every input and the output must exist.
fn own_counts(cfg: &Config, facts: &Facts) -> Result<[i32; 2], PlanError> {
    let named = [
        ("SIDEJOIN_LEFT_TOPIC", cfg.join.topic(Side::Left)),
        ("SIDEJOIN_RIGHT_TOPIC", cfg.join.topic(Side::Right)),
        (
            "SIDEJOIN_OUTPUT_TOPIC",
            cfg.output.topic.as_deref().unwrap_or_default(),
        ),
    ];
    let missing: Vec<(String, String)> = named
        .iter()
        .filter(|(_, t)| facts.partitions(t).is_none())
        .map(|(v, t)| ((*v).to_owned(), (*t).to_owned()))
        .collect();
    if !missing.is_empty() {
        return Err(PlanError::MissingTopics(missing));
    }
    Ok(Side::BOTH.map(|s| facts.partitions(cfg.join.topic(s)).unwrap_or(0)))
}

/// The partition count the join reads `side` with: its own topic's, or, re-keyed, its
/// repartition topic's — the other side's count, its own when the other side is broadcast,
/// the larger of the two when both are re-keyed.
fn joined_count(decided: &[Decision; 2], side: Side, own: [i32; 2]) -> i32 {
    let (mine, theirs) = (own[side.index()], own[side.other().index()]);
    match (
        &decided[side.index()].how,
        &decided[side.other().index()].how,
    ) {
        (How::Rekey(_), How::Broadcast) | (How::AsIs | How::Broadcast, _) => mine,
        (How::Rekey(_), How::Rekey(_)) => mine.max(theirs),
        (How::Rekey(_), How::AsIs) => theirs,
    }
}

fn source(
    cfg: &Config,
    side: Side,
    decided: &[Decision; 2],
    own: [i32; 2],
    counts: [i32; 2],
) -> Source {
    let d = &decided[side.index()];
    let (topic, reading, placement) = match &d.how {
        How::Rekey(by) => (
            repartition_topic(cfg, side),
            Reading::Changes,
            Placement::Repartitioned {
                by: by.clone(),
                own_topic: cfg.join.topic(side).to_owned(),
                own_partitions: own[side.index()],
            },
        ),
        How::Broadcast => (
            cfg.join.topic(side).to_owned(),
            Reading::Own,
            Placement::Broadcast,
        ),
        How::AsIs => (
            cfg.join.topic(side).to_owned(),
            Reading::Own,
            Placement::CoPartitioned,
        ),
    };
    Source {
        side,
        topic,
        partitions: counts[side.index()],
        reading,
        placement,
        why: d.why.clone(),
    }
}

fn routers(cfg: &Config, sources: &[Source], own: [i32; 2]) -> Vec<RouterPlan> {
    sources
        .iter()
        .filter_map(|s| match &s.placement {
            Placement::Repartitioned { by, .. } => Some((s, by)),
            _ => None,
        })
        .map(|(s, by)| {
            let other = s.side.other();
            let mirrored = sources[other.index()].placement == Placement::CoPartitioned;
            RouterPlan {
                side: s.side,
                source_topic: cfg.join.topic(s.side).to_owned(),
                topic: s.topic.clone(),
                partitions: s.partitions,
                by: by.clone(),
                target: match mirrored {
                    true => Target::Mirror {
                        topic: cfg.join.topic(other).to_owned(),
                        partitions: own[other.index()],
                    },
                    false => Target::Own,
                },
            }
        })
        .collect()
}

/// One worker is the instance itself (its state in `SIDEJOIN_STATE_DIR`, as before workers
/// existed, so existing volumes keep working); each of several has its own directory and
/// static member id and an even share of the caches and write buffers, which are per instance.
pub(crate) fn worker_plans(cfg: &Config) -> Vec<WorkerPlan> {
    let p = &cfg.process;
    let n = p.workers.max(1);
    let share = |mb: usize| if n == 1 { mb } else { (mb / n).max(1) };
    (0..n)
        .map(|i| WorkerPlan {
            index: i,
            state_dir: match n {
                1 => p.state_dir.clone(),
                _ => p.state_dir.join(format!("worker-{i}")),
            },
            instance_id: match n {
                1 => cfg.kafka.instance_id.clone(),
                _ => cfg.kafka.instance_id.as_ref().map(|id| format!("{id}-{i}")),
            },
            block_cache_mb: share(p.state_block_cache_mb),
            cache_mb: share(p.state_cache_mb),
            write_buffer_mb: share(p.state_write_buffer_mb),
        })
        .collect()
}

#[cfg(test)]
#[path = "derive_tests.rs"]
mod tests;
