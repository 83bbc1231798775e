//! State that knows whose it is (`src/runtime/durable/identity.rs`), on the real broker: a
//! state directory records the application id and the topic IDs of its changelog and input
//! topics, and one that records another is discarded and restored from the changelog, with one
//! log line saying why:
//! - a directory of application A started as application B;
//! - a directory kept while the application was reset (changelog topics deleted and created
//!   again, the group's offsets deleted);
//!
//! in both, the output equals replay. A changelog topic deleted under a running instance stops
//! it with a named error.

use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions};
use rdkafka::client::DefaultClientContext;
use rdkafka::ClientConfig;

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert;

fn admin() -> AdminClient<DefaultClientContext> {
    ClientConfig::new()
        .set("bootstrap.servers", kafka::bootstrap())
        .create()
        .unwrap()
}

/// Deletes `topics` and waits until the broker no longer lists them.
fn delete_topics(topics: &[String]) {
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let res = futures::executor::block_on(admin().delete_topics(&names, &AdminOptions::new()));
    for r in res.unwrap() {
        r.unwrap_or_else(|(t, e)| panic!("delete topic {t}: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    while topics.iter().any(|t| kafka::partition_count(t) > 0) {
        assert!(Instant::now() < deadline, "topics {topics:?} still listed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Deletes the consumer group `group` (its committed offsets).
fn delete_group(group: &str) {
    let res = futures::executor::block_on(admin().delete_groups(&[group], &AdminOptions::new()));
    for r in res.unwrap() {
        r.unwrap_or_else(|(g, e)| panic!("delete group {g}: {e}"));
    }
}

/// `env` with `name` set to `value` (replaced, not added).
fn set(mut env: Vec<(String, String)>, name: &str, value: &str) -> Vec<(String, String)> {
    env.retain(|(k, _)| k != name);
    env.push((name.to_owned(), value.to_owned()));
    env
}

/// Two workers: two state directories, each discarded with its own line.
fn two_workers(env: Vec<(String, String)>) -> Vec<(String, String)> {
    set(env, "SIDEJOIN_WORKERS", "2")
}

/// The lines that say why a worker's directory was discarded: one per worker directory, each
/// containing `why`.
fn assert_discarded(logs: &str, why: &str) {
    let lines: Vec<&str> = (logs.lines())
        .filter(|l| l.contains("discarding the local state"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per worker directory:\n{logs}");
    for (w, line) in lines.iter().enumerate() {
        assert!(line.contains(why), "{line}");
        let dir = format!("worker-{w}: ");
        assert!(
            lines.iter().filter(|l| l.contains(&dir)).count() == 1,
            "{lines:?}"
        );
    }
}

fn changelogs(app: &str) -> Vec<String> {
    ["left", "right"]
        .map(|s| format!("{app}-{s}-changelog"))
        .to_vec()
}

/// Runs `env` over the records already produced until `n` were processed, then stops it.
fn run_once(env: &[(String, String)], n: u64) {
    let mut sj = Sidejoin::start("run", env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(n, WAIT);
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "clean stop:\n{}", sj.logs());
}

#[test]
fn a_state_directory_of_another_application_is_discarded() {
    let (left, right, out) = kafka::join_topics("identity-app", [2, 2, 2]);
    let app_a = kafka::unique("identity-a");
    let env_a = two_workers(kafka::with(
        kafka::base_env(&app_a, &left, &right, &out),
        &upsert::left_join_env(),
    ));
    let records = upsert::left_join_records(20_000, 0, kafka::now_ms(), 2_000, 500);
    upsert::produce_sides(&left, &right, &records);
    run_once(&env_a, records.len() as u64);
    // Application B on A's volume, writing its own output topic.
    let app_b = kafka::unique("identity-b");
    let out_b = kafka::unique("identity-b-out");
    kafka::create_topic(&out_b, 2);
    let dir_a = kills::state_dir(&env_a).to_string_lossy().into_owned();
    let env_b = kafka::with(
        kafka::base_env(&app_b, &left, &right, &out_b),
        &upsert::left_join_env(),
    );
    let env_b = two_workers(set(env_b, "SIDEJOIN_STATE_DIR", &dir_a));
    let mut sj = Sidejoin::start("run", &env_b);
    sj.wait_ready(WAIT);
    let want = upsert::replay_table(&env_b, &records);
    upsert::wait_for_table(&out_b, &want, Instant::now() + WAIT);
    let why = format!("belongs to application `{app_a}`, not `{app_b}`");
    assert_discarded(&sj.logs(), &why);
}

#[test]
fn a_state_directory_kept_across_a_reset_is_discarded() {
    let (left, right, out) = kafka::join_topics("identity-reset", [2, 2, 2]);
    let app = kafka::unique("identity-reset-app");
    let env = two_workers(kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    ));
    let t0 = kafka::now_ms();
    let first = upsert::left_join_records(20_000, 0, t0, 2_000, 500);
    let second = upsert::left_join_records(5_000, 20_000, t0, 2_000, 500);
    upsert::produce_sides(&left, &right, &first);
    run_once(&env, first.len() as u64);
    // The reset: changelogs and the group's offsets deleted; the volume kept.
    delete_topics(&changelogs(&app));
    delete_group(&app);
    upsert::produce_sides(&left, &right, &second);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let want = upsert::replay_table(&env, first.iter().chain(&second));
    upsert::wait_for_table(&out, &want, Instant::now() + WAIT);
    let changelog = format!("changelog topic `{app}-left-changelog` was recreated");
    assert_discarded(&sj.logs(), &changelog);
}

#[test]
fn a_changelog_deleted_under_a_running_instance_stops_it() {
    let (left, right, out) = kafka::join_topics("identity-running", [2, 2, 2]);
    let app = kafka::unique("identity-running-app");
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    let records = upsert::left_join_records(2_000, 0, kafka::now_ms(), 200, 50);
    upsert::produce_sides(&left, &right, &records);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(records.len() as u64, WAIT);
    delete_topics(&changelogs(&app)[..1]);
    let code = sj.wait(WAIT);
    let logs = sj.logs();
    assert_eq!(code, 1, "{logs}");
    let named = format!("changelog topic `{app}-left-changelog` was replaced under this instance");
    assert!(logs.contains(&named), "{logs}");
}
