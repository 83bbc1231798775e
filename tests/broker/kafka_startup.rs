//! Startup on the real broker (SPEC §6–9): missing topics and mismatched partition counts are
//! named errors, an unreachable broker is retried (not ready) until it appears, owned Kafka
//! properties are refused, secrets never reach the logs, and `check` prints the plan.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};

const WAIT: Duration = Duration::from_secs(90);

fn join_env(app: &str, left: &str, right: &str, out: &str) -> Vec<(String, String)> {
    let mut e = kafka::base_env(app, left, right, out);
    e.push(("SIDEJOIN_LEFT_KEY".into(), "id".into()));
    e.push(("SIDEJOIN_RIGHT_KEY".into(), "id".into()));
    e
}

#[test]
fn missing_topic_is_a_named_error() {
    let (left, right) = (kafka::unique("miss-l"), kafka::unique("miss-r"));
    kafka::create_topic(&left, 1);
    kafka::create_topic(&right, 1);
    let out = kafka::unique("never-created");
    let mut sj = Sidejoin::start(
        "run",
        &join_env(&kafka::unique("miss"), &left, &right, &out),
    );
    assert_eq!(sj.wait(WAIT), 2, "a configuration problem: exit 2");
    let logs = sj.logs();
    assert!(
        logs.contains(&format!(
            "SIDEJOIN_OUTPUT_TOPIC: topic `{out}` does not exist"
        )),
        "{logs}"
    );
}

#[test]
fn partition_count_mismatch_names_both_topics() {
    let (left, right, out) = kafka::join_topics("mm", [3, 2, 1]);
    let mut sj = Sidejoin::start("run", &join_env(&kafka::unique("mm"), &left, &right, &out));
    assert_eq!(sj.wait(WAIT), 2, "a configuration problem: exit 2");
    let logs = sj.logs();
    assert!(
        logs.contains(&format!(
            "left topic `{left}` has 3 partitions but right topic `{right}` has 2"
        )),
        "{logs}"
    );
    assert!(
        logs.contains("or SIDEJOIN_RIGHT_HASH_BY=$join_key to let sidejoin re-key that side"),
        "the fix is named: {logs}"
    );
}

/// `check` and `run` agree: a configuration error is exit 2 for both (the README's promise), here
/// inputs of 6 and 1 partitions without SIDEJOIN_BROADCAST or a HASH_BY.
#[test]
fn check_exits_2_for_a_configuration_error_as_run_does() {
    let (left, right, out) = kafka::join_topics("mm-check", [6, 1, 1]);
    let env = join_env(&kafka::unique("mm-check"), &left, &right, &out);
    let checked = crate::common::bin::sidejoin("check", env.clone())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&checked.stderr);
    assert_eq!(checked.status.code(), Some(2), "check: {stderr}");
    let named = format!("left topic `{left}` has 6 partitions but right topic `{right}` has 1");
    assert!(
        stderr.contains(&named),
        "check names the mismatch: {stderr}"
    );
    let mut sj = Sidejoin::start("run", &env);
    assert_eq!(sj.wait(WAIT), 2, "run: {}", sj.logs());
}

#[test]
fn a_changelog_topic_that_does_not_fit_is_a_named_error() {
    let (left, right, out) = kafka::join_topics("clt", [2, 2, 1]);
    // Another partition count than the inputs', then the right count but not compacted.
    for (partitions, want) in [
        (3, "has 3 partitions but the inputs have 2"),
        (2, "has cleanup.policy=delete, not compact"),
    ] {
        let app = kafka::unique("clt");
        kafka::create_topic(&format!("{app}-left-changelog"), partitions);
        let mut sj = Sidejoin::start("run", &join_env(&app, &left, &right, &out));
        assert_eq!(sj.wait(WAIT), 2, "a configuration problem: exit 2");
        let logs = sj.logs();
        assert!(
            logs.contains(&format!("changelog topic `{app}-left-changelog` {want}")),
            "{logs}"
        );
    }
}

#[test]
fn owned_kafka_property_is_refused() {
    let mut env = join_env("x", "a", "b", "c");
    env.push((
        "SIDEJOIN_KAFKA_ISOLATION_LEVEL".into(),
        "read_uncommitted".into(),
    ));
    let mut sj = Sidejoin::start("run", &env);
    assert_eq!(sj.wait(WAIT), 2);
    assert!(
        sj.logs()
            .contains("`isolation.level` is set by sidejoin itself"),
        "{}",
        sj.logs()
    );
}

#[test]
fn a_refused_passthrough_property_is_fatal_and_its_value_is_not_shown() {
    let mut env = join_env("x", "a", "b", "c");
    env.push((
        "SIDEJOIN_KAFKA_NOT_A_PROPERTY".into(),
        "hidden-value-42".into(),
    ));
    let mut sj = Sidejoin::start("run", &env);
    assert_eq!(sj.wait(WAIT), 2, "a configuration problem: exit 2");
    let logs = sj.logs();
    assert!(
        logs.contains(
            "SIDEJOIN_KAFKA_NOT_A_PROPERTY: librdkafka refused property `not.a.property`"
        ),
        "{logs}"
    );
    assert!(!logs.contains("hidden-value-42"), "{logs}");
}

