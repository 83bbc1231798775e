//! The seeds' SQL jobs end to end on the real broker (issue 14, acceptance 1): `sidejoin run`
//! configured by `SIDEJOIN_SQL` alone (plus the test's state directory, commit interval and, for
//! `print` sinks, the output topic), fed the golden fixture's records one at a time, writes
//! exactly the records `sidejoin replay` writes for them with the same SQL.
//!
//! The script is the fixture's `job.sql` with the broker address, topics and consumer group
//! replaced by the test's own (topics are unique per test run). Seed 002's interval join pads its
//! last row at the end of the input in replay, which a running join never reaches: there
//! `SIDEJOIN_MAX_WAIT` (a variable the SQL does not cover) pads it on the wall clock instead, and
//! the records are compared as a multiset.

use std::time::Duration;

use crate::common::fixtures;
use crate::common::kafka::{self, Sidejoin};
use crate::common::upsert::{self, replay_records};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(60);

/// The value of `var` the script sets.
fn sql_value(sql: &str, var: &str) -> Option<String> {
    sidejoin::sql::translate(sql)
        .expect("the fixture's SQL translates")
        .settings
        .get(var)
        .map(|s| s.value.clone())
}

fn sql_end_to_end(fixture: &str) {
    sql_end_to_end_with(fixture, &[], true);
}

/// `extra`: variables for `run` only; `ordered`: the output topic must hold replay's records in
/// replay's order (else as a multiset).
fn sql_end_to_end_with(fixture: &str, extra: &[(&str, &str)], ordered: bool) {
    let f = fixtures::load(&fixtures::fixtures_dir().join(fixture));
    let original = std::fs::read_to_string(f.dir.join("job.sql")).unwrap();
    let (left, right, output) = kafka::join_topics(fixture, [1, 1, 1]);
    let app = kafka::unique(&format!("{fixture}-app"));
    let sql = test_sql(&original, &left, &right, &output, &app);
    let env = sql_env(&app, &left, &right, &output, sql);
    let mut run_env = env.clone();
    run_env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut sj = Sidejoin::start("run", &run_env);
    sj.wait_ready(WAIT);
    // `scan.startup.mode = latest-offset`: a new group starts at the end, so give the consumer
    // a moment to fix its position before the first record.
    std::thread::sleep(Duration::from_secs(2));
    let lines = kafka::produce_one_by_one(&mut sj, input_steps(&f.input, &left, &right), WAIT);
    let want = replay_records(&env, &lines);
    assert!(!want.is_empty(), "{fixture}: the job must produce output");
    upsert::assert_replays_records(&output, &want, ordered, fixture, &sj, WAIT);
    upsert::assert_no_more_than(&output, want.len(), fixture);
}

/// The fixture's script `original` with the broker address, topics and consumer group replaced
/// by the test's own.
pub(crate) fn test_sql(original: &str, left: &str, right: &str, output: &str, app: &str) -> String {
    let mut sql = original.replace("'localhost:9092'", &format!("'{}'", kafka::bootstrap()));
    for (var, new) in [
        ("SIDEJOIN_LEFT_TOPIC", left),
        ("SIDEJOIN_RIGHT_TOPIC", right),
        ("SIDEJOIN_OUTPUT_TOPIC", output),
        ("SIDEJOIN_APPLICATION_ID", app),
    ] {
        if let Some(old) = sql_value(original, var) {
            sql = sql.replace(&format!("'{old}'"), &format!("'{new}'"));
        }
    }
    sql
}

/// `SIDEJOIN_SQL` and only what the SQL does not say: where state lives, how often to commit,
/// and the topic a `print` sink's rows go to in `run`.
pub(crate) fn sql_env(
    app: &str,
    left: &str,
    right: &str,
    output: &str,
    sql: String,
) -> Vec<(String, String)> {
    let mut env = kafka::undeclared(kafka::base_env(app, left, right, output));
    env.retain(|(k, _)| {
        !matches!(
            k.as_str(),
            "SIDEJOIN_BOOTSTRAP_SERVERS"
                | "SIDEJOIN_APPLICATION_ID"
                | "SIDEJOIN_LEFT_TOPIC"
                | "SIDEJOIN_RIGHT_TOPIC"
        )
    });
    env.push(("SIDEJOIN_SQL".to_owned(), sql));
    env
}

/// The records of a fixture's `input` lines (unkeyed, stamped now as each is produced), each
/// with its replay line.
fn input_steps<'a>(
    input: &'a str,
    left: &'a str,
    right: &'a str,
) -> impl Iterator<Item = ((String, Option<String>, Option<String>, i64), String)> + 'a {
    input
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(move |line| {
            let rec: Value = serde_json::from_str(line).unwrap();
            let topic = if rec["side"] == "left" { left } else { right };
            // A csv value is the line itself; a JSON value its text.
            let value = match &rec["value"] {
                Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            let timestamp = kafka::now_ms();
            let line =
            json!({"side": rec["side"], "key": null, "value": rec["value"], "timestamp": timestamp})
                .to_string();
            ((topic.to_owned(), None, Some(value), timestamp), line)
        })
}

#[test]
fn seed000_sql_with_the_hint_end_to_end() {
    sql_end_to_end("sql_seed000_left_join_hint");
}

#[test]
fn seed000_sql_without_the_hint_end_to_end() {
    sql_end_to_end("sql_seed000_left_join");
}

#[test]
fn seed001_sql_dedup_end_to_end() {
    sql_end_to_end("sql_seed001_dedup");
}

#[test]
fn seed002_sql_interval_join_end_to_end() {
    // Matches come within a second; the unmatched row 3 is padded 8 s after it arrived.
    sql_end_to_end_with(
        "sql_seed002_interval",
        &[("SIDEJOIN_MAX_WAIT", "8s")],
        false,
    );
}

#[test]
fn seed004_sql_inner_join_end_to_end() {
    sql_end_to_end("sql_seed004_inner");
}

#[test]
fn seed004_sql_left_join_end_to_end() {
    sql_end_to_end("sql_seed004_left");
}

#[test]
fn seed004_sql_full_join_end_to_end() {
    sql_end_to_end("sql_seed004_full");
}
