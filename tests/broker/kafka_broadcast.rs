//! `SIDEJOIN_BROADCAST` on the real broker (SPEC §6): a big left topic of 6 partitions joined
//! with a small right topic of 1 — not co-partitioned, refused without broadcast — by 3
//! instances: one takes everything, two join (tasks move with their state, the broadcast side
//! included), one is killed -9 in the middle of more input and restarted, then all input is
//! consumed. Both sides get updates (left rows by id, right rows by k). The output folded as an
//! upsert table equals `sidejoin replay` of the same input.

use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert::{self, Pair};

/// What a scenario leaves: the variables, the output topic, the input, and the instances,
/// still running (the group's offsets are the left side's only: the last broadcast records may
/// still be on their way when the left side is all consumed).
struct Ran {
    env: Vec<(String, String)>,
    out: String,
    all: Vec<Pair>,
    _running: Vec<Sidejoin>,
}

/// Runs the instances over the input.
fn scenario(name: &str, join_type: &str, right_partitions: i32, extra: &[(&str, &str)]) -> Ran {
    let (left, right, out) = kafka::join_topics(name, [6, right_partitions, 3]);
    let app = kafka::unique(&format!("{name}-app"));
    let env = broadcast_env(&app, &left, &right, &out, join_type, extra);
    let t0 = kafka::now_ms();
    let mut all: Vec<Pair> = Vec::new();
    let mut next = 0;
    // Left rows: 3,000 ids over 500 join keys (updated as ids repeat); right rows: one per key,
    // updated as keys repeat.
    let mut more = |n: u64, all: &mut Vec<Pair>| {
        let b = upsert::left_join_records(n, next, t0, 3_000, 500);
        next += n;
        upsert::produce_sides(&left, &right, &b);
        all.extend(b);
        all.iter().filter(|(l, ..)| *l).count() as i64
    };
    let lefts = more(12_000, &mut all);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    a.wait_ready(WAIT);
    kills::wait_consumed(&app, &[&left], lefts, "one instance", &[&a]);
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    let mut c = Sidejoin::start("run", &kills::instance(&env, 2));
    b.wait_ready(WAIT);
    c.wait_ready(WAIT);
    let lefts = more(12_000, &mut all);
    kills::wait_consumed(&app, &[&left], lefts, "three instances", &[&a, &b, &c]);
    // One killed in the middle of more input, then back.
    more(12_000, &mut all);
    c.wait_records_in(1, WAIT);
    c.signal("KILL");
    assert_eq!(c.wait(WAIT), -1);
    let mut c = Sidejoin::start("run", &kills::instance(&env, 2));
    c.wait_ready(WAIT);
    let lefts = more(6_000, &mut all);
    kills::wait_consumed(&app, &[&left], lefts, "after the kill", &[&a, &b, &c]);
    let logs = [a.logs(), b.logs(), c.logs()].concat();
    assert!(
        logs.contains("right broadcast"),
        "the topology is logged:\n{logs}"
    );
    assert!(
        !logs.contains("not co-partitioned"),
        "a broadcast join needs no co-partitioning:\n{logs}"
    );
    Ran {
        env,
        out,
        all,
        _running: vec![a, b, c],
    }
}

/// The variables of a broadcast join of `join_type` (`upsert::left_join_env`'s otherwise), with
/// `extra` variables (an empty value unsets one).
fn broadcast_env(
    app: &str,
    left: &str,
    right: &str,
    out: &str,
    join_type: &str,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut env = kafka::with(
        kafka::base_env(app, left, right, out),
        &upsert::left_join_env(),
    );
    env.retain(|(k, _)| k != "SIDEJOIN_JOIN_TYPE" && !extra.iter().any(|(e, _)| e == k));
    for (k, v) in [
        ("SIDEJOIN_JOIN_TYPE", join_type),
        ("SIDEJOIN_BROADCAST", "right"),
        ("SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", "6000"),
    ]
    .iter()
    .chain(extra)
    // An empty value unsets the variable.
    .filter(|(_, v)| !v.is_empty())
    {
        env.push((k.to_string(), v.to_string()));
    }
    env
}

