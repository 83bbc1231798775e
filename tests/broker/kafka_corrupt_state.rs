//! Stored data that fails verification (issue 22), on the real broker: a changelog record that
//! sidejoin did not write (garbage on the changelog topic) met while restoring refuses the
//! start with a message naming the changelog partition and the fix; a state value corrupted on
//! disk ends the run with a message naming the input partition and the fix, and the fix (delete
//! the state directory) restores the partition from its changelog. Exits, not panics, and never
//! a join against state that could not be read.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert;

#[test]
fn a_garbage_changelog_record_refuses_the_start_with_a_named_message() {
    let (left, right, out) = kafka::join_topics("garbage-changelog", [1, 1, 1]);
    let app = kafka::unique("garbage-changelog-app");
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    let records = upsert::left_join_records(2_000, 0, kafka::now_ms(), 400, 100);
    upsert::produce_sides(&left, &right, &records);
    kills::run_until_consumed(&env, records.len());

    // Input partition 0's key prefix, and a timed-row value whose row text never closes its
    // string: its spans would run past the text.
    let changelog = format!("{app}-left-changelog");
    let garbage = (
        changelog.clone(),
        Some(b"\0\0\0\0garbage-key".to_vec()),
        Some(b"\x02\x01{\"k\":\"1}".to_vec()),
        kafka::now_ms(),
    );
    kafka::produce_many(&kafka::producer(), &[garbage]);
    std::fs::remove_dir_all(kills::state_dir(&env)).unwrap();

    let mut sj = Sidejoin::start("run", &env);
    let code = sj.wait(WAIT);
    let logs = sj.logs();
    assert_eq!(code, 1, "the start is refused:\n{logs}");
    assert!(
        logs.contains(&format!("changelog `{changelog}` partition 0 offset"))
            && logs.contains("fix: rebuild the state"),
        "the message names the partition and the fix:\n{logs}"
    );
    assert!(!logs.contains("panicked"), "no panic:\n{logs}");
}

/// A RocksDB key and its value.
type KeyValue = (Box<[u8]>, Box<[u8]>);

/// Every RocksDB database under `dir` (a directory holding `CURRENT`: the state directory
/// itself, or each worker's under it).
fn databases(dir: &Path) -> Vec<PathBuf> {
    if dir.join("CURRENT").exists() {
        return vec![dir.to_path_buf()];
    }
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.path().is_dir())
                .flat_map(|e| databases(&e.path()))
                .collect()
        })
        .unwrap_or_default()
}

/// Rewrites every stored row value (tag 1: the tag, three counters, the row's text) in the
/// databases under `dir` so that its text opens a string it never closes — its spans would run
/// past the text; returns how many values it corrupted.
fn corrupt_row_values(dir: &Path) -> usize {
    let mut corrupted = 0;
    for path in databases(dir) {
        let db = rocksdb::DB::open_default(&path).expect("open the stopped run's RocksDB");
        let rows: Vec<KeyValue> = db
            .iterator(rocksdb::IteratorMode::Start)
            .map(|kv| kv.expect("read RocksDB"))
            .filter(|(_, v)| v.len() > 17 && v[0] == 1)
            .collect();
        for (key, value) in rows {
            let mut bad = value[..17].to_vec();
            bad.extend_from_slice(b"{\"k\":\"1}");
            db.put(&key, &bad).expect("write RocksDB");
            corrupted += 1;
        }
    }
    corrupted
}

#[test]
fn a_corrupt_state_value_ends_the_run_with_the_fix_and_the_fix_restores_the_partition() {
    let (left, right, out) = kafka::join_topics("corrupt-value", [1, 1, 1]);
    let app = kafka::unique("corrupt-value-app");
    let mut env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    // One worker: the partition's state stays in the one database the test corrupts (with two,
    // the restart may give it to the other worker, which restores it from the changelog).
    env.push(("SIDEJOIN_WORKERS".into(), "1".into()));
    let first = upsert::left_join_records(2_000, 0, kafka::now_ms(), 400, 100);
    upsert::produce_sides(&left, &right, &first);
    kills::run_until_consumed(&env, first.len());

    let state = kills::state_dir(&env);
    assert!(corrupt_row_values(&state) > 0, "stored rows to corrupt");
    // Records of the same ids and keys: the join reads the corrupt rows.
    let second = upsert::left_join_records(200, 2_000, kafka::now_ms(), 400, 100);
    upsert::produce_sides(&left, &right, &second);
    let mut sj = Sidejoin::start("run", &env);
    let code = sj.wait(WAIT);
    let logs = sj.logs();
    assert_eq!(code, 1, "the run ends:\n{logs}");
    assert!(
        logs.contains("corrupt state value of input partition 0")
            && logs.contains("delete its state directory (SIDEJOIN_STATE_DIR)"),
        "the message names the partition and the fix:\n{logs}"
    );
    assert!(!logs.contains("panicked"), "no panic:\n{logs}");

    // The fix: the state directory deleted, the partition is restored from its changelog and
    // the join goes on where the last checkpoint left it.
    std::fs::remove_dir_all(&state).unwrap();
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let all: Vec<_> = first.iter().chain(&second).cloned().collect();
    upsert::wait_for_table(
        &out,
        &upsert::replay_table(&env, &all),
        Instant::now() + WAIT,
    );
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "clean stop:\n{}", sj.logs());
}
