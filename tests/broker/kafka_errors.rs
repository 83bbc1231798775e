//! Bad input on the real broker (SPEC §8): every malformed record goes to the dead-letter topic
//! with headers naming the error and its source, every good record is joined, and the process
//! keeps running; with `SIDEJOIN_ON_ERROR=fail` it exits 1 naming the partition and offset, and
//! a restart resumes at that record.

use std::time::Duration;

use crate::common::kafka::{self, Sidejoin};

const WAIT: Duration = Duration::from_secs(120);

fn env(
    app: &str,
    left: &str,
    right: &str,
    out: &str,
    extra: &[(&str, &str)],
) -> Vec<(String, String)> {
    let mut e = kafka::base_env(app, left, right, out);
    for (k, v) in [
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_SELECT", "l.id AS id, l.v AS v, r.w AS w"),
    ]
    .iter()
    .chain(extra)
    {
        e.push((k.to_string(), v.to_string()));
    }
    e
}

#[test]
fn malformed_records_go_to_the_dead_letter_topic() {
    let (left, right, out) = kafka::join_topics("bad", [2, 2, 2]);
    let dlq = kafka::unique("bad-dlq");
    let app = kafka::unique("bad-app");
    let bad = produce_good_and_bad(&left, &right);
    assert_eq!(bad, 1_000);
    let mut sj = Sidejoin::start(
        "run",
        &env(&app, &left, &right, &out, &[("SIDEJOIN_DLQ_TOPIC", &dlq)]),
    );
    sj.wait_records_in(11_000, WAIT);
    let dead = kafka::read_all(&dlq, 1_000, WAIT);
    assert_eq!(
        dead.len(),
        1_000,
        "exactly one dead letter per malformed record"
    );
    for d in &dead {
        assert_dead_letter(d, &left, &right);
    }
    // Every good record joined: one inner-join row per id.
    let joined = kafka::read_all(&out, 5_000, WAIT);
    assert_eq!(joined.len(), 5_000, "{}", sj.logs());
    assert_eq!(
        kafka::read_all(&out, 5_001, Duration::from_secs(2)).len(),
        5_000
    );
    assert_eq!(sj.metric("sidejoin_dlq_records_total", ""), 1_000.0);
    assert_eq!(sj.metric("sidejoin_decode_errors_total", ""), 1_000.0);
    assert_eq!(sj.metric("sidejoin_records_in_total", ""), 11_000.0);
    assert_eq!(sj.get("/healthz").0, 200, "still running");
}

/// Produces 10,000 good records (5,000 per side, every left id matched by one right id) and the
/// bad ones among them (every 11th record); returns how many were bad.
fn produce_good_and_bad(left: &str, right: &str) -> u32 {
    let p = kafka::producer();
    let t0 = kafka::now_ms();
    let mut bad = 0;
    for i in 0..11_000u32 {
        // Good records are keyed by id on both topics, so the two rows of an id share a partition.
        let (topic, value, key) = if i % 11 == 10 {
            bad += 1;
            let v = match bad % 3 {
                0 => "{not json".to_owned(),
                1 => "[1, 2]".to_owned(),
                _ => "\"a string\"".to_owned(),
            };
            (
                if bad % 2 == 0 { left } else { right },
                v,
                format!("k{}", i % 97),
            )
        } else {
            let n = i - i / 11;
            let id = n / 2;
            if n % 2 == 0 {
                (left, format!("{{\"id\":{id},\"v\":{n}}}"), format!("k{id}"))
            } else {
                (
                    right,
                    format!("{{\"id\":{id},\"w\":{n}}}"),
                    format!("k{id}"),
                )
            }
        };
        kafka::produce(&p, topic, Some(&key), Some(&value), t0 + i64::from(i));
    }
    bad
}

/// A dead letter names its error and its source (one of the input topics), and keeps the
/// original key.
fn assert_dead_letter(d: &kafka::Record, left: &str, right: &str) {
    assert!(d.headers.contains_key("sidejoin.error"), "{:?}", d.headers);
    assert!(
        d.headers["sidejoin.source.topic"] == left || d.headers["sidejoin.source.topic"] == right
    );
    assert!(d.headers["sidejoin.source.partition"]
        .parse::<i32>()
        .is_ok());
    assert!(d.headers["sidejoin.source.offset"].parse::<i64>().is_ok());
    assert!(
        d.key.as_deref().is_some_and(|k| k.starts_with(b"k")),
        "the original key is kept"
    );
}

#[test]
fn fail_mode_exits_naming_the_record_and_a_restart_resumes_there() {
    let (left, right, out) = kafka::join_topics("fail", [1, 1, 1]);
    let app = kafka::unique("fail-app");
    let p = kafka::producer();
    for i in 0..5 {
        kafka::produce(
            &p,
            &left,
            None,
            Some(&format!("{{\"id\":{i},\"v\":\"l{i}\"}}")),
            kafka::now_ms(),
        );
    }
    let (_, bad_offset) = kafka::produce(&p, &left, None, Some("not json at all"), kafka::now_ms());
    kafka::produce(
        &p,
        &left,
        None,
        Some("{\"id\":9,\"v\":\"after\"}"),
        kafka::now_ms(),
    );
    let mut sj = Sidejoin::start(
        "run",
        &env(&app, &left, &right, &out, &[("SIDEJOIN_ON_ERROR", "fail")]),
    );
    assert_eq!(sj.wait(WAIT), 1, "exit code 1:\n{}", sj.logs());
    let logs = sj.logs();
    assert!(
        logs.contains(&format!("topic {left} partition 0 offset {bad_offset}")),
        "the message names topic, partition and offset:\n{logs}"
    );
    assert_eq!(
        kafka::committed(&app, &left),
        vec![bad_offset],
        "everything before it is committed"
    );
    // A restart (dead-lettering this time) starts at the bad record.
    let dlq = kafka::unique("fail-dlq");
    let mut again = Sidejoin::start(
        "run",
        &env(&app, &left, &right, &out, &[("SIDEJOIN_DLQ_TOPIC", &dlq)]),
    );
    again.wait_records_in(2, WAIT);
    let dead = kafka::read_all(&dlq, 1, WAIT);
    assert_eq!(dead.len(), 1);
    assert_eq!(
        dead[0].headers["sidejoin.source.offset"],
        bad_offset.to_string()
    );
    assert_eq!(
        again.records_in(),
        2,
        "resumed at the failed record: it and the one after"
    );
}
