//! End to end on the real broker: the seed examples produced one record at a time (each
//! consumed before the next) give exactly the records `sidejoin replay` gives for the same
//! records; the same data produced concurrently materialises to the same table.

use std::collections::HashMap;
use std::time::Duration;

use crate::common::fixtures;
use crate::common::kafka::{self, Sidejoin};
use crate::common::upsert::{self, replay_records};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);

struct Topics {
    left: String,
    right: String,
    output: String,
    app: String,
}

fn topics(name: &str, partitions: i32) -> Topics {
    let (left, right, output) = kafka::join_topics(name, [partitions, partitions, 1]);
    Topics {
        left,
        right,
        output,
        app: kafka::unique(&format!("{name}-app")),
    }
}

/// Produces a fixture's records one at a time through a running sidejoin and compares the
/// output topic with replay.
fn seed_end_to_end(fixture: &str) {
    seed_end_to_end_with(fixture, &[]);
}

/// `seed_end_to_end` with `extra` variables for sidejoin (after the fixture's: they win), e.g.
/// another listener of the broker and its credentials; returns the process, still running.
pub(crate) fn seed_end_to_end_with(fixture: &str, extra: &[(String, String)]) -> Sidejoin {
    let f = fixtures::load(&fixtures::fixtures_dir().join(fixture));
    let t = topics(fixture, 1);
    let env = kafka::with(
        kafka::with(
            kafka::base_env(&t.app, &t.left, &t.right, &t.output),
            &f.env,
        ),
        extra,
    );
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let replay_lines = kafka::produce_one_by_one(&mut sj, fixture_steps(&f.input, &t), WAIT);
    let want = replay_records(&env, &replay_lines);
    upsert::assert_replays_records(&t.output, &want, true, fixture, &sj, WAIT);
    assert!(
        !want.is_empty(),
        "{fixture}: the example must produce output"
    );
    // Nothing more than replay's records arrives.
    upsert::assert_no_more_than(&t.output, want.len(), fixture);
    sj
}

/// The records of a fixture's `input` lines for `t`'s topics, each with its replay line.
/// Fixture timestamps keep their spacing, shifted to now (the broker rejects or expires records
/// stamped far from the present).
fn fixture_steps<'a>(
    input: &'a str,
    t: &'a Topics,
) -> impl Iterator<Item = (Produced, String)> + 'a {
    let first = input
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["timestamp"].as_i64())
        .next()
        .unwrap_or(0);
    let base = kafka::now_ms() - first;
    let mut timestamp = kafka::now_ms();
    input.lines().filter(|l| !l.trim().is_empty()).map(move |line| {
        let rec: Value = serde_json::from_str(line).unwrap();
        timestamp = rec["timestamp"]
            .as_i64()
            .map_or(timestamp + 1, |t| t + base);
        let topic = if rec["side"] == "left" {
            &t.left
        } else {
            &t.right
        };
        let key = (!rec["key"].is_null()).then(|| rec["key"].to_string());
        let value = (!rec["value"].is_null()).then(|| rec["value"].to_string());
        let line =
            json!({"side": rec["side"], "key": rec["key"], "value": rec["value"], "timestamp": timestamp}).to_string();
        ((topic.clone(), key, value, timestamp), line)
    })
}

/// A record to produce: `(topic, key, value, timestamp)`.
type Produced = (String, Option<String>, Option<String>, i64);

#[test]
fn seed000_left_join_end_to_end() {
    seed_end_to_end("seed000_left_join");
}

#[test]
fn seed000_without_generated_retracts_end_to_end() {
    seed_end_to_end("seed000_left_join_no_generated_retracts");
}

#[test]
fn seed000_upsert_records_end_to_end() {
    seed_end_to_end("seed000_upsert_records");
}

#[test]
fn seed001_dedup_end_to_end() {
    seed_end_to_end("seed001_dedup_right");
}

#[test]
fn seed004_inner_join_end_to_end() {
    seed_end_to_end("seed004_inner_join");
}

