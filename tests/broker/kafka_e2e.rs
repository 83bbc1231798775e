//! End to end on the real broker: the seed examples produced one record at a time (each
//! consumed before the next) give exactly the records `sidejoin replay` gives for the same
//! records; the same data produced concurrently materialises to the same table.

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
    let f = fixtures::load(&fixtures::fixtures_dir().join(fixture));
    let t = topics(fixture, 1);
    let env = kafka::with(
        kafka::base_env(&t.app, &t.left, &t.right, &t.output),
        &f.env,
    );
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let producer = kafka::producer();
    let mut replay_lines = Vec::new();
    // Fixture timestamps keep their spacing, shifted to now (the broker rejects or expires
    // records stamped far from the present).
    let first = f
        .input
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok()?["timestamp"].as_i64())
        .next()
        .unwrap_or(0);
    let base = kafka::now_ms() - first;
    let mut timestamp = kafka::now_ms();
    for (i, line) in f.input.lines().filter(|l| !l.trim().is_empty()).enumerate() {
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
        kafka::produce(
            &producer,
            topic,
            key.as_deref(),
            value.as_deref(),
            timestamp,
        );
        sj.wait_records_in(i as u64 + 1, WAIT);
        replay_lines.push(
            json!({"side": rec["side"], "key": rec["key"], "value": rec["value"], "timestamp": timestamp}).to_string(),
        );
    }
    let want = replay_records(&env, &replay_lines);
    let got: Vec<(Value, Value)> = kafka::read_all(&t.output, want.len(), WAIT)
        .iter()
        .map(|r| (r.key_json(), r.value_json()))
        .collect();
    assert_eq!(
        got,
        want,
        "{fixture}: output topic differs from replay\nlogs:\n{}",
        sj.logs()
    );
    assert!(
        !want.is_empty(),
        "{fixture}: the example must produce output"
    );
    // Nothing more than replay's records arrives.
    let extra = kafka::read_all(&t.output, want.len() + 1, Duration::from_secs(2));
    assert_eq!(
        extra.len(),
        want.len(),
        "{fixture}: more records than replay"
    );
}

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
    let lefts: Vec<(String, String)> = (0..300)
        .map(|i| {
            (
                format!("{{\"user_id\":\"{i}\"}}"),
                json!({"user_id": i.to_string(), "user_name": format!("u{i}")}).to_string(),
            )
        })
        .collect();
    let rights: Vec<(String, String)> = (0..300)
        .map(|i| {
            let uid = (i * 7 + 3) % 350;
            (
                format!("{{\"user_id\":\"{uid}\"}}"),
                json!({"user_id": uid.to_string(), "score": i}).to_string(),
            )
        })
        .collect();
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let (lt, rt) = (t.left.clone(), t.right.clone());
    let (l2, r2) = (lefts.clone(), rights.clone());
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
    sj.wait_records_in(600, WAIT);
    // The same records replayed one side after the other.
    let lines: Vec<String> = lefts
        .iter()
        .map(|(_, v)| json!({"side": "left", "key": null, "value": serde_json::from_str::<Value>(v).unwrap()}).to_string())
        .chain(rights.iter().map(|(_, v)| {
            json!({"side": "right", "key": null, "value": serde_json::from_str::<Value>(v).unwrap()}).to_string()
        }))
        .collect();
    // Co-partitioned by key: the replay must put each record in its Kafka partition too.
    let want_values: Vec<Value> = replay_records(&env, &lines)
        .into_iter()
        .map(|(_, v)| v)
        .collect();
    let want = upsert::materialize(&want_values);
    // The output topic keeps growing until every change is in; wait for the materialised table.
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let got_values: Vec<Value> = kafka::read_all(&t.output, usize::MAX, Duration::from_secs(3))
            .iter()
            .map(|r| r.value_json())
            .collect();
        let got = upsert::materialize(&got_values);
        if got == want {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "materialised tables differ: {} vs {} rows",
            got.len(),
            want.len()
        );
    }
    // A left join: each left row once per matching right row, or once null-padded.
    let expected_rows: i64 = (0..300)
        .map(|l: i64| (0..300).filter(|i| (i * 7 + 3) % 350 == l).count().max(1) as i64)
        .sum();
    assert_eq!(want.values().sum::<i64>(), expected_rows);
}
