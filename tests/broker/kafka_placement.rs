//! Placement from what is declared (SPEC §6, issue 24): the seeds' Flink SQL jobs pasted
//! unchanged onto topics of three partitions whose records carry no key — what Flink's own
//! Kafka sink and a console producer write — or a key that is not the join key, join as Flink
//! does: both sides are re-keyed by the join key, and the materialised output equals a naive
//! join of everything produced (`common::reference`, written apart from the engine). On one
//! partition the same jobs read the topics as they are: no repartition topic is created.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};

use super::kafka_sql::{sql_env, test_sql};
use crate::common::fixtures;
use crate::common::kafka::{self, Sidejoin};
use crate::common::reference::{naive_join, JoinDef, Row, Table};
use crate::common::upsert;

const WAIT: Duration = Duration::from_secs(90);

/// How the test's producer keys the records.
#[derive(Clone, Copy, Debug)]
enum Keys {
    /// No key, as Flink's Kafka sink without a key format writes.
    None,
    /// A key unrelated to the join key (`x0` … `x6`).
    Other,
}

/// One input side of a job: its csv lines and the rows they mean.
struct Side {
    lines: Vec<String>,
    rows: Table,
}

fn table(rows: Vec<Row>) -> Table {
    Table { pk: None, rows }
}

fn row(pairs: &[(&str, Value)]) -> Row {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect::<Map<String, Value>>()
}

/// Seed 000: users `id,name` (600) and scores `id,score` for four users of five, plus 50
/// scores of no user.
fn seed000_sides() -> [Side; 2] {
    let users: Vec<u32> = (0..600).collect();
    let scored: Vec<u32> = (0..650).filter(|i| i % 5 != 0).collect();
    let left = Side {
        lines: users.iter().map(|i| format!("{i},name{i}")).collect(),
        rows: table(
            users
                .iter()
                .map(|i| {
                    row(&[
                        ("user_id", json!(i.to_string())),
                        ("user_name", json!(format!("name{i}"))),
                    ])
                })
                .collect(),
        ),
    };
    let right = Side {
        lines: scored.iter().map(|i| format!("{i},{}", i * 3)).collect(),
        rows: table(
            scored
                .iter()
                .map(|i| row(&[("user_id", json!(i.to_string())), ("score", json!(i * 3))]))
                .collect(),
        ),
    };
    [left, right]
}

/// Seed 004: `str` values (tab-separated, one column) and `a_str,b_str` pairs, overlapping in
/// part, some join keys repeated on either side.
fn seed004_sides() -> [Side; 2] {
    let left: Vec<String> = (0..300).map(|i| format!("v{}", i % 280)).collect();
    let right: Vec<(String, String)> = (150..450)
        .map(|j| (format!("v{}", j % 420), format!("B{j}")))
        .collect();
    [
        Side {
            lines: left.clone(),
            rows: table(left.iter().map(|s| row(&[("str", json!(s))])).collect()),
        },
        Side {
            lines: right.iter().map(|(a, b)| format!("{a},{b}")).collect(),
            rows: table(
                right
                    .iter()
                    .map(|(a, b)| row(&[("a_str", json!(a)), ("b_str", json!(b))]))
                    .collect(),
            ),
        },
    ]
}

