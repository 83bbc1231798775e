//! Several instances in one group on the real broker (SPEC §6–7): 6 partitions, one instance,
//! then three (two join: rebalances move partitions and their state), one stopped with SIGTERM
//! (its partitions committed and handed over), one killed -9 and restarted (its partitions
//! restored elsewhere, then back), then all input consumed. Each instance has its own state
//! directory, as pods have their own volumes: moved state comes from the changelog topics.
//!
//! At least once, the output folded as an upsert table equals replay; exactly once, the
//! read_committed output materialised as a changelog equals replay's, with no change twice.

use std::time::Instant;

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert::{self, Pair as In};

/// Runs the scenario with `extra` variables; returns the env, the output topic and every
/// record produced.
fn scenario(name: &str, extra: &[(&str, &str)]) -> (Vec<(String, String)>, String, Vec<In>) {
    let (left, right, out) = kafka::join_topics(name, [6, 6, 6]);
    let app = kafka::unique(&format!("{name}-app"));
    let mut env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    env.push((
        "SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS".into(),
        "6000".into(),
    ));
    for (k, v) in extra {
        env.push((k.to_string(), v.to_string()));
    }
    let topics = [left.as_str(), right.as_str()];
    let t0 = kafka::now_ms();
    let mut all = Vec::new();
    let mut next = 0;
    let mut more = |n: u64, all: &mut Vec<_>| {
        let b = upsert::left_join_records(n, next, t0, 6_000, 1_500);
        next += n;
        upsert::produce_sides(&left, &right, &b);
        all.extend(b);
        all.len() as i64
    };
    // One instance takes all six partitions.
    let total = more(40_000, &mut all);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    a.wait_ready(WAIT);
    kills::wait_consumed(&app, &topics, total, "one instance", &[&a]);
    // Two more join: partitions move to them with their state.
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    let mut c = Sidejoin::start("run", &kills::instance(&env, 2));
    b.wait_ready(WAIT);
    c.wait_ready(WAIT);
    let total = more(40_000, &mut all);
    kills::wait_consumed(&app, &topics, total, "three instances", &[&a, &b, &c]);
    // One leaves cleanly, one is killed in the middle of more input, then comes back.
    b.signal("TERM");
    assert_eq!(b.wait(WAIT), 0, "SIGTERM: clean stop:\n{}", b.logs());
    let total = more(40_000, &mut all);
    c.wait_records_in(1, WAIT);
    c.signal("KILL");
    assert_eq!(c.wait(WAIT), -1);
    let mut c = Sidejoin::start("run", &kills::instance(&env, 2));
    c.wait_ready(WAIT);
    let total_end = more(20_000, &mut all);
    assert!(total_end > total);
    kills::wait_consumed(&app, &topics, total_end, "after the kill", &[&a, &c]);
    let logs = [a.logs(), c.logs()].concat();
    assert!(
        logs.contains("restored"),
        "moved partitions were restored from the changelog:\n{logs}"
    );
    drop((a, c));
    (env, out, all)
}

#[test]
fn three_instances_at_least_once_fold_to_replay() {
    let (env, out, all) = scenario("instances-alo", &[]);
    let want = upsert::replay_table(&env, &all);
    upsert::wait_for_table(&out, &want, Instant::now() + WAIT);
}

#[test]
fn three_instances_exactly_once_materialise_to_replay_with_no_change_twice() {
    let (env, out, all) = scenario(
        "instances-eos",
        &[
            ("SIDEJOIN_PROCESSING_GUARANTEE", "exactly_once"),
            ("SIDEJOIN_OUTPUT_MODE", "changelog"),
        ],
    );
    let want = upsert::replay_materialised(&env, &all);
    // `materialised` fails on a retraction of a row that is not there (a change twice).
    let got = upsert::materialised(&out);
    assert_eq!(got.len(), want.len(), "rows materialised");
    assert!(got == want, "the materialised output differs from replay's");
}
