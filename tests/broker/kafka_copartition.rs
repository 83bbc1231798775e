//! The silent case of SPEC §6 on the real broker: a Debezium topic keyed by its primary key
//! (`{"id":…}`) joined on another column (`user_id`), with neither repartitioning nor broadcast.
//! Each record whose key does not carry its join key is counted in
//! `sidejoin_copartition_violations_total{side}`, each such partition logged once with the fix,
//! and with `SIDEJOIN_ON_COPARTITION_VIOLATION=fail` the process stops at the first one, having
//! applied nothing of it. The other topic, keyed by the join key, counts none. Records already
//! in the topic at start are found by the start-up probe: warned about at once, or, with
//! `fail`, the start is refused (exit 2) with nothing consumed.

use std::time::Duration;

use crate::common::kafka::{self, Sidejoin};

const WAIT: Duration = Duration::from_secs(120);
const ORDERS: u64 = 400;

type Records = Vec<(String, Option<String>, Option<String>, i64)>;

/// Orders (Debezium, keyed by `id`) joined with users (upsert, keyed by `user_id`) on `user_id`:
/// the environment, the orders topic, and the records to produce.
fn setup(name: &str) -> (Vec<(String, String)>, String, Records) {
    let (left, right, out) = kafka::join_topics(name, [2, 2, 2]);
    let app = kafka::unique(&format!("{name}-app"));
    let mut env = kafka::base_env(&app, &left, &right, &out);
    for (k, v) in [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
        ("SIDEJOIN_LEFT_KEY", "user_id"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_RIGHT_FORMAT", "upsert-json"),
        ("SIDEJOIN_RIGHT_KEY", "user_id"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "user_id"),
        ("SIDEJOIN_OUTPUT_MODE", "upsert"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.user_id AS user_id, r.name AS name",
        ),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    let t0 = kafka::now_ms();
    let mut records = Vec::new();
    for u in 0..20u64 {
        records.push((
            right.clone(),
            Some(format!("{{\"user_id\":{u}}}")),
            Some(format!("{{\"user_id\":{u},\"name\":\"u{u}\"}}")),
            t0,
        ));
    }
    for id in 0..ORDERS {
        let after = format!("{{\"id\":{id},\"user_id\":{}}}", id % 20);
        records.push((
            left.clone(),
            Some(format!("{{\"id\":{id}}}")),
            Some(format!(
                "{{\"op\":\"c\",\"before\":null,\"after\":{after}}}"
            )),
            t0 + 1 + id as i64,
        ));
    }
    (env, left, records)
}

fn setting(env: &[(String, String)], name: &str) -> String {
    env.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap()
}

fn application_id(env: &[(String, String)]) -> String {
    setting(env, "SIDEJOIN_APPLICATION_ID")
}

/// The records of the orders topic that `env`'s group committed as consumed.
fn committed_orders(env: &[(String, String)], left: &str) -> i64 {
    kafka::committed(&application_id(env), left)
        .iter()
        .map(|o| (*o).max(0))
        .sum()
}

#[test]
fn a_topic_keyed_by_another_column_is_counted_and_logged_with_the_fix() {
    let (env, left, records) = setup("copart-warn");
    // In the topics before the start: the start-up probe sees them too.
    kafka::produce_many(&kafka::producer(), &records);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(ORDERS + 20, WAIT);
    let counted = |sj: &mut Sidejoin, side: &str| {
        sj.metric(
            "sidejoin_copartition_violations_total",
            &format!("side=\"{side}\""),
        )
    };
    // Every order's key `{"id":…}` lacks its join key; every user's key is its join key.
    assert_eq!(counted(&mut sj, "left"), ORDERS as f64, "{}", sj.logs());
    assert_eq!(counted(&mut sj, "right"), 0.0, "{}", sj.logs());
    let logs = sj.logs();
    // The probe's warning at start, once for the orders topic (a record is named).
    let at_start: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("is not co-partitioned") && l.contains("would join"))
        .collect();
    assert_eq!(at_start.len(), 1, "{logs}");
    assert!(at_start[0].contains(&format!("`{left}`")), "{logs}");
    assert!(at_start[0].contains("SIDEJOIN_LEFT_HASH_BY"), "{logs}");
    let warnings: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("is not co-partitioned") && l.contains("logged once per partition"))
        .collect();
    // Logged once per partition (both partitions of the orders topic hold orders).
    assert_eq!(warnings.len(), 2, "{logs}");
    println!("{}", warnings[0]);
    for w in &warnings {
        assert!(w.contains(&format!("`{left}`")), "{w}");
        assert!(
            w.contains("does not hold the join-key column `user_id`"),
            "{w}"
        );
        assert!(w.contains("SIDEJOIN_LEFT_HASH_BY"), "{w}");
    }
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "{}", sj.logs());
}

