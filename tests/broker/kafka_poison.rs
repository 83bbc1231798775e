//! Poison records on the real broker (SPEC §8), with `SIDEJOIN_ON_ERROR=dlq`: a record whose
//! processing panics after the engine applied it (the test fault
//! `SJ_TEST_FAULT=panic_on_marker`), a 900 KB CSV record whose 900 KB field is unreadable, a
//! record whose join makes a 1.5 MB output row (over the producer's 1,000,000-byte
//! `message.max.bytes`), and an unreadable record so close to the limit that its dead letter
//! cannot keep it. The process stays up, the dead-letter topic holds a record for each with an
//! abbreviated reason, and the output is what `sidejoin replay` makes of the input without those
//! four: under `exactly_once` record for record and in order, one dead letter each; under
//! `at_least_once` the same records, some of them more than once. Under `SIDEJOIN_ON_ERROR=fail`
//! a panic ends the run naming the record, with the records before it committed.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::kafka::{self, Sidejoin};
use crate::common::upsert;

const WAIT: Duration = Duration::from_secs(120);

/// The longest `sidejoin.error` header sidejoin writes.
const MAX_REASON: usize = 1024;

/// One input record: left (a CSV line) or right (JSON), its join key, its value.
struct In {
    left: bool,
    k: u64,
    value: String,
}

fn left(id: u64, k: u64, v: &str) -> In {
    In {
        left: true,
        k,
        value: format!("{id},{k},{v}"),
    }
}

fn right(k: u64, w: &str) -> In {
    In {
        left: false,
        k,
        value: json!({"k": k, "w": w}).to_string(),
    }
}

/// `n` good records from number `from` on, alternating sides over 50 join keys.
fn good(from: u64, n: u64) -> impl Iterator<Item = In> {
    (from..from + n).map(|i| match i % 2 {
        0 => left(i, i % 50, &format!("l{i}")),
        _ => right((i / 2) % 50, &format!("r{i}")),
    })
}

/// The input in production order and the indexes of the four poison records: the panicking
/// one, the unreadable 900 KB CSV line, the one whose join is 1.5 MB, the one too large to
/// dead-letter whole.
fn input() -> (Vec<In>, [usize; 4]) {
    let mut all: Vec<In> = good(0, 200).collect();
    let panics = all.len();
    // Key 7 has rows on both sides before and after it: joined, it would show.
    all.push(left(10_000, 7, "SJ_TEST_POISON"));
    all.extend(good(200, 100));
    let unreadable = all.len();
    all.push(left(0, 3, "x").with_value(format!("{}x,3,bad", "9".repeat(900_000))));
    // A left row of 750 KB, alone on key 1000: joined with the 750 KB right row below, 1.5 MB.
    all.push(left(10_001, 1_000, &"a".repeat(750_000)));
    all.extend(good(300, 100));
    let too_large = all.len();
    all.push(right(1_000, &"b".repeat(750_000)));
    all.extend(good(400, 100));
    let near_limit = all.len();
    all.push(right(4, "x").with_value(format!("{{{}", "z".repeat(999_900))));
    // The big left row stayed: a small right row joins it.
    all.push(right(1_000, "small"));
    all.extend(good(500, 100));
    (all, [panics, unreadable, too_large, near_limit])
}

impl In {
    fn with_value(mut self, value: String) -> In {
        self.value = value;
        self
    }
}

fn env(app: &str, left: &str, right: &str, out: &str, dlq: &str) -> Vec<(String, String)> {
    let mut e = kafka::base_env(app, left, right, out);
    for (k, v) in [
        ("SIDEJOIN_LEFT_FORMAT", "csv"),
        ("SIDEJOIN_LEFT_COLUMNS", "id BIGINT, k BIGINT, v STRING"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        // A left row is stored under its primary key: a side without one is stored under the
        // whole row, and the 750 KB row's changelog record (row as key and value) would not fit
        // the producer's limit.
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.k AS k, l.v AS v, r.w AS w",
        ),
        ("SIDEJOIN_ON_ERROR", "dlq"),
        ("SIDEJOIN_DLQ_TOPIC", dlq),
    ] {
        e.push((k.to_owned(), v.to_owned()));
    }
    e
}

