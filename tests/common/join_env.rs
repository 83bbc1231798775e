//! The variables of a test's join: where it reads and writes, its state, and what the tests'
//! producers declare about their keys.

use std::path::PathBuf;

use super::kafka::bootstrap;

/// The variables for a join from `left` and `right` to `output` as group `app`; its state
/// directory is the app's own (a restart with the same app finds its state again), under
/// `TEST_STATE_DIR` (a directory `scripts/test.sh` removes afterwards) or the temp directory.
pub(crate) fn base_env(app: &str, left: &str, right: &str, output: &str) -> Vec<(String, String)> {
    let root = std::env::var_os("TEST_STATE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("sidejoin-test-state"));
    let state = root.join(app);
    [
        ("SIDEJOIN_STATE_DIR", state.to_string_lossy().into_owned()),
        ("SIDEJOIN_BOOTSTRAP_SERVERS", bootstrap()),
        ("SIDEJOIN_APPLICATION_ID", app.to_owned()),
        ("SIDEJOIN_LEFT_TOPIC", left.to_owned()),
        ("SIDEJOIN_RIGHT_TOPIC", right.to_owned()),
        ("SIDEJOIN_OUTPUT_TOPIC", output.to_owned()),
        ("SIDEJOIN_COMMIT_INTERVAL", "50ms".to_owned()),
        ("SIDEJOIN_SHUTDOWN_TIMEOUT", "20s".to_owned()),
        // The tests' producers key records by the join key: declared, so a side of several
        // partitions is read as it is (a test of automatic placement removes these, `undeclared`).
        ("SIDEJOIN_LEFT_HASH_BY", "none".to_owned()),
        ("SIDEJOIN_RIGHT_HASH_BY", "none".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// Adds `NAME=value` pairs (from a fixture env file) to `env`; a fixture's SQL places its
/// sides itself (`undeclared`).
pub(crate) fn with(
    mut env: Vec<(String, String)>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    if extra.iter().any(|(k, _)| k.starts_with("SIDEJOIN_SQL")) {
        env = undeclared(env);
    }
    env.extend(extra.iter().cloned());
    env
}

/// `env` without `base_env`'s declaration that the topics are keyed by the join key: sidejoin
/// places the sides from what their settings declare (SPEC §6).
pub(crate) fn undeclared(mut env: Vec<(String, String)>) -> Vec<(String, String)> {
    env.retain(|(k, v)| !(k.ends_with("_HASH_BY") && v == "none"));
    env
}