#[test]
fn secrets_never_reach_the_logs() {
    let (left, right, out) = kafka::join_topics("sec", [1, 1, 1]);
    let secret = "s3cr3t-Pa55word-never-logged";
    let mut env = join_env(&kafka::unique("sec"), &left, &right, &out);
    env.push(("SIDEJOIN_KAFKA_SASL_USERNAME".into(), "someone".into()));
    env.push(("SIDEJOIN_KAFKA_SASL_PASSWORD".into(), secret.into()));
    env.push((
        "SIDEJOIN_KAFKA_DEBUG".into(),
        "conf,security,generic".into(),
    ));
    env.push(("RUST_LOG".into(), "debug".into()));
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    kafka::produce(
        &kafka::producer(),
        &left,
        None,
        Some("{\"id\":1}"),
        kafka::now_ms(),
    );
    sj.wait_records_in(1, WAIT);
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0);
    let logs = sj.logs();
    assert!(
        logs.contains("DEBUG"),
        "debug logging was on:\n{}",
        &logs[..logs.len().min(2000)]
    );
    assert!(
        logs.contains("sasl.password"),
        "the property is named (passthrough list)"
    );
    assert!(
        !logs.contains(secret),
        "the SASL password appeared in the logs"
    );
}

fn kafka_script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/kafka.sh")
}

fn script(args: &[&str]) -> String {
    let out = Command::new(kafka_script()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "kafka.sh {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A second broker of this test's own, stopped again when dropped.
struct OwnBroker(std::path::PathBuf);

impl Drop for OwnBroker {
    fn drop(&mut self) {
        let _ = Command::new(kafka_script())
            .arg("stop")
            .arg(&self.0)
            .status();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn unreachable_broker_is_retried_until_it_appears() {
    let dir = std::env::temp_dir().join(kafka::unique("own-broker"));
    let guard = OwnBroker(dir.clone());
    let d = dir.to_str().unwrap();
    let bootstrap = script(&["start", d]).trim().to_owned();
    for t in ["ul", "ur", "uo"] {
        script(&["topic", d, t, "1"]);
    }
    script(&["stop", d]);
    let mut env = join_env(&kafka::unique("unreach"), "ul", "ur", "uo");
    env.retain(|(k, _)| k != "SIDEJOIN_BOOTSTRAP_SERVERS");
    env.push(("SIDEJOIN_BOOTSTRAP_SERVERS".into(), bootstrap.clone()));
    let mut sj = Sidejoin::start("run", &env);
    // At least 8 s without a broker, and until the log says so (a metadata request times out
    // first: later on a loaded machine).
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(8) || !sj.logs().contains("is unreachable") {
        assert!(
            started.elapsed() < WAIT,
            "no 'is unreachable':\n{}",
            sj.logs()
        );
        assert_eq!(sj.get("/readyz").0, 503, "ready without a broker");
        assert_eq!(sj.get("/healthz").0, 200);
        std::thread::sleep(Duration::from_millis(200));
    }
    let again = script(&["start", d]).trim().to_owned();
    assert_eq!(again, bootstrap, "the broker came back on its old address");
    sj.wait_ready(WAIT);
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0);
    drop(guard);
}

/// `sidejoin check`'s output with exactly `env`, which must succeed.
fn check(env: Vec<(String, String)>) -> String {
    let out = crate::common::bin::sidejoin("check", env).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn check_prints_the_plan_and_the_topics() {
    let (left, right, out) = kafka::join_topics("chk", [2, 2, 1]);
    let mut env = join_env("chk", &left, &right, &out);
    env.push(("SIDEJOIN_JOIN_TYPE".into(), "left".into()));
    env.push(("SIDEJOIN_LEFT_PRIMARY_KEY".into(), "id".into()));
    env.push(("SIDEJOIN_OUTPUT_MODE".into(), "upsert".into()));
    let stdout = check(env);
    for needle in [
        "join: left regular join",
        "left: topic",
        "table: latest row per primary key (id)",
        "right: topic",
        "multiset of rows",
        "output: topic",
        "upsert (value or tombstone per key), key (id)",
        "output key provably unique: no (the right side has no primary key",
        "output insert-only: no (SIDEJOIN_LEFT_PRIMARY_KEY=id",
        "topics: left 2 partitions, right 2 partitions (co-partitioned), output 1 partitions",
        "placement left: read as it is: declared keyed by the join key (SIDEJOIN_LEFT_HASH_BY=none",
        "source left: `",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
}

#[test]
fn check_prints_the_broadcast_topology() {
    let (left, right, out) = kafka::join_topics("chk-bc", [4, 1, 1]);
    let mut env = join_env("chk-bc", &left, &right, &out);
    env.push(("SIDEJOIN_JOIN_TYPE".into(), "left".into()));
    env.push(("SIDEJOIN_BROADCAST".into(), "right".into()));
    let stdout = check(env);
    for needle in [
        "topology: right broadcast (SIDEJOIN_BROADCAST)",
        "topics: left 4 partitions, right 1 partitions (right broadcast: every worker reads all 1 of its partitions for each of the 4 tasks of the left side)",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
}

#[test]
fn check_prints_the_repartition_topology() {
    let (left, right, out) = kafka::join_topics("chk-rp", [4, 1, 1]);
    let mut env = join_env("chk-rp", &left, &right, &out);
    env.push(("SIDEJOIN_RIGHT_HASH_BY".into(), "$join_key".into()));
    let stdout = check(env);
    for needle in [
        format!("repartition: the right topic `{right}` is re-keyed by id into `"),
        "keys and partitioner learnt from the left topic's records, to meet them".to_owned(),
        "placement right: re-keyed: SIDEJOIN_RIGHT_HASH_BY".to_owned(),
        "topics: left 4 partitions, right 4 partitions (co-partitioned), output 1 partitions; the right topic's 1 partitions re-keyed into 4 (SIDEJOIN_RIGHT_HASH_BY)".to_owned(),
    ] {
        assert!(stdout.contains(needle.as_str()), "missing {needle:?} in:\n{stdout}");
    }
}
