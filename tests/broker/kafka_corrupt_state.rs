//! Stored data that fails verification (issue 22), on the real broker: a changelog record that
//! sidejoin did not write (garbage on the changelog topic) met while restoring refuses the
//! start with a message naming the changelog partition and the fix — an exit, not a panic, and
//! not a join against state it could not restore.

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
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(records.len() as u64, WAIT);
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "clean stop:\n{}", sj.logs());

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
