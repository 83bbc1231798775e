//! Replay's output and upsert tables for the real-broker tests: replay's records of an input,
//! an output topic compared with them, an output topic folded as a table, replay's table of the
//! same input, and a wait until the two agree.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use sidejoin::config::{self, Mode};
use sidejoin::engine::MemoryState;
use sidejoin::replay::{self, ReplayOptions};

use super::kafka;

/// The join both crash-style tests run: left rows `{id, k, v}` (primary key id) left-joined on k
/// with right rows `{k, w}` (primary key k), upsert output keyed by id.
pub(crate) fn left_join_env() -> Vec<(String, String)> {
    [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "k"),
        ("SIDEJOIN_OUTPUT_MODE", "upsert"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.k AS k, l.v AS v, r.w AS w",
        ),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// A left record of `left_join_env`'s join, keyed by k: `(left?, key, value, timestamp)`.
pub(crate) fn left_row(id: u64, k: u64, v: u64, ts: i64) -> (bool, String, String, i64) {
    let value = json!({"id": id, "k": k, "v": v}).to_string();
    (true, k.to_string(), value, ts)
}

/// A right record of `left_join_env`'s join, keyed by k.
pub(crate) fn right_row(k: u64, w: u64, ts: i64) -> (bool, String, String, i64) {
    (
        false,
        k.to_string(),
        json!({"k": k, "w": w}).to_string(),
        ts,
    )
}

/// One input record of `left_join_env`'s join: (left side?, key, value, timestamp).
pub(crate) type Pair = (bool, String, String, i64);

/// `n` records from number `from` on, alternating left rows `{id, k, v}` (ids below `ids`,
/// join key `id % keys`) and right rows `{k, w}` (every key in turn, scattered); record i has
/// timestamp `t0 + i`. Left records have even numbers, right ones odd: a right key taken from
/// `i` itself would always be odd and left keys always even (with even `ids` and `keys`), and
/// nothing would ever match.
pub(crate) fn left_join_records(n: u64, from: u64, t0: i64, ids: u64, keys: u64) -> Vec<Pair> {
    (from..from + n)
        .map(|i| {
            let ts = t0 + i as i64;
            if i % 2 == 0 {
                let id = (i * 7_919) % ids;
                left_row(id, id % keys, i, ts)
            } else {
                right_row(((i / 2) * 104_729) % keys, i, ts)
            }
        })
        .collect()
}

/// Produces `(left side?, key, value, timestamp)` records to `left` or `right`, keyed; a value
/// may be a `String` or an `Option<String>` (`None`: a tombstone).
pub(crate) fn produce_sides<V: Clone + Into<Option<String>>>(
    left: &str,
    right: &str,
    records: &[(bool, String, V, i64)],
) {
    let produce: Vec<_> = records
        .iter()
        .map(|(l, k, v, ts)| {
            let topic = if *l { left } else { right };
            (topic.to_owned(), Some(k.clone()), v.clone().into(), *ts)
        })
        .collect();
    kafka::produce_many(&kafka::producer(), &produce);
}

/// Reads `want.len()` records of `topic` (within `wait`): they are replay's `want`, in its order
/// (`ordered`) or as a multiset; a failure names `what` and shows `sj`'s logs.
pub(crate) fn assert_replays_records(
    topic: &str,
    want: &[(Value, Value)],
    ordered: bool,
    what: &str,
    sj: &kafka::Sidejoin,
    wait: Duration,
) {
    let mut want = want.to_vec();
    let mut got: Vec<(Value, Value)> = kafka::read_all(topic, want.len(), wait)
        .iter()
        .map(|r| (r.key_json(), r.value_json()))
        .collect();
    if !ordered {
        let by_text =
            |a: &(Value, Value), b: &(Value, Value)| a.1.to_string().cmp(&b.1.to_string());
        got.sort_by(by_text);
        want.sort_by(by_text);
    }
    assert_eq!(
        got,
        want,
        "{what}: output topic differs from replay\nlogs:\n{}",
        sj.logs()
    );
}

/// Nothing more than replay's `n` records arrives on `topic` (read for 2 s); a failure names
/// `what`.
pub(crate) fn assert_no_more_than(topic: &str, n: usize, what: &str) {
    let extra = kafka::read_all(topic, n + 1, Duration::from_secs(2));
    assert_eq!(extra.len(), n, "{what}: more records than replay");
}

/// Folds upsert records into a table: key → last value, tombstones removing the key.
pub(crate) fn fold(records: impl IntoIterator<Item = (Value, Value)>) -> BTreeMap<String, Value> {
    let mut table = BTreeMap::new();
    for (k, v) in records {
        if v.is_null() {
            table.remove(&k.to_string());
        } else {
            table.insert(k.to_string(), v);
        }
    }
    table
}

/// The upsert table `sidejoin replay` gives for `records` (`Pair`s in production order; their
/// Kafka keys are not replayed) under the join of `env`.
pub(crate) fn replay_table<'a>(
    env: &[(String, String)],
    records: impl IntoIterator<Item = &'a Pair>,
) -> BTreeMap<String, Value> {
    fold(replay_records(env, &replay_lines(records)))
}

