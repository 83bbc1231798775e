//! Deriving the plan of a star join (SPEC §14): the fact is read through the consumer group and
//! its partitions are the tasks; each dimension is broadcast (every task reads all of it) or
//! co-partitioned with the fact (partition `i` feeds task `i`: the same partition count, keyed by
//! the fact's key). Each input has its own changelog. Re-keying a star join's inputs
//! (`HASH_BY`) is not planned: the settings refuse it.

use sidejoin_core::change::Side;
use sidejoin_core::config::{Config, OnError};
use sidejoin_core::format::Reading;

use super::derive::{changelog_topic, worker_plans, PlanError};
use super::{Facts, OutputPlan, Placement, Plan, Source};

/// The plan of the star join `cfg` on the cluster `facts` describes.
pub(super) fn derive_star(cfg: &Config, facts: &Facts, durable: bool) -> Result<Plan, PlanError> {
    let join = &cfg.join;
    let output_topic = cfg.output.topic.clone().unwrap_or_default();
    missing_topics(cfg, facts)?;
    let count = |s: Side| facts.partitions(join.topic(s)).unwrap_or(0);
    let tasks = count(Side::Left);
    let sources = join
        .inputs()
        .map(|side| source(cfg, side, count(side), tasks))
        .collect::<Result<Vec<Source>, PlanError>>()?;
    let checks_keys = tasks > 1
        && sources
            .iter()
            .any(|s| s.side.is_dimension() && s.placement == Placement::CoPartitioned);
    Ok(Plan {
        output: OutputPlan {
            partitions: facts.partitions(&output_topic).unwrap_or(0),
            topic: output_topic,
        },
        tasks,
        changelogs: durable.then(|| join.inputs().map(|s| changelog_topic(cfg, s)).collect()),
        dead_letters: (cfg.process.on_error == OnError::Dlq).then(|| cfg.kafka.dlq_topic.clone()),
        routers: Vec::new(),
        workers: worker_plans(cfg),
        sources,
        checks_keys,
    })
}

/// Every input topic and the output topic must exist.
fn missing_topics(cfg: &Config, facts: &Facts) -> Result<(), PlanError> {
    let join = &cfg.join;
    let mut named: Vec<(String, String)> = join
        .inputs()
        .map(|s| {
            (
                format!("SIDEJOIN_{}_TOPIC", s.var()),
                join.topic(s).to_owned(),
            )
        })
        .collect();
    named.push((
        "SIDEJOIN_OUTPUT_TOPIC".to_owned(),
        cfg.output.topic.clone().unwrap_or_default(),
    ));
    let missing: Vec<(String, String)> = named
        .into_iter()
        .filter(|(_, t)| facts.partitions(t).is_none())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PlanError::MissingTopics(missing))
    }
}

/// Input `side` (whose topic has `count` partitions) as the `tasks` tasks read it.
fn source(cfg: &Config, side: Side, count: i32, tasks: i32) -> Result<Source, PlanError> {
    let join = &cfg.join;
    let broadcast = match side.index() {
        0 => false,
        1 => join.broadcast == Some(Side::Right),
        n => join.dimensions[n - 2].broadcast,
    };
    let (placement, why) = match (side, broadcast) {
        (Side::Left, _) => (
            Placement::CoPartitioned,
            "the fact: its partitions are the tasks".to_owned(),
        ),
        (_, true) => (
            Placement::Broadcast,
            "a broadcast dimension: every task holds all of it".to_owned(),
        ),
        (_, false) if count != tasks => {
            return Err(PlanError::NotCoPartitioned {
                left_topic: join.topic(Side::Left).to_owned(),
                left: tasks,
                right_topic: join.topic(side).to_owned(),
                right: count,
                small: side,
            })
        }
        (_, false) => (
            Placement::CoPartitioned,
            "a dimension co-partitioned with the fact (looked up by the fact's key)".to_owned(),
        ),
    };
    Ok(Source {
        side,
        topic: join.topic(side).to_owned(),
        partitions: count,
        reading: Reading::Own,
        placement,
        why,
    })
}