#[test]
fn concurrent_production_materialises_the_same_table() {
    let t = topics("concurrent", 3);
    let env = kafka::with(
        kafka::base_env(&t.app, &t.left, &t.right, &t.output),
        &fixtures::parse_env(
            "SIDEJOIN_JOIN_TYPE=left\nSIDEJOIN_LEFT_KEY=user_id\nSIDEJOIN_RIGHT_KEY=user_id\n\
             SIDEJOIN_SELECT=l.user_id AS user_id, l.user_name, r.score",
        ),
    );
    let (lefts, rights) = (users(), scores());
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    produce_side_by_side(&t, &lefts, &rights);
    sj.wait_records_in(600, WAIT);
    // The same records replayed one side after the other.
    let lines: Vec<String> = replay_lines("left", &lefts)
        .chain(replay_lines("right", &rights))
        .collect();
    // Co-partitioned by key: the replay must put each record in its Kafka partition too.
    let want_values: Vec<Value> = replay_records(&env, &lines)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let want = upsert::materialize(&want_values);
    wait_for_materialised(&t.output, &want);
    // A left join: each left row once per matching right row, or once null-padded.
    let expected_rows: i64 = (0..300)
        .map(|l: i64| (0..300).filter(|i| (i * 7 + 3) % 350 == l).count().max(1) as i64)
        .sum();
    assert_eq!(want.values().sum::<i64>(), expected_rows);
}

/// 300 left rows `{user_id, user_name}` as (key, value), keyed by user_id.
fn users() -> Vec<(String, String)> {
    (0..300)
        .map(|i| {
            (
                format!("{{\"user_id\":\"{i}\"}}"),
                json!({"user_id": i.to_string(), "user_name": format!("u{i}")}).to_string(),
            )
        })
        .collect()
}

/// 300 right rows `{user_id, score}` as (key, value), keyed by user_id (some users have none,
/// some several).
fn scores() -> Vec<(String, String)> {
    (0..300)
        .map(|i| {
            let uid = (i * 7 + 3) % 350;
            (
                format!("{{\"user_id\":\"{uid}\"}}"),
                json!({"user_id": uid.to_string(), "score": i}).to_string(),
            )
        })
        .collect()
}

/// Produces `lefts` and `rights` at the same time, each side from a thread of its own.
fn produce_side_by_side(t: &Topics, lefts: &[(String, String)], rights: &[(String, String)]) {
    let (lt, rt) = (t.left.clone(), t.right.clone());
    let (l2, r2) = (lefts.to_vec(), rights.to_vec());
    let a = std::thread::spawn(move || {
        let p = kafka::producer();
        for (k, v) in &l2 {
            kafka::produce(&p, &lt, Some(k), Some(v), kafka::now_ms());
        }
    });
    let b = std::thread::spawn(move || {
        let p = kafka::producer();
        for (k, v) in &r2 {
            kafka::produce(&p, &rt, Some(k), Some(v), kafka::now_ms());
        }
    });
    a.join().unwrap();
    b.join().unwrap();
}

/// Replay's input lines for `side`'s (key, value) records, without keys or timestamps.
fn replay_lines<'a>(
    side: &'a str,
    records: &'a [(String, String)],
) -> impl Iterator<Item = String> + 'a {
    records.iter().map(move |(_, v)| {
        json!({"side": side, "key": null, "value": serde_json::from_str::<Value>(v).unwrap()})
            .to_string()
    })
}

/// The output topic keeps growing until every change is in; waits until, materialised, it
/// equals `want`.
fn wait_for_materialised(output: &str, want: &HashMap<String, i64>) {
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let got_values: Vec<Value> = kafka::read_all(output, usize::MAX, Duration::from_secs(3))
            .iter()
            .map(|r| r.value_json())
            .collect();
        let got = upsert::materialize(&got_values);
        if &got == want {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "materialised tables differ: {} vs {} rows",
            got.len(),
            want.len()
        );
    }
}