/// A job under test: its fixture (the seed's SQL), its inputs, and the output rows a naive
/// join of them gives, as the SELECT list projects them (a multiset by JSON text).
struct Job {
    fixture: &'static str,
    sides: [Side; 2],
    /// Left and right outer.
    outer: [bool; 2],
    keys: [&'static str; 2],
    project: fn(Option<&Row>, Option<&Row>) -> Value,
    /// `allows.generated-retracts=false`: padded rows are never retracted; the left side is
    /// produced (and joined, padded) first.
    keeps_padded: bool,
}

fn seed000_project(l: Option<&Row>, r: Option<&Row>) -> Value {
    let get = |t: Option<&Row>, c: &str| t.and_then(|t| t.get(c)).cloned().unwrap_or(Value::Null);
    json!({"user_id": get(l, "user_id"), "user_name": get(l, "user_name"), "score": get(r, "score")})
}

fn seed004_project(l: Option<&Row>, r: Option<&Row>) -> Value {
    let get = |t: Option<&Row>, c: &str| t.and_then(|t| t.get(c)).cloned().unwrap_or(Value::Null);
    json!({"str": get(l, "str"), "a_str": get(r, "a_str"), "b_str": get(r, "b_str")})
}

fn seed000(fixture: &'static str, keeps_padded: bool) -> Job {
    Job {
        fixture,
        sides: seed000_sides(),
        outer: [true, false],
        keys: ["user_id", "user_id"],
        project: seed000_project,
        keeps_padded,
    }
}

fn seed004(fixture: &'static str, outer: [bool; 2]) -> Job {
    Job {
        fixture,
        sides: seed004_sides(),
        outer,
        keys: ["str", "a_str"],
        project: seed004_project,
        keeps_padded: false,
    }
}

impl Job {
    /// The materialised output a naive join of both sides gives.
    fn expected(&self) -> HashMap<String, i64> {
        let (lk, rk) = ([self.keys[0].to_owned()], [self.keys[1].to_owned()]);
        let def = JoinDef {
            left_key: &lk,
            right_key: &rk,
            left_outer: self.outer[0],
            right_outer: self.outer[1],
            null_keys_match: false,
        };
        let mut want: HashMap<String, i64> = HashMap::new();
        let [l, r] = &self.sides;
        for (a, b) in naive_join(&def, &l.rows, &r.rows) {
            *want.entry((self.project)(a, b).to_string()).or_default() += 1;
        }
        if self.keeps_padded {
            // Every user was joined padded before any score arrived; the padding stays.
            for u in &l.rows.rows {
                let padded = (self.project)(Some(u), None).to_string();
                if !want.contains_key(&padded) {
                    *want.entry(padded).or_default() += 1;
                }
            }
        }
        want
    }

    /// The padded rows of the left side alone (what the output holds once it is joined).
    fn left_alone(&self) -> HashMap<String, i64> {
        let mut m = HashMap::new();
        for u in &self.sides[0].rows.rows {
            *m.entry((self.project)(Some(u), None).to_string())
                .or_default() += 1;
        }
        m
    }
}

/// Runs `job` on topics of `partitions` partitions, records keyed as `keys` says; returns
/// whether the application created its left repartition topic.
fn run(job: &Job, partitions: i32, keys: Keys) -> bool {
    let f = fixtures::load(&fixtures::fixtures_dir().join(job.fixture));
    let original = std::fs::read_to_string(f.dir.join("job.sql")).unwrap();
    let name = format!("place-{}-{partitions}", job.fixture.replace('_', "-"));
    let (left, right, output) = kafka::join_topics(&name, [partitions, partitions, 1]);
    let app = kafka::unique(&format!("{name}-app"));
    let sql = test_sql(&original, &left, &right, &output, &app);
    // From the beginning: records produced before the group's first position count.
    let sql = sql.replace("'latest-offset'", "'earliest-offset'");
    let env = sql_env(&app, &left, &right, &output, sql);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let producer = kafka::producer();
    let produce = |topic: &str, lines: &[String]| {
        let records: Vec<(String, Option<String>, Option<String>, i64)> = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let key = match keys {
                    Keys::None => None,
                    Keys::Other => Some(format!("x{}", i % 7)),
                };
                (topic.to_owned(), key, Some(l.clone()), kafka::now_ms())
            })
            .collect();
        kafka::produce_many(&producer, &records);
    };
    let context = |got: &HashMap<String, i64>| {
        format!(
            "{} on {partitions} partitions, keys {keys:?}: {} distinct output rows, want {}; log:\n{}",
            job.fixture,
            got.len(),
            job.expected().len(),
            tail(&sj.logs())
        )
    };
    produce(&left, &job.sides[0].lines);
    if job.keeps_padded {
        let deadline = Instant::now() + WAIT;
        upsert::wait_materialised(
            &output,
            &job.left_alone(),
            deadline,
            Duration::from_millis(500),
            context,
        );
    }
    produce(&right, &job.sides[1].lines);
    let deadline = Instant::now() + WAIT;
    upsert::wait_materialised(
        &output,
        &job.expected(),
        deadline,
        Duration::from_millis(500),
        context,
    );
    drop(sj);
    kafka::partition_count(&format!("{app}-left-repartition")) > 0
}