/// The scenario's output folded as an upsert table equals replay's.
fn folds_to_replay(name: &str, join_type: &str, extra: &[(&str, &str)]) {
    let ran = scenario(name, join_type, 1, extra);
    let want = upsert::replay_table(&ran.env, &ran.all);
    upsert::wait_for_table(&ran.out, &want, Instant::now() + WAIT);
}

#[test]
fn broadcast_left_join_with_three_instances_and_a_kill_folds_to_replay() {
    folds_to_replay("broadcast-left", "left", &[]);
}

#[test]
fn broadcast_inner_join_exactly_once_with_three_instances_and_a_kill_folds_to_replay() {
    folds_to_replay(
        "broadcast-inner",
        "inner",
        &[("SIDEJOIN_PROCESSING_GUARANTEE", "exactly_once")],
    );
}

/// A broadcast topic of 3 partitions whose rows have no primary key (a multiset: a record
/// applied twice would be a second row), exactly once, as a changelog: each task reads all of
/// the partitions, its position in each kept in its state; the read_committed output
/// materialised equals replay's, with no change twice.
#[test]
fn a_multiset_broadcast_topic_of_three_partitions_exactly_once_materialises_to_replay() {
    let ran = scenario(
        "broadcast-three",
        "left",
        3,
        &[
            ("SIDEJOIN_PROCESSING_GUARANTEE", "exactly_once"),
            ("SIDEJOIN_OUTPUT_MODE", "changelog"),
            ("SIDEJOIN_RIGHT_PRIMARY_KEY", ""),
        ],
    );
    let want = upsert::replay_materialised(&ran.env, &ran.all);
    // The last broadcast records may still be on their way: read until the output is complete.
    let deadline = Instant::now() + WAIT;
    upsert::wait_materialised(
        &ran.out,
        &want,
        deadline,
        Duration::from_millis(500),
        |got| {
            format!(
                "the materialised output differs from replay's: {} rows, {} wanted",
                got.len(),
                want.len()
            )
        },
    );
}

/// State written by a co-partitioned join is not taken by a broadcast one (its tasks read
/// other input): a named error, exit 2.
#[test]
fn switching_to_broadcast_under_the_same_application_id_is_refused() {
    let (left, right, out) = kafka::join_topics("broadcast-switch", [2, 2, 1]);
    let app = kafka::unique("broadcast-switch-app");
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    let records = upsert::left_join_records(200, 0, kafka::now_ms(), 100, 10);
    upsert::produce_sides(&left, &right, &records);
    let mut s = Sidejoin::start("run", &env);
    s.wait_ready(WAIT);
    s.wait_records_in(200, WAIT);
    s.signal("TERM");
    assert_eq!(s.wait(WAIT), 0, "{}", s.logs());
    let mut env = env;
    env.push(("SIDEJOIN_BROADCAST".into(), "right".into()));
    let mut s = Sidejoin::start("run", &env);
    assert_eq!(s.wait(WAIT), 2, "{}", s.logs());
    let logs = s.logs();
    assert!(
        logs.contains("SIDEJOIN_BROADCAST changed under the same SIDEJOIN_APPLICATION_ID")
            && logs.contains(&format!("offsets of `{right}`")),
        "{logs}"
    );
}

#[test]
fn unequal_partition_counts_without_broadcast_are_refused_naming_the_fix() {
    let (left, right, out) = kafka::join_topics("broadcast-refused", [6, 1, 1]);
    let app = kafka::unique("broadcast-refused-app");
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    let mut s = Sidejoin::start("run", &env);
    assert_eq!(s.wait(WAIT), 2, "{}", s.logs());
    let logs = s.logs();
    assert!(
        logs.contains(&format!(
            "left topic `{left}` has 6 partitions but right topic `{right}` has 1"
        )),
        "{logs}"
    );
    assert!(logs.contains("set SIDEJOIN_BROADCAST=right"), "{logs}");
    assert!(
        logs.contains("or SIDEJOIN_RIGHT_HASH_BY=$join_key"),
        "{logs}"
    );
}