/// Replay's input lines of `records` stamped `t0 + i` (a CSV side takes its line as a string).
fn replay_lines<'a>(records: impl Iterator<Item = (usize, &'a In)>, t0: i64) -> Vec<String> {
    records
        .map(|(i, r)| {
            let (side, value) = match r.left {
                true => ("left", Value::String(r.value.clone())),
                false => ("right", serde_json::from_str(&r.value).unwrap()),
            };
            json!({"side": side, "key": null, "value": value, "timestamp": t0 + i as i64})
                .to_string()
        })
        .collect()
}

/// A run over `input()` under `guarantee` and what replay makes of it without the poison.
struct Run {
    sj: Sidejoin,
    all: Vec<In>,
    poison: [usize; 4],
    /// Replay's records of the input without the poison records.
    want: Vec<(Value, Value)>,
    /// The left, right and output topics.
    topics: [String; 3],
    dlq: String,
}

fn run(name: &str, guarantee: &str) -> Run {
    let (left_t, right_t, out) = kafka::join_topics(name, [1, 1, 1]);
    let (dlq, app) = (kafka::unique("poison-dlq"), kafka::unique("poison-app"));
    let (all, poison) = input();
    let t0 = kafka::now_ms();
    let produce: Vec<_> = (all.iter().enumerate())
        .map(|(i, r)| {
            let topic = if r.left { &left_t } else { &right_t };
            let (key, value) = (Some(r.k.to_string()), Some(r.value.clone()));
            (topic.clone(), key, value, t0 + i as i64)
        })
        .collect();
    kafka::produce_many(&kafka::producer(), &produce);
    let mut env = env(&app, &left_t, &right_t, &out, &dlq);
    env.push(("SIDEJOIN_PROCESSING_GUARANTEE".into(), guarantee.into()));
    let mut run_env = env.clone();
    run_env.push(("SJ_TEST_FAULT".into(), "panic_on_marker".into()));
    let sj = Sidejoin::start("run", &run_env);
    let kept = (all.iter().enumerate()).filter(|(i, _)| !poison.contains(i));
    let want = upsert::replay_records(&env, &replay_lines(kept, t0));
    assert!(want.len() > 100, "the join has output: {}", want.len());
    Run {
        sj,
        all,
        poison,
        want,
        topics: [left_t, right_t, out],
        dlq,
    }
}

/// The process is up and counted each poison record once, and the one trimmed dead letter.
fn assert_counted(sj: &mut Sidejoin) {
    let poison = |sj: &mut Sidejoin, reason: &str| {
        sj.metric(
            "sidejoin_poison_records_total",
            &format!("reason=\"{reason}\""),
        )
    };
    assert_eq!(poison(sj, "panic"), 1.0);
    assert_eq!(poison(sj, "oversized_output"), 1.0);
    assert_eq!(sj.get("/healthz").0, 200, "still running");
}

#[test]
fn poison_records_go_to_the_dead_letter_topic_and_the_rest_equals_replay() {
    let mut r = run("poison-eos", "exactly_once");
    let [left, right, out] = &r.topics;
    // Exactly once: the same records in the same order, nothing twice.
    upsert::assert_replays_records(out, &r.want, true, "poison", &r.sj, WAIT);
    upsert::assert_no_more_than(out, r.want.len(), "poison");
    let dead = kafka::read_all(&r.dlq, r.poison.len(), WAIT);
    let more = kafka::read_all(&r.dlq, r.poison.len() + 1, Duration::from_secs(2));
    assert_eq!(more.len(), r.poison.len(), "one dead letter each");
    assert_dead_letters(&dead, &r.all, r.poison, [left, right]);
    assert_counted(&mut r.sj);
    assert_eq!(r.sj.metric("sidejoin_dlq_trimmed_total", ""), 1.0);
}

