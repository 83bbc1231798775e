//! `SIDEJOIN_<SIDE>_HASH_BY` on the real broker (SPEC §6): a side whose topic is not keyed by
//! what the join needs is re-keyed by sidejoin into `<app>-<side>-repartition` and joined from
//! there.
//!
//! - A Debezium left side keyed by its primary key (`{"id":…}`), joined on `k`, with updates
//!   that move rows between join keys: refused at start without HASH_BY (the probe, `fail`);
//!   with `SIDEJOIN_LEFT_HASH_BY=$join_key` (the placement of the right topic's keys learnt from
//!   its records), two instances' output folded as upsert equals replay.
//! - MRS's BROADCAST + HASH_BY: a big Debezium left side whose topic is keyed by the row's
//!   current join key — one row's changes spread over partitions — with the small right side
//!   broadcast and `SIDEJOIN_LEFT_HASH_BY=id`: the changes of each row stay in order (the
//!   router merges the source partitions by timestamp), so the output equals replay. Without
//!   HASH_BY the tasks see a row's update before its insert and the output does not.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert::{self, Pair};
use serde_json::{json, Value};

/// Left Debezium rows `{id, k, v}` (primary key id; creates, updates — half of them moving the
/// row to another join key — and deletes) and right rows `{k, w}` (primary key k), in
/// timestamp order; `key_of(id, k)` keys a left record (`k`: the row's join key after the
/// change, before it for a delete).
fn records(n: u64, t0: i64, ids: u64, keys: u64, key_of: fn(u64, u64) -> String) -> Vec<Pair> {
    let mut rows: HashMap<u64, (u64, u64)> = HashMap::new();
    (0..n)
        .map(|i| {
            let ts = t0 + i as i64;
            if i % 3 == 2 {
                let k = ((i / 3) * 104_729) % keys;
                return upsert::right_row(k, i, ts);
            }
            let id = (i * 7_919) % ids;
            let row = |k: u64, v: u64| json!({"id": id, "k": k, "v": v});
            let (value, k) = match rows.get(&id).copied() {
                None => {
                    let k = (i * 31) % keys;
                    rows.insert(id, (k, i));
                    (json!({"before": null, "after": row(k, i), "op": "c"}), k)
                }
                Some((k, v)) if i % 13 == 0 => {
                    rows.remove(&id);
                    (json!({"before": row(k, v), "after": null, "op": "d"}), k)
                }
                Some((k, v)) => {
                    let new_k = if i % 2 == 0 { (i * 17) % keys } else { k };
                    rows.insert(id, (new_k, i));
                    let u = json!({"before": row(k, v), "after": row(new_k, i), "op": "u"});
                    (u, new_k)
                }
            };
            (true, key_of(id, k), value.to_string(), ts)
        })
        .collect()
}

/// The join: left Debezium rows left-joined on k with right rows, upsert output keyed by
/// `key`.
fn env(
    name: &str,
    partitions: [i32; 3],
    key: &str,
) -> (String, String, String, Vec<(String, String)>) {
    let (left, right, out) = kafka::join_topics(name, partitions);
    let app = kafka::unique(&format!("{name}-app"));
    let mut env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    for (k, v) in [
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
        ("SIDEJOIN_OUTPUT_KEY", key),
        ("SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", "6000"),
    ] {
        env.push((k.into(), v.into()));
    }
    (app, left, right, env)
}

