//! The regular-join benchmark workload (issue: engine bench): 5-column JSON rows on each side,
//! `keys` distinct keys, a left join on the primary key, every key inserted once on each side in
//! a shuffled 50/50 order, plus 10% primary-key updates. Shared by the Criterion bench and the
//! callgrind driver so both measure the same thing.
#![allow(dead_code)]

use serde_json::{json, Value};
use sidejoin::change::{Event, Kind, Row, Side};
use sidejoin::config::{self, Config, Mode};
use sidejoin::engine::MemoryState;
use sidejoin::pipeline::{Origin, Pipeline};

/// A small deterministic generator (splitmix64), so every run sees the same input.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone)]
pub(crate) struct Record {
    pub side: Side,
    pub timestamp: i64,
    pub value: Value,
}

/// The records as Kafka would carry them: JSON bytes.
pub(crate) fn as_bytes(records: &[Record]) -> Vec<(Side, i64, Vec<u8>)> {
    records
        .iter()
        .map(|r| (r.side, r.timestamp, serde_json::to_vec(&r.value).unwrap()))
        .collect()
}

fn left_row(id: u64, version: u64) -> Value {
    let city = ["paris", "lima", "oslo", "pune"][(id % 4) as usize];
    json!({"id": id, "name": format!("user-{id}"), "city": city, "age": 20 + (id + version) % 50, "ts": 1_700_000_000_000u64 + version})
}

fn right_row(id: u64, version: u64) -> Value {
    json!({"id": id, "score": (id * 7 + version) % 1000, "level": (id % 10), "tag": format!("t{}", id % 100), "ts": 1_700_000_000_000u64 + version})
}

/// The input records: 2 × `keys` inserts in a random order, then 10% of all changes are
/// primary-key updates, placed at random positions in the second half (after most inserts).
pub(crate) fn records(keys: u64) -> Vec<Record> {
    let mut rng = Rng(42);
    let inserts = 2 * keys;
    let updates = inserts / 9;
    // Sort keys place every record: inserts at a random permutation of even slots, updates at
    // random odd slots of the second half.
    let mut slots: Vec<(u64, Side, u64, u64)> = Vec::with_capacity((inserts + updates) as usize);
    let mut order: Vec<u64> = (0..inserts).collect();
    for i in (1..order.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    for (n, slot) in order.into_iter().enumerate() {
        let side = if n % 2 == 0 { Side::Left } else { Side::Right };
        slots.push((2 * slot, side, n as u64 / 2, 0));
    }
    for n in 0..updates {
        let side = if n % 2 == 0 { Side::Left } else { Side::Right };
        let slot = inserts + rng.below(inserts);
        slots.push((slot | 1, side, rng.below(keys), 1 + n));
    }
    slots.sort_unstable_by_key(|s| s.0);
    slots
        .into_iter()
        .enumerate()
        .map(|(i, (_, side, id, version))| Record {
            side,
            timestamp: i as i64,
            value: match side {
                Side::Left => left_row(id, version),
                _ => right_row(id, version),
            },
        })
        .collect()
}

pub(crate) fn config() -> Config {
    let env = [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "id"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.name, l.city, l.age, l.ts AS lts, r.score, r.level, r.tag, r.ts AS rts",
        ),
    ];
    config::load(
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        Mode::Replay,
    )
    .expect("bench config")
}

/// The records as decoded rows (decoding is not timed by `run`).
pub(crate) fn as_rows(records: &[Record]) -> Vec<(Side, i64, Row)> {
    records
        .iter()
        .map(|r| (r.side, r.timestamp, Row::from_value(&r.value).unwrap()))
        .collect()
}

/// Runs owned, already decoded rows through a fresh pipeline, handing each output row's bytes
/// to `sink`; returns the number of output changes and the pipeline (so its teardown is not
/// timed).
#[inline(never)]
pub(crate) fn run(
    config: &Config,
    records: Vec<(Side, i64, Row)>,
    mut sink: impl FnMut(&[u8]),
) -> (usize, (Pipeline, MemoryState)) {
    let mut pipeline = Pipeline::new(config);
    let mut state = MemoryState::new();
    let mut outputs = 0;
    for (side, timestamp, row) in records {
        let origin = Origin {
            side,
            partition: 0,
            timestamp,
            processing_time: 0,
        };
        let error = (pipeline.process_decoded(
            &mut state,
            origin,
            Ok(Some(Event::Change(Kind::Insert, row))),
        ))
        .expect("state");
        assert!(error.is_none(), "valid record");
        let changes = pipeline.changes();
        outputs += changes.changes.len();
        for c in &changes.changes {
            sink(changes.row(c));
        }
    }
    (outputs, (pipeline, state))
}

/// The same from JSON bytes: decoding included, as in `sidejoin run`.
#[inline(never)]
pub(crate) fn run_bytes(
    config: &Config,
    records: &[(Side, i64, Vec<u8>)],
    mut sink: impl FnMut(&[u8]),
) -> (usize, (Pipeline, MemoryState)) {
    let mut pipeline = Pipeline::new(config);
    let mut state = MemoryState::new();
    let mut outputs = 0;
    for (side, timestamp, bytes) in records {
        let origin = Origin {
            side: *side,
            partition: 0,
            timestamp: *timestamp,
            processing_time: 0,
        };
        let error = (pipeline.process(&mut state, origin, None, Some(bytes))).expect("state");
        assert!(error.is_none(), "valid record");
        let changes = pipeline.changes();
        outputs += changes.changes.len();
        for c in &changes.changes {
            sink(changes.row(c));
        }
    }
    (outputs, (pipeline, state))
}

/// The interval-join workload: `rows` rows 1 ms apart, alternating sides, over `keys` keys.
pub(crate) fn interval_records(rows: u64, keys: u64) -> Vec<Record> {
    (0..rows)
        .map(|i| {
            let side = if i % 2 == 0 { Side::Left } else { Side::Right };
            let id = (i / 2) % keys;
            Record {
                side,
                timestamp: i as i64,
                value: match side {
                    Side::Left => left_row(id, i),
                    _ => right_row(id, i),
                },
            }
        })
        .collect()
}

/// An interval left join on `id`, [-1m, +1m] around the Kafka timestamps.
pub(crate) fn interval_config() -> Config {
    let env = [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_INTERVAL_LOWER", "-1m"),
        ("SIDEJOIN_INTERVAL_UPPER", "1m"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.name, l.city, l.age, l.ts AS lts, r.score, r.level, r.tag, r.ts AS rts",
        ),
    ];
    config::load(
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        Mode::Replay,
    )
    .expect("bench config")
}