#[test]
fn poison_records_at_least_once_lose_nothing_else() {
    let mut r = run("poison-alo", "at_least_once");
    let [left, right, out] = &r.topics;
    // At least once: outputs written before a rewind are written again; every record of
    // replay's arrives, and nothing else.
    let want: BTreeSet<String> = (r.want.iter()).map(|(k, v)| format!("{k} {v}")).collect();
    let deadline = Instant::now() + WAIT;
    loop {
        let got: BTreeSet<String> = (kafka::read_to_end(out, WAIT).iter())
            .map(|m| format!("{} {}", m.key_json(), m.value_json()))
            .collect();
        if got == want {
            break;
        }
        assert!(got.is_subset(&want), "records replay does not have");
        assert!(
            Instant::now() < deadline,
            "{} of {} records",
            got.len(),
            want.len()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Dead letters written before a rewind are written again too.
    let dead = kafka::read_to_end(&r.dlq, WAIT);
    assert_dead_letters(&dead, &r.all, r.poison, [left, right]);
    assert_counted(&mut r.sj);
}

/// `dead` holds a dead letter of each poison record of `all` (and no other record), each naming
/// its source (one of `topics`) and an abbreviated reason, with the original value where it
/// fits.
fn assert_dead_letters(dead: &[kafka::Record], all: &[In], poison: [usize; 4], topics: [&str; 2]) {
    let by_source: HashMap<(String, String), &kafka::Record> = (dead.iter())
        .map(|d| {
            let h = &d.headers;
            let source = (
                h["sidejoin.source.topic"].clone(),
                h["sidejoin.source.offset"].clone(),
            );
            (source, d)
        })
        .collect();
    assert_eq!(
        by_source.len(),
        poison.len(),
        "dead letters of other records"
    );
    // Each side's records are numbered in production order: its offsets.
    let offset = |i: usize| {
        let left = all[i].left;
        (all[..i].iter().filter(|r| r.left == left).count()).to_string()
    };
    let letter = |i: usize| {
        let topic = if all[i].left { topics[0] } else { topics[1] };
        let d = (by_source.get(&(topic.to_owned(), offset(i))))
            .unwrap_or_else(|| panic!("no dead letter of record {i}"));
        let reason = &d.headers["sidejoin.error"];
        assert!(reason.len() <= MAX_REASON, "{} bytes", reason.len());
        (*d, reason.clone())
    };
    let (d, reason) = letter(poison[0]);
    assert!(
        reason.contains("panicked") && reason.contains("panic_on_marker"),
        "{reason}"
    );
    assert_eq!(d.value.as_deref(), Some(all[poison[0]].value.as_bytes()));
    let (d, reason) = letter(poison[1]);
    assert!(
        reason.contains("is not an integer") && reason.contains("bytes elided"),
        "{reason}"
    );
    assert_eq!(
        d.value.as_deref(),
        Some(all[poison[1]].value.as_bytes()),
        "kept whole"
    );
    let (d, reason) = letter(poison[2]);
    assert!(reason.contains("message.max.bytes"), "{reason}");
    assert_eq!(d.value.as_deref(), Some(all[poison[2]].value.as_bytes()));
    let (d, _) = letter(poison[3]);
    assert_eq!(d.value, None, "too large to keep");
    assert_eq!(d.headers["sidejoin.omitted"], "value");
    assert_eq!(d.key.as_deref(), Some(b"4".as_slice()));
}

#[test]
fn a_panic_under_fail_exits_naming_the_record_with_what_came_before_committed() {
    let (left_t, right_t, out) = kafka::join_topics("poison-fail", [1, 1, 1]);
    let (dlq, app) = (kafka::unique("poison-dlq"), kafka::unique("poison-app"));
    let p = kafka::producer();
    let t0 = kafka::now_ms();
    for i in 0..5 {
        let line = format!("{i},{i},l{i}");
        kafka::produce(&p, &left_t, Some("k"), Some(&line), t0 + i);
    }
    let poison = Some("5,5,SJ_TEST_POISON");
    let (_, bad_offset) = kafka::produce(&p, &left_t, Some("k"), poison, t0 + 5);
    kafka::produce(&p, &left_t, Some("k"), Some("6,6,after"), t0 + 6);
    let mut env = env(&app, &left_t, &right_t, &out, &dlq);
    env.push(("SIDEJOIN_ON_ERROR".into(), "fail".into()));
    env.push(("SJ_TEST_FAULT".into(), "panic_on_marker".into()));
    let mut sj = Sidejoin::start("run", &env);
    assert_eq!(sj.wait(WAIT), 1, "exit code 1:\n{}", sj.logs());
    let logs = sj.logs();
    let named =
        format!("topic {left_t} partition 0 offset {bad_offset}: processing the record panicked");
    assert!(logs.contains(&named), "{logs}");
    assert_eq!(
        kafka::committed(&app, &left_t),
        vec![bad_offset],
        "the records before it"
    );
}