/// The last lines of a log, for a failure message.
fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn three_partitions_and_one(job: Job, keys: Keys) {
    assert!(
        run(&job, 3, keys),
        "{}: keyless csv topics of 3 partitions are re-keyed by the join key",
        job.fixture
    );
    assert!(
        !run(&job, 1, keys),
        "{}: topics of one partition need no repartition topic",
        job.fixture
    );
}

#[test]
fn seed000_sql_on_three_partitions_without_keys_equals_the_naive_join() {
    three_partitions_and_one(seed000("sql_seed000_left_join", false), Keys::None);
}

#[test]
fn seed000_sql_with_the_hint_on_three_partitions_keyed_otherwise_keeps_only_generated_paddings() {
    three_partitions_and_one(seed000("sql_seed000_left_join_hint", true), Keys::Other);
}

#[test]
fn seed004_sql_jobs_on_three_partitions_equal_the_naive_join() {
    run_both_keyings(seed004("sql_seed004_inner", [false, false]));
    run_both_keyings(seed004("sql_seed004_left", [true, false]));
    three_partitions_and_one(seed004("sql_seed004_full", [true, true]), Keys::None);
}

fn run_both_keyings(job: Job) {
    assert!(run(&job, 3, Keys::None), "{}: re-keyed", job.fixture);
    assert!(run(&job, 3, Keys::Other), "{}: re-keyed", job.fixture);
}

/// Acceptance 2's other half: an upsert pair whose topics are keyed by their primary keys,
/// which are the join key, on three partitions, with no placement setting: read as they are
/// (no repartition topic, no router), and the output folds to replay.
#[test]
fn a_correctly_keyed_upsert_pair_is_read_as_it_is() {
    let (left, right, out) = kafka::join_topics("place-upsert", [3, 3, 2]);
    let app = kafka::unique("place-upsert-app");
    let mut env = kafka::undeclared(kafka::base_env(&app, &left, &right, &out));
    for (k, v) in [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_LEFT_FORMAT", "upsert-json"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "k"),
        ("SIDEJOIN_RIGHT_FORMAT", "upsert-json"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "k"),
        ("SIDEJOIN_OUTPUT_MODE", "upsert"),
        ("SIDEJOIN_SELECT", "l.k AS k, l.v AS v, r.w AS w"),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    let t0 = kafka::now_ms();
    let all: Vec<upsert::Pair> = (0..3_000u64)
        .map(|i| {
            let k = (i * 7_919) % 400;
            let value = match i % 2 {
                0 => json!({"k": k, "v": i}),
                _ => json!({"k": k, "w": i}),
            };
            (i % 2 == 0, k.to_string(), value.to_string(), t0 + i as i64)
        })
        .collect();
    upsert::produce_sides(&left, &right, &all);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    let want = upsert::replay_table(&env, &all);
    upsert::wait_for_table(&out, &want, Instant::now() + WAIT);
    for side in ["left", "right"] {
        let topic = format!("{app}-{side}-repartition");
        assert_eq!(kafka::partition_count(&topic), 0, "no `{topic}`");
    }
    let violations = sj.metric("sidejoin_copartition_violations_total", "side=\"left\"")
        + sj.metric("sidejoin_copartition_violations_total", "side=\"right\"");
    assert_eq!(violations, 0.0, "keys checked and fitting:\n{}", sj.logs());
}
