//! Static group membership (`SIDEJOIN_INSTANCE_ID` → `group.instance.id`) on the real broker.
//!
//! - A killed instance restarted with the same id gets its partitions back at once: with a
//!   session timeout of two minutes, a dynamic member would wait for the dead one to time out
//!   before any rebalance could finish, so readiness well inside that timeout shows the broker
//!   handed the old assignment to the returning member.
//! - A second running instance with the same id fences the first, which stops with an error
//!   naming the variable instead of polling a dead consumer forever.

use std::time::Duration;

use crate::common::kafka::{self, Sidejoin};

/// Far longer than any wait below: nothing in this test may depend on it expiring.
const SESSION_TIMEOUT_MS: &str = "120000";
const WAIT: Duration = Duration::from_secs(60);

fn env(app: &str, left: &str, right: &str, out: &str, id: &str) -> Vec<(String, String)> {
    let mut env = kafka::base_env(app, left, right, out);
    for (k, v) in [
        ("SIDEJOIN_INSTANCE_ID", id),
        (
            "SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS",
            SESSION_TIMEOUT_MS,
        ),
        ("SIDEJOIN_JOIN_TYPE", "inner"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_OUTPUT_MODE", "upsert"),
        ("SIDEJOIN_SELECT", "l.k AS k, l.v AS v, r.w AS w"),
    ] {
        env.push((k.into(), v.into()));
    }
    env
}

fn pair(left: &str, right: &str, k: u32) -> Vec<(String, Option<String>, Option<String>, i64)> {
    let key = Some(format!("{{\"k\":{k}}}"));
    vec![
        (
            left.to_owned(),
            key.clone(),
            Some(format!("{{\"k\":{k},\"v\":\"l{k}\"}}")),
            kafka::now_ms(),
        ),
        (
            right.to_owned(),
            key,
            Some(format!("{{\"k\":{k},\"w\":\"r{k}\"}}")),
            kafka::now_ms(),
        ),
    ]
}

#[test]
fn a_killed_instance_restarted_with_its_id_gets_its_partitions_back_at_once() {
    let (left, right, out) = kafka::join_topics("static", [2, 2, 2]);
    let app = kafka::unique("static-app");
    let env = env(&app, &left, &right, &out, "sidejoin-0");
    let producer = kafka::producer();
    let mut first = Sidejoin::start("run", &env);
    first.wait_ready(WAIT);
    kafka::produce_many(&producer, &pair(&left, &right, 1));
    assert_eq!(kafka::read_all(&out, 1, WAIT).len(), 1, "{}", first.logs());
    first.signal("KILL");
    assert_eq!(first.wait(WAIT), -1, "killed by a signal");

    let restarted = std::time::Instant::now();
    let mut second = Sidejoin::start("run", &env);
    // Within WAIT (a minute), half the session timeout: no rebalance waited for the dead member.
    second.wait_ready(WAIT);
    // Reported, not asserted (shared machines): how soon the restarted instance was ready.
    println!(
        "restarted instance ready {} ms after its start",
        restarted.elapsed().as_millis()
    );
    kafka::produce_many(&producer, &pair(&left, &right, 2));
    // At least once: the first pair's output may be written again (killed before its commit).
    let want = serde_json::json!({"k": 2, "v": "l2", "w": "r2"});
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let rows: Vec<_> = kafka::read_to_end(&out, WAIT)
            .iter()
            .map(|r| r.value_json())
            .collect();
        if rows.contains(&want) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{rows:?}\n{}",
            second.logs()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_second_instance_with_the_same_id_fences_the_first() {
    let (left, right, out) = kafka::join_topics("fenced", [2, 2, 2]);
    let app = kafka::unique("fenced-app");
    let env_a = env(&app, &left, &right, &out, "sidejoin-0");
    let mut a = Sidejoin::start("run", &env_a);
    a.wait_ready(WAIT);
    // Same group and id, its own state directory (a second pod with a copied name).
    let mut env_b = env_a.clone();
    let dir = std::path::Path::new(&env_a[0].1).with_extension("b");
    env_b.push((
        "SIDEJOIN_STATE_DIR".into(),
        dir.to_string_lossy().into_owned(),
    ));
    let mut b = Sidejoin::start("run", &env_b);
    b.wait_ready(WAIT);
    let code = a.wait(WAIT);
    let logs = a.logs();
    assert_eq!(code, 1, "{logs}");
    assert!(
        logs.contains("SIDEJOIN_INSTANCE_ID") && logs.contains("FencedInstanceId"),
        "{logs}"
    );
}