fn with(env: &[(String, String)], extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut env = env.to_vec();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

#[test]
fn a_debezium_side_keyed_by_primary_key_is_refused_then_repartitioned_by_join_key_and_folds_to_replay(
) {
    // Output keyed by (id, k): a row that moves to another join key retracts in the old key's
    // partition and accumulates in the new one's, two different output keys.
    let (app, left, right, env) = env("rekey", [3, 3, 2], "id,k");
    let all = records(9_000, kafka::now_ms(), 600, 97, |id, _| {
        json!({"id": id}).to_string()
    });
    upsert::produce_sides(&left, &right, &all);

    // Without HASH_BY: refused at start, naming the fix.
    let mut refused = Sidejoin::start(
        "run",
        &with(&env, &[("SIDEJOIN_ON_COPARTITION_VIOLATION", "fail")]),
    );
    assert_eq!(refused.wait(WAIT), 2, "{}", refused.logs());
    let logs = refused.logs();
    assert!(logs.contains("not co-partitioned"), "{logs}");
    assert!(logs.contains("SIDEJOIN_LEFT_HASH_BY=$join_key"), "{logs}");

    let env = with(&env, &[("SIDEJOIN_LEFT_HASH_BY", "$join_key")]);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    a.wait_ready(WAIT);
    b.wait_ready(WAIT);
    let want = upsert::replay_table(&env, &all);
    upsert::wait_for_table(&kafka_out(&env), &want, Instant::now() + WAIT);
    let logs = [a.logs(), b.logs()].concat();
    // The right topic's keys (the join key as JSON numbers, librdkafka's default partitioner)
    // were learnt from its records.
    assert!(
        logs.contains("keys its records as 3 partitions, keys as JSON values, placed by CRC-32"),
        "{logs}"
    );
    assert_eq!(
        kafka::partition_count(&format!("{app}-left-repartition")),
        3,
        "the repartition topic has the right side's partition count"
    );
    let routed = a.metric("sidejoin_repartition_records_total", "result=\"out\"")
        + b.metric("sidejoin_repartition_records_total", "result=\"out\"");
    let lefts = all.iter().filter(|(l, ..)| *l).count() as f64;
    // Every left record once, the updates that moved a row twice.
    assert!(
        routed > lefts,
        "{routed} records routed for {lefts} left records"
    );
}

/// Issue 24: the same Debezium side keyed by its primary key, on four partitions, with no
/// placement setting at all — the plan re-keys it by the join key by itself (the right side,
/// an upsert topic keyed by its primary key, the join key, is read as it is) — and two
/// instances fold to replay.
#[test]
fn a_debezium_side_keyed_by_primary_key_is_rekeyed_without_any_setting() {
    let (app, left, right, env) = env("rekey-auto", [4, 4, 2], "id,k");
    let env = with(
        &kafka::undeclared(env),
        &[("SIDEJOIN_RIGHT_FORMAT", "upsert-json")],
    );
    let all = records(6_000, kafka::now_ms(), 500, 89, |id, _| {
        json!({"id": id}).to_string()
    });
    upsert::produce_sides(&left, &right, &all);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    a.wait_ready(WAIT);
    b.wait_ready(WAIT);
    let want = upsert::replay_table(&env, &all);
    upsert::wait_for_table(&kafka_out(&env), &want, Instant::now() + WAIT);
    assert_eq!(
        kafka::partition_count(&format!("{app}-left-repartition")),
        4
    );
    assert_eq!(
        kafka::partition_count(&format!("{app}-right-repartition")),
        0,
        "the right side is keyed by its join key: read as it is"
    );
    let logs = [a.logs(), b.logs()].concat();
    assert!(logs.contains("keys its records as"), "mirrored:\n{logs}");
}

fn kafka_out(env: &[(String, String)]) -> String {
    env.iter()
        .find(|(k, _)| k == "SIDEJOIN_OUTPUT_TOPIC")
        .map(|(_, v)| v.clone())
        .expect("output topic")
}

/// The broadcast scenario's output folded, against replay's table: `(equal, differing keys)`.
fn broadcast_run(hash_by: bool) -> (bool, usize, String) {
    let name = if hash_by { "mrs" } else { "mrs-plain" };
    let (_app, left, right, env) = env(name, [6, 1, 3], "id");
    let mut env = with(&env, &[("SIDEJOIN_BROADCAST", "right")]);
    if hash_by {
        env = with(&env, &[("SIDEJOIN_LEFT_HASH_BY", "id")]);
    }
    // Keyed by the row's current join key: a row's changes land in different partitions.
    let all = records(9_000, kafka::now_ms(), 300, 97, |_, k| k.to_string());
    upsert::produce_sides(&left, &right, &all);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    a.wait_ready(WAIT);
    let want = upsert::replay_table(&env, &all);
    let out = kafka_out(&env);
    // Everything consumed: the table stops changing.
    let deadline = Instant::now() + WAIT;
    let mut last: Option<Vec<kafka::Record>> = None;
    loop {
        std::thread::sleep(Duration::from_secs(3));
        let got = kafka::read_to_end(&out, Duration::from_secs(60));
        let table = upsert::fold(got.iter().map(|r| (r.key_json(), r.value_json())));
        if table == want {
            return (true, 0, a.logs());
        }
        if last.as_ref().is_some_and(|l| l.len() == got.len()) || Instant::now() >= deadline {
            let differing = want
                .iter()
                .filter(|(k, v)| table.get(*k) != Some(*v))
                .count()
                + table.keys().filter(|k| !want.contains_key(*k)).count();
            return (false, differing, a.logs());
        }
        last = Some(got);
    }
}

#[test]
fn broadcast_with_hash_by_primary_key_keeps_each_rows_changes_in_order() {
    let (equal, differing, logs) = broadcast_run(true);
    assert!(equal, "{differing} keys differ from replay:\n{logs}");
    assert!(
        logs.contains("by id (6 partitions, keys as sidejoin's canonical key"),
        "{logs}"
    );
}

#[test]
fn broadcast_without_hash_by_on_a_topic_keyed_by_something_else_differs_from_replay() {
    // The case HASH_BY exists for: the same input without it goes wrong (if this ever passes,
    // the test above proves nothing).
    let (equal, differing, _) = broadcast_run(false);
    assert!(
        !equal && differing > 0,
        "without HASH_BY the output still equals replay"
    );
}

/// The left side re-keyed by `k`, undecodable or unroutable records to a dead-letter topic of
/// the test's own: `(dlq, left, right, env)`.
fn dead_letter_env(name: &str) -> (String, String, String, Vec<(String, String)>) {
    let (app, left, right, env) = env(name, [2, 2, 1], "id,k");
    let dlq = format!("{app}-dlq");
    let env = with(
        &env,
        &[
            ("SIDEJOIN_LEFT_HASH_BY", "k"),
            ("SIDEJOIN_ON_ERROR", "dlq"),
            ("SIDEJOIN_DLQ_TOPIC", &dlq),
        ],
    );
    (dlq, left, right, env)
}

/// Right rows of keys 1–20: enough keys to tell the right producer's partitioner (librdkafka's)
/// from Kafka's.
fn right_keys(t0: i64) -> Vec<Pair> {
    (1..=20).map(|k| upsert::right_row(k, k * 10, t0)).collect()
}

#[test]
fn a_record_without_the_hashed_column_goes_to_the_dead_letter_topic_with_the_reason() {
    let (dlq, left, right, env) = dead_letter_env("rekey-dlq");
    let t0 = kafka::now_ms();
    let good = |id: u64, k: u64, ts: i64| -> Pair {
        let after = json!({"id": id, "k": k, "v": 1});
        (
            true,
            json!({"id": id}).to_string(),
            json!({"before": null, "after": after, "op": "c"}).to_string(),
            ts,
        )
    };
    let bad: Pair = (
        true,
        json!({"id": 9}).to_string(),
        json!({"before": null, "after": {"id": 9, "v": 1}, "op": "c"}).to_string(),
        t0 + 3,
    );
    let mut all = right_keys(t0);
    all.extend([good(1, 1, t0 + 2), bad.clone(), good(2, 2, t0 + 4)]);
    upsert::produce_sides(&left, &right, &all);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    a.wait_ready(WAIT);
    let deadline = Instant::now() + WAIT;
    let dead = loop {
        let got = kafka::read_to_end(&dlq, Duration::from_secs(30));
        if !got.is_empty() || Instant::now() >= deadline {
            break got;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(dead.len(), 1, "{}", a.logs());
    let reason = &dead[0].headers["sidejoin.error"];
    assert!(
        reason.contains("no `k` column") && reason.contains("SIDEJOIN_LEFT_HASH_BY"),
        "{reason}"
    );
    let value: Value = dead[0].value_json();
    assert_eq!(value["after"]["id"], 9);
    // The others are joined (replay, which does not repartition, takes the row's missing `k`
    // as null: it is left out of replay's input).
    let want = upsert::replay_table(&env, all.iter().filter(|r| **r != bad));
    upsert::wait_for_table(&kafka_out(&env), &want, Instant::now() + WAIT);
}

#[test]
fn a_record_that_panics_the_router_goes_to_the_dead_letter_topic() {
    let (dlq, left, right, env) = dead_letter_env("rekey-panic");
    let t0 = kafka::now_ms();
    let row = |id: u64, k: u64, v: &str, ts: i64| -> Pair {
        let after = json!({"id": id, "k": k, "v": v});
        let value = json!({"before": null, "after": after, "op": "c"});
        (true, json!({"id": id}).to_string(), value.to_string(), ts)
    };
    // The router panics on it (`SJ_TEST_FAULT=panic_on_marker`) once it has routed it.
    let poison = row(9, 3, "SJ_TEST_POISON", t0 + 3);
    let mut all = right_keys(t0);
    all.extend([
        row(1, 1, "a", t0 + 2),
        poison.clone(),
        row(2, 3, "b", t0 + 4),
    ]);
    upsert::produce_sides(&left, &right, &all);
    let run_env = with(&env, &[("SJ_TEST_FAULT", "panic_on_marker")]);
    let mut a = Sidejoin::start("run", &kills::instance(&run_env, 0));
    a.wait_ready(WAIT);
    let dead = kafka::read_all(&dlq, 1, WAIT);
    assert_eq!(dead.len(), 1, "{}", a.logs());
    let reason = &dead[0].headers["sidejoin.error"];
    assert!(
        reason.contains("panicked") && reason.contains("panic_on_marker"),
        "{reason}"
    );
    assert_eq!(dead[0].headers["sidejoin.source.topic"], left);
    assert_eq!(dead[0].value_json()["after"]["v"], "SJ_TEST_POISON");
    // The others are joined, the one after it on the same join key too.
    let want = upsert::replay_table(&env, all.iter().filter(|r| **r != poison));
    upsert::wait_for_table(&kafka_out(&env), &want, Instant::now() + WAIT);
    assert_eq!(
        a.metric("sidejoin_repartition_records_total", "result=\"error\""),
        1.0
    );
    assert_eq!(a.get("/healthz").0, 200, "still running");
}
