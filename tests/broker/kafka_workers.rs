//! `SIDEJOIN_WORKERS` on the real broker (SPEC §6): one process, 6 partitions spread over two
//! worker threads, each with its own consumer in the group and its own state directory; stopped
//! with SIGTERM, more input, restarted with three workers (partitions move between the workers'
//! directories: restored from the changelog). The output folded as an upsert table equals
//! replay of everything, and the shared metrics add the workers up: `records_in` is every record
//! consumed once, `state_rows` the live rows replay holds.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::upsert::{self, Pair as In};

const WAIT: Duration = Duration::from_secs(120);

/// The rows replay's state holds after `records`: distinct left ids, distinct right keys.
fn live_rows(records: &[In]) -> [f64; 2] {
    let mut sides = [BTreeSet::new(), BTreeSet::new()];
    for (left, _, v, _) in records {
        let v: serde_json::Value = serde_json::from_str(v).unwrap();
        let pk = if *left { &v["id"] } else { &v["k"] };
        sides[usize::from(!left)].insert(pk.to_string());
    }
    sides.map(|s| s.len() as f64)
}

/// Runs the join on everything produced so far (`all`); `fresh` of it is new to this run.
fn check(sj: &mut Sidejoin, env: &[(String, String)], out: &str, all: &[In], fresh: usize) {
    let want = upsert::replay_table(env, all);
    upsert::wait_for_table(out, &want, Instant::now() + WAIT);
    // Each worker's counts reach the shared metrics at its next checkpoint. Every record is
    // counted once, unless a rebalance (a worker joining late) aborted a checkpoint, whose records
    // are then consumed and counted again (at least once).
    let rows = live_rows(all);
    let deadline = Instant::now() + WAIT;
    loop {
        let got = [
            sj.metric("sidejoin_state_rows", "side=\"left\""),
            sj.metric("sidejoin_state_rows", "side=\"right\""),
        ];
        let records_in = sj.records_in();
        let logs = sj.logs();
        let redone = logs.contains("checkpoint aborted") || logs.contains("partitions lost");
        let counted = records_in == fresh as u64 || (redone && records_in > fresh as u64);
        if got == rows && counted {
            return;
        }
        assert!(
            Instant::now() < deadline && (redone || records_in <= fresh as u64),
            "metrics: state rows {got:?} (replay {rows:?}), records in {records_in} (produced {fresh}):\n{logs}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn with_workers(env: &[(String, String)], n: &str) -> Vec<(String, String)> {
    kafka::with(env.to_vec(), &[("SIDEJOIN_WORKERS".into(), n.into())])
}

#[test]
fn workers_share_an_instance_and_hand_partitions_over() {
    let (left, right, out) = kafka::join_topics("workers", [6, 6, 6]);
    let app = kafka::unique("workers-app");
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    let state: PathBuf = env
        .iter()
        .find(|(k, _)| k == "SIDEJOIN_STATE_DIR")
        .map(|(_, v)| v.into())
        .unwrap();
    let t0 = kafka::now_ms();
    let mut all = upsert::left_join_records(20_000, 0, t0, 4_000, 1_000);
    upsert::produce_sides(&left, &right, &all);

    let mut two = Sidejoin::start("run", &with_workers(&env, "2"));
    two.wait_ready(WAIT);
    check(&mut two, &env, &out, &all, all.len());
    for i in 0..2 {
        assert!(
            state.join(format!("worker-{i}")).is_dir(),
            "worker-{i}'s state"
        );
    }
    two.signal("TERM");
    assert_eq!(two.wait(WAIT), 0, "SIGTERM: clean stop:\n{}", two.logs());

    let more = upsert::left_join_records(20_000, 20_000, t0, 4_000, 1_000);
    upsert::produce_sides(&left, &right, &more);
    all.extend(more);
    let mut three = Sidejoin::start("run", &with_workers(&env, "3"));
    three.wait_ready(WAIT);
    check(&mut three, &env, &out, &all, 20_000);
    assert!(state.join("worker-2").is_dir(), "worker-2's state");
    let logs = three.logs();
    assert!(
        logs.contains("state restored"),
        "partitions that moved to worker 2 were restored from the changelog:\n{logs}"
    );
    three.signal("TERM");
    assert_eq!(
        three.wait(WAIT),
        0,
        "SIGTERM: clean stop:\n{}",
        three.logs()
    );
}
