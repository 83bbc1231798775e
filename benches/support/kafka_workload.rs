//! Bytes-to-bytes workloads (issue 9): Kafka record bytes in, output record bytes out, through the
//! `Processor` that `sidejoin run` uses, over memory or RocksDB state. Shared by the Criterion
//! bench `benches/bytes.rs` and the callgrind driver `examples/bytes_callgrind.rs`.
//!
//! - `pk_left`: the Kafka bench's data (`examples/bench_produce.rs`): records alternating left and
//!   right, keyed `{"id":…}`, left ids in order and right ids scattered, 5-column JSON values; a
//!   left join on `id` with primary keys on both sides, upsert output.
//! - `fanout_inner`: a multiset inner join (no primary keys), `keys` join keys, so every key
//!   collects several rows per side and each arrival matches several: append output.
//! - `interval_left`: an interval left join, [-1m, +1m] on the Kafka timestamps, rows 1 ms apart,
//!   append output.
#![allow(dead_code)]

use sidejoin::change::Side;
use sidejoin::config::{self, Config, Mode};

/// One Kafka record of the workload.
#[derive(Clone)]
pub(crate) struct KafkaRecord {
    pub side: Side,
    pub partition: i32,
    pub timestamp: i64,
    pub key: Vec<u8>,
    pub value: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Workload {
    PkLeft,
    FanoutInner,
    IntervalLeft,
}

impl Workload {
    pub(crate) const ALL: [Workload; 3] = [
        Workload::PkLeft,
        Workload::FanoutInner,
        Workload::IntervalLeft,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Workload::PkLeft => "pk_left",
            Workload::FanoutInner => "fanout_inner",
            Workload::IntervalLeft => "interval_left",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|w| w.name() == s)
    }

    /// `n` records over `n / 10` keys (as in the figures).
    pub(crate) fn records(self, n: u64) -> Vec<KafkaRecord> {
        self.stream(n, (n / 10).max(1)).collect()
    }

    /// `n` records over `keys` keys, made one at a time (for runs too big to hold the input).
    pub(crate) fn stream(self, n: u64, keys: u64) -> impl Iterator<Item = KafkaRecord> {
        (0..n).map(move |i| match self {
            Workload::PkLeft => pk_record(i, keys),
            Workload::FanoutInner => fanout_record(i, keys),
            Workload::IntervalLeft => interval_record(i, keys),
        })
    }

    pub(crate) fn config(self) -> Config {
        let select =
            "l.id AS id, l.name, l.city, l.age, l.ts AS lts, r.score, r.level, r.tag, r.ts AS rts";
        let env: Vec<(&str, &str)> = match self {
            Workload::PkLeft => vec![
                ("SIDEJOIN_JOIN_TYPE", "left"),
                ("SIDEJOIN_LEFT_KEY", "id"),
                ("SIDEJOIN_RIGHT_KEY", "id"),
                ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
                ("SIDEJOIN_RIGHT_PRIMARY_KEY", "id"),
                ("SIDEJOIN_OUTPUT_MODE", "upsert"),
                ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", "false"),
            ],
            Workload::FanoutInner => vec![
                ("SIDEJOIN_JOIN_TYPE", "inner"),
                ("SIDEJOIN_LEFT_KEY", "id"),
                ("SIDEJOIN_RIGHT_KEY", "id"),
                ("SIDEJOIN_OUTPUT_MODE", "append"),
                ("SIDEJOIN_SELECT", select),
            ],
            Workload::IntervalLeft => vec![
                ("SIDEJOIN_JOIN_TYPE", "left"),
                ("SIDEJOIN_LEFT_KEY", "id"),
                ("SIDEJOIN_RIGHT_KEY", "id"),
                ("SIDEJOIN_INTERVAL_LOWER", "-1m"),
                ("SIDEJOIN_INTERVAL_UPPER", "1m"),
                ("SIDEJOIN_OUTPUT_MODE", "append"),
                ("SIDEJOIN_SELECT", select),
            ],
        };
        config::load(
            env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            Mode::Replay,
        )
        .expect("bench config")
    }
}

fn left_value(id: u64, ts: i64) -> Vec<u8> {
    let city = ["paris", "lima", "oslo", "pune"][(id % 4) as usize];
    format!(
        "{{\"id\":{id},\"name\":\"user-{id}\",\"city\":\"{city}\",\"age\":{},\"ts\":{ts}}}",
        20 + id % 50
    )
    .into_bytes()
}

fn right_value(id: u64, i: u64, ts: i64) -> Vec<u8> {
    format!(
        "{{\"id\":{id},\"score\":{},\"level\":{},\"tag\":\"t{}\",\"ts\":{ts}}}",
        (id * 7 + i) % 1000,
        id % 10,
        id % 100
    )
    .into_bytes()
}

const T0: i64 = 1_764_000_000_000;

fn record(side: Side, id: u64, i: u64, partitions: u64) -> KafkaRecord {
    let ts = T0 + i as i64;
    KafkaRecord {
        side,
        // The Kafka bench's topics have 2 partitions; records spread by key as a producer would.
        partition: (id % partitions) as i32,
        timestamp: ts,
        key: format!("{{\"id\":{id}}}").into_bytes(),
        value: match side {
            Side::Left => left_value(id, ts),
            _ => right_value(id, i, ts),
        },
    }
}

/// The Kafka bench's records (`examples/bench_produce.rs`): left ids in order, right ids
/// scattered by a multiplicative permutation.
fn pk_record(i: u64, keys: u64) -> KafkaRecord {
    let step = i / 2;
    if i % 2 == 0 {
        record(Side::Left, step % keys, i, 2)
    } else {
        let id = (step.wrapping_mul(1_000_003) + 12_345) % keys;
        record(Side::Right, id, i, 2)
    }
}

/// Multiset rows: every key gets `n / keys / 2` rows per side, interleaved.
fn fanout_record(i: u64, keys: u64) -> KafkaRecord {
    let side = if i % 2 == 0 { Side::Left } else { Side::Right };
    let id = (i / 2).wrapping_mul(2_654_435_761) % keys;
    record(side, id, i, 2)
}

/// Rows 1 ms apart, alternating sides, the same key on both sides close in time.
fn interval_record(i: u64, keys: u64) -> KafkaRecord {
    let side = if i % 2 == 0 { Side::Left } else { Side::Right };
    record(side, (i / 2) % keys, i, 2)
}