#[test]
fn fail_stops_at_the_first_violation_without_applying_it() {
    let (mut env, left, records) = setup("copart-fail");
    env.push(("SIDEJOIN_ON_COPARTITION_VIOLATION".into(), "fail".into()));
    let mut sj = Sidejoin::start("run", &env);
    // Started on empty topics: the records arrive while it runs.
    sj.wait_ready(WAIT);
    kafka::produce_many(&kafka::producer(), &records);
    assert_eq!(sj.wait(WAIT), 1, "stops with exit 1:\n{}", sj.logs());
    let logs = sj.logs();
    assert!(
        logs.contains(&format!("at topic {left} partition")),
        "{logs}"
    );
    assert!(logs.contains("is not co-partitioned"), "{logs}");
    assert!(logs.contains("SIDEJOIN_LEFT_HASH_BY"), "{logs}");
    assert!(
        logs.contains("SIDEJOIN_ON_COPARTITION_VIOLATION=fail"),
        "{logs}"
    );
    // Nothing of an order was applied: the committed positions stop before the first order
    // of each partition that held one (the users, keyed by the join key, are all consumed).
    assert_eq!(
        committed_orders(&env, &left),
        0,
        "no order committed:\n{logs}"
    );
}

#[test]
fn fail_refuses_to_start_on_a_topic_already_keyed_by_another_column() {
    let (mut env, left, records) = setup("copart-refuse");
    env.push(("SIDEJOIN_ON_COPARTITION_VIOLATION".into(), "fail".into()));
    kafka::produce_many(&kafka::producer(), &records);
    let mut sj = Sidejoin::start("run", &env);
    assert_eq!(sj.wait(WAIT), 2, "refused at start, exit 2:\n{}", sj.logs());
    let logs = sj.logs();
    let error = logs
        .lines()
        .find(|l| l.contains("is not co-partitioned"))
        .unwrap_or_else(|| panic!("no error naming the problem:\n{logs}"));
    println!("{error}");
    for part in [
        format!("`{left}`"),
        "its record at partition".to_owned(),
        "does not hold the join-key column `user_id`".to_owned(),
        "SIDEJOIN_LEFT_HASH_BY".to_owned(),
        "SIDEJOIN_ON_COPARTITION_VIOLATION=fail".to_owned(),
    ] {
        assert!(error.contains(&part), "{part} missing: {error}");
    }
    assert!(
        !logs.contains("partitions assigned"),
        "the group was not joined:\n{logs}"
    );
    // Not even the users (keyed by the join key, consumed first by a running group): no
    // offset of either topic was ever committed.
    let app = application_id(&env);
    for topic in [left.clone(), setting(&env, "SIDEJOIN_RIGHT_TOPIC")] {
        let committed = kafka::committed(&app, &topic);
        assert!(
            committed.iter().all(|o| *o < 0),
            "`{topic}`: {committed:?}\n{logs}"
        );
    }
}

/// A side declared keyed by the join key (`SIDEJOIN_LEFT_HASH_BY=none`) whose records carry no
/// key, on three partitions: the producer spread them, so each is counted and the topic named
/// with the reason and the fix — never a wrong table in silence.
#[test]
fn keyless_records_on_a_side_declared_keyed_are_counted_and_named_with_the_fix() {
    let (left, right, out) = kafka::join_topics("copart-keyless", [3, 3, 1]);
    let app = kafka::unique("copart-keyless-app");
    let mut env = kafka::base_env(&app, &left, &right, &out);
    env.push(("SIDEJOIN_LEFT_KEY".into(), "user_id".into()));
    env.push(("SIDEJOIN_RIGHT_KEY".into(), "user_id".into()));
    let t0 = kafka::now_ms();
    let mut records: Records = (0..30u64)
        .map(|u| {
            let user = format!("{{\"user_id\":{u},\"name\":\"u{u}\"}}");
            (right.clone(), Some(u.to_string()), Some(user), t0)
        })
        .collect();
    records.extend((0..90u64).map(|id| {
        let order = format!("{{\"id\":{id},\"user_id\":{}}}", id % 30);
        (left.clone(), None, Some(order), t0 + 1 + id as i64)
    }));
    kafka::produce_many(&kafka::producer(), &records);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(120, WAIT);
    let counted = sj.metric("sidejoin_copartition_violations_total", "side=\"left\"");
    assert_eq!(counted, 90.0, "every keyless order counted:\n{}", sj.logs());
    let logs = sj.logs();
    let warning = logs
        .lines()
        .find(|l| l.contains("is not co-partitioned") && l.contains("the record has no key"))
        .unwrap_or_else(|| panic!("no warning naming the reason:\n{logs}"));
    assert!(warning.contains(&format!("`{left}`")), "{warning}");
    assert!(warning.contains("SIDEJOIN_LEFT_HASH_BY"), "{warning}");
    println!("{warning}");
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "{}", sj.logs());
}
