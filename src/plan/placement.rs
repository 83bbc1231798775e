//! Where each join input's records go (SPEC §6), decided from what the settings declare about
//! the topics' keys — never assumed. A co-partitioned join is right only when partition *i* of
//! both topics holds the same join keys; Flink gets that by always shuffling both inputs by the
//! join key, ksqlDB and Kafka Streams by repartitioning a side whose key is not the join key.
//! sidejoin reads a side as it is only where that is declared or not needed, and re-keys it by
//! the join key otherwise:
//!
//! | the side                                                    | placed            |
//! |-------------------------------------------------------------|-------------------|
//! | `SIDEJOIN_BROADCAST` names it                               | broadcast         |
//! | `SIDEJOIN_<SIDE>_HASH_BY=cols` (`HASH_BY_KEY`)              | re-keyed by cols  |
//! | `SIDEJOIN_<SIDE>_HASH_BY=none` (SQL: `'key.fields'` = the join columns) | as it is (declared keyed) |
//! | the other side is broadcast                                 | as it is (any keying joins) |
//! | both topics have one partition                              | as it is (nothing to place) |
//! | upsert/Debezium, primary key = the join key                 | as it is (keyed by it) |
//! | anything else (json/csv/avro declaring no key, a primary key other than the join key) | re-keyed by the join key |
//!
//! A side read as it is on a topic of several partitions has every record's key checked
//! (`copartition`); its misfits follow `SIDEJOIN_ON_COPARTITION_VIOLATION`.

use sidejoin_core::change::Side;
use sidejoin_core::config::{Config, Envelope, HashBy};

use super::PlanError;

/// How a side reaches the tasks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum How {
    /// Its own topic through the consumer group (partition *i* feeds task *i*).
    AsIs,
    Broadcast,
    /// Re-keyed by these columns into its repartition topic.
    Rekey(Vec<String>),
}

/// A side's placement and the reason for it, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub how: How,
    pub why: String,
}

/// The placement of both sides on topics of `own` partitions.
pub(super) fn decide_both(cfg: &Config, own: [i32; 2]) -> Result<[Decision; 2], PlanError> {
    let [l, r] = Side::BOTH.map(|s| decide(cfg, s, own));
    Ok([l?, r?])
}

fn decide(cfg: &Config, side: Side, own: [i32; 2]) -> Result<Decision, PlanError> {
    let spec = cfg.join.side(side);
    let var = side.var();
    let d = |how: How, why: String| Ok(Decision { how, why });
    if cfg.join.broadcast == Some(side) {
        return d(How::Broadcast, "SIDEJOIN_BROADCAST".to_owned());
    }
    match &spec.hash_by {
        HashBy::Columns(c) => return d(How::Rekey(c.clone()), format!("SIDEJOIN_{var}_HASH_BY")),
        HashBy::Keyed => {
            return d(
                How::AsIs,
                format!(
                "declared keyed by the join key (SIDEJOIN_{var}_HASH_BY=none, or SQL 'key.fields')"
            ),
            )
        }
        HashBy::Auto => {}
    }
    if cfg.join.broadcast == Some(side.other()) {
        return d(
            How::AsIs,
            format!("the {} side is broadcast: any keying joins", side.other()),
        );
    }
    if own == [1, 1] {
        return d(
            How::AsIs,
            "one partition on both sides: nothing to place".to_owned(),
        );
    }
    by_keys(cfg, side)
}

/// A side whose settings leave its placement open, on topics that need placing: read as it is
/// when its format declares it keyed by the join key, else re-keyed by it.
fn by_keys(cfg: &Config, side: Side) -> Result<Decision, PlanError> {
    let spec = cfg.join.side(side);
    let var = side.var();
    let d = |how: How, why: String| Ok(Decision { how, why });
    let same = |a: &[String], b: &[String]| a.len() == b.len() && a.iter().all(|c| b.contains(c));
    let pk = spec.primary_key.as_deref();
    let keyed_envelope = spec.format.envelope() != Envelope::Plain;
    match pk {
        Some(pk) if keyed_envelope && same(pk, &spec.key) => d(
            How::AsIs,
            format!("{} keyed by its primary key, which is the join key", spec.format.name()),
        ),
        Some(pk) if spec.format.envelope() == Envelope::Upsert => Err(PlanError::CannotRekey {
            side,
            topic: cfg.join.topic(side).to_owned(),
            primary_key: pk.join(","),
            join_key: spec.key.join(","),
        }),
        Some(pk) if keyed_envelope => d(
            How::Rekey(spec.key.clone()),
            format!(
                "{} keyed by its primary key ({}), not the join key: re-keyed by the join key",
                spec.format.name(),
                pk.join(",")
            ),
        ),
        None if keyed_envelope => d(
            How::Rekey(spec.key.clone()),
            format!(
                "{} keyed by a primary key not declared as the join key (SIDEJOIN_{var}_PRIMARY_KEY): \
                 re-keyed by the join key",
                spec.format.name()
            ),
        ),
        _ => d(
            How::Rekey(spec.key.clone()),
            format!(
                "{} declares no key on the join columns: re-keyed by the join key (SIDEJOIN_{var}_HASH_BY=none \
                 declares the topic keyed by the join key and skips the hop)",
                spec.format.name()
            ),
        ),
    }
}

/// Each side's placement on topics of several partitions — what `check` says without a broker.
pub(crate) fn placements_on_many_partitions(cfg: &Config) -> Result<[Decision; 2], PlanError> {
    decide_both(cfg, [2, 2])
}