/// `records` as replay's input lines (their Kafka keys are not replayed).
pub(crate) fn replay_lines<'a>(records: impl IntoIterator<Item = &'a Pair>) -> Vec<String> {
    records
        .into_iter()
        .map(|(left, _, v, ts)| {
            let value: Value = serde_json::from_str(v).unwrap();
            let side = if *left { "left" } else { "right" };
            json!({"side": side, "key": null, "value": value, "timestamp": ts}).to_string()
        })
        .collect()
}

/// Replay's Debezium changes of `records` under `env`, materialised (`materialize`).
pub(crate) fn replay_materialised<'a>(
    env: &[(String, String)],
    records: impl IntoIterator<Item = &'a Pair>,
) -> HashMap<String, i64> {
    let values: Vec<Value> = replay_records(env, &replay_lines(records))
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    materialize(&values)
}

/// The Debezium changes of `topic` (read_committed), materialised; fails on a retraction of a
/// row that is not there (a change applied twice).
pub(crate) fn materialised(topic: &str) -> HashMap<String, i64> {
    let values: Vec<Value> = kafka::read_to_end(topic, Duration::from_secs(60))
        .iter()
        .map(|r| r.value_json())
        .collect();
    materialize(&values)
}

/// Reads `topic` materialised (`materialised`) until it equals `want`, `pause` between reads;
/// fails at `deadline` with `differs(got)`.
pub(crate) fn wait_materialised(
    topic: &str,
    want: &HashMap<String, i64>,
    deadline: Instant,
    pause: Duration,
    differs: impl Fn(&HashMap<String, i64>) -> String,
) {
    loop {
        // `materialised` fails on a retraction of a row that is not there (a change twice).
        let got = materialised(topic);
        if &got == want {
            return;
        }
        assert!(Instant::now() < deadline, "{}", differs(&got));
        std::thread::sleep(pause);
    }
}

/// Replays `lines` in process with `env` and returns its `--records` output as (key, value).
pub(crate) fn replay_records(env: &[(String, String)], lines: &[String]) -> Vec<(Value, Value)> {
    let cfg = config::load(env.to_vec(), Mode::Replay).expect("config");
    let input = lines.join("\n");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    replay::replay(
        &cfg,
        MemoryState::new(),
        input.as_bytes(),
        &mut out,
        &mut err,
        ReplayOptions { records: true },
    )
    .expect("replay");
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["key"].clone(), v["value"].clone())
        })
        .collect()
}

/// Reads `topic` until, folded, it equals `want` (it may still be growing); fails at `deadline`
/// with how many keys differ.
pub(crate) fn wait_for_table(topic: &str, want: &BTreeMap<String, Value>, deadline: Instant) {
    loop {
        let got = fold(
            kafka::read_to_end(topic, Duration::from_secs(60))
                .iter()
                .map(|r| (r.key_json(), r.value_json())),
        );
        if &got == want {
            return;
        }
        let differing = want.iter().filter(|(k, v)| got.get(*k) != Some(v)).count();
        let extra = got.keys().filter(|k| !want.contains_key(*k)).count();
        assert!(
            Instant::now() < deadline,
            "the upsert table differs from replay: {differing} of {} keys differ, {extra} keys are not in replay's table ({} keys in the topic)",
            want.len(),
            got.len()
        );
    }
}

/// Applies a Debezium changelog to a multiset of rows.
pub(crate) fn materialize(values: &[Value]) -> HashMap<String, i64> {
    let mut table: HashMap<String, i64> = HashMap::new();
    for v in values {
        if !v["before"].is_null() {
            *table.entry(v["before"].to_string()).or_default() -= 1;
        }
        if !v["after"].is_null() {
            *table.entry(v["after"].to_string()).or_default() += 1;
        }
    }
    table.retain(|_, n| *n != 0);
    assert!(
        table.values().all(|n| *n > 0),
        "a retraction removed a row that was not there"
    );
    table
}
