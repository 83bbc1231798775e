//! `SIDEJOIN_<SIDE>_HASH_BY` under kills on the real broker, exactly once: a router or a join
//! killed -9 mid-stream and restarted; each record is routed and applied once (the changelog
//! output materialised equals replay's).

use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert::{self, Pair};
use serde_json::json;

/// Under exactly once, the instance routing a multiset side (rows without a primary key: a
/// record routed twice would be a second row) is killed -9 while records keep arriving; the
/// router moves to the other instance, which resumes from the last commit (the killed one's
/// open transaction aborted); the killed one comes back. The changelog output materialised
/// equals replay's, with no change twice; the repartition topic is purged of what the join has
/// committed.
#[test]
fn exactly_once_a_router_killed_mid_stream_routes_each_record_once() {
    killed_mid_stream("rekey-eos", true);
}

/// The same without HASH_BY (the left topic keyed by the join key): the join's tasks move
/// between the instances and back, each continuing a local copy of a task's state from the
/// changelog. Regression: that restore once left the input offsets it had read before loading
/// stale in the store's cache, so the task resumed thousands of records early and applied them
/// twice (2 of 5 runs).
#[test]
fn exactly_once_a_join_killed_mid_stream_applies_each_record_once() {
    killed_mid_stream("kill-eos", false);
}

/// Two instances, one killed -9 mid-stream (the router when `hash_by`) and restarted: the
/// changelog output materialised equals replay's.
fn killed_mid_stream(name: &str, hash_by: bool) {
    let (left, right, out) = kafka::join_topics(name, [3, 3, 2]);
    let app = kafka::unique(&format!("{name}-app"));
    let env = kill_env(&app, &left, &right, &out, hash_by);
    let direct = !hash_by;
    let all = records(direct);
    // The right side first (the router learns its keys), then the rest in chunks.
    let (first, rest) = all.split_at(2_000);
    upsert::produce_sides(&left, &right, first);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    a.wait_ready(WAIT);
    b.wait_ready(WAIT);
    let producing = produce_in_chunks(&left, &right, rest);
    // Kill whichever routes (or instance 0), in the middle of the stream.
    let killed = first_past_8_000(&mut a, &mut b, direct);
    let (victim, survivor) = if killed == 0 {
        (&mut a, &b)
    } else {
        (&mut b, &a)
    };
    victim.signal("KILL");
    assert_eq!(victim.wait(WAIT), -1);
    let victim = victim.logs();
    let mut back = Sidejoin::start("run", &kills::instance(&env, killed));
    back.wait_ready(WAIT);
    producing.join().unwrap();
    let want = upsert::replay_materialised(&env, &all);
    upsert::wait_materialised(
        &out,
        &want,
        Instant::now() + WAIT,
        Duration::from_secs(1),
        |got| {
            let differing: Vec<_> = want
                .iter()
                .filter(|(k, v)| got.get(*k) != Some(v))
                .take(3)
                .collect();
            format!(
            "the output differs from replay: {} rows vs {}, e.g. {differing:?} (got {:?}):\n{victim}\n----\n{}\n----\n{}",
            got.len(),
            want.len(),
            differing.first().map(|(k, _)| got.get(*k)),
            survivor.logs(),
            back.logs()
        )
        },
    );
    let logs = [survivor.logs(), back.logs()].concat();
    if direct {
        return;
    }
    assert_router_moved_and_repartition_purged(&app, &logs);
}

/// The variables of the kill tests' join (of `app`), the left side repartitioned when
/// `hash_by`.
fn kill_env(app: &str, left: &str, right: &str, out: &str, hash_by: bool) -> Vec<(String, String)> {
    let mut env = kafka::base_env(app, left, right, out);
    for (k, v) in [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "k"),
        ("SIDEJOIN_OUTPUT_MODE", "changelog"),
        ("SIDEJOIN_SELECT", "l.id AS id, l.k AS k, r.w AS w"),
        ("SIDEJOIN_PROCESSING_GUARANTEE", "exactly_once"),
        ("SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", "6000"),
    ] {
        env.push((k.into(), v.into()));
    }
    if hash_by {
        env.push(("SIDEJOIN_LEFT_HASH_BY".into(), "$join_key".into()));
    }
    env
}

/// 30,000 records stamped from now on: left rows `{id, k}` keyed by id (by the join key k when
/// `direct`), every fourth one a right row keyed by k.
fn records(direct: bool) -> Vec<Pair> {
    let t0 = kafka::now_ms();
    (0..30_000u64)
        .map(|i| {
            let ts = t0 + i as i64;
            if i % 4 == 3 {
                upsert::right_row((i * 104_729) % 89, i, ts)
            } else {
                let value = json!({"id": i, "k": (i * 31) % 89}).to_string();
                let key = if direct {
                    ((i * 31) % 89).to_string()
                } else {
                    json!({"id": i}).to_string()
                };
                (true, key, value, ts)
            }
        })
        .collect()
}

/// Produces `records` 1,000 at a time, 150 ms apart, from a thread of its own.
fn produce_in_chunks(left: &str, right: &str, records: &[Pair]) -> JoinHandle<()> {
    let (l, r, chunks) = (left.to_owned(), right.to_owned(), records.to_vec());
    std::thread::spawn(move || {
        for chunk in chunks.chunks(1_000) {
            upsert::produce_sides(&l, &r, chunk);
            std::thread::sleep(Duration::from_millis(150));
        }
    })
}

/// Waits until instance `a` (0) or `b` (1) has routed more than 8,000 records (taken in more
/// than 8,000 left records when `direct`); returns which.
fn first_past_8_000(a: &mut Sidejoin, b: &mut Sidejoin, direct: bool) -> usize {
    let routed = |s: &mut Sidejoin| {
        if direct {
            s.metric("sidejoin_records_in_total", "side=\"left\"")
        } else {
            s.metric("sidejoin_repartition_records_total", "result=\"out\"")
        }
    };
    let deadline = Instant::now() + WAIT;
    loop {
        let (ra, rb) = (routed(a), routed(b));
        if ra > 8_000.0 {
            return 0;
        }
        if rb > 8_000.0 {
            return 1;
        }
        assert!(
            Instant::now() < deadline,
            "nothing routed:\n{}\n{}",
            a.logs(),
            b.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The `logs` of the instances left show the router moved or came back, and `app`'s
/// repartition topic gets purged below what the join committed (every 30 s).
fn assert_router_moved_and_repartition_purged(app: &str, logs: &str) {
    assert!(
        logs.contains("routing `"),
        "the router moved or came back:\n{logs}"
    );
    // Purged below what the join committed (every 30 s).
    let topic = format!("{app}-left-repartition");
    let deadline = Instant::now() + Duration::from_secs(90);
    while kafka::low_watermarks(&topic).iter().all(|low| *low == 0) {
        assert!(Instant::now() < deadline, "`{topic}` never purged:\n{logs}");
        std::thread::sleep(Duration::from_secs(1));
    }
}
