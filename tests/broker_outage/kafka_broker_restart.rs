//! The broker goes away mid-run and comes back (SPEC §7, "nothing lost"): the broker of
//! `scripts/kafka.sh with-broker` is stopped for 20 s (longer until sidejoin reports it) while sidejoin runs with processed input
//! and output in flight, then started again on the same data and ports. sidejoin stays alive,
//! reports not ready while no broker is reachable, recovers by itself, and once every record is
//! consumed the output topic folded as an upsert table equals `sidejoin replay` of the input.
//!
//! It stops the one broker every test uses, so it is the only test of its binary (the
//! `broker_outage` tier: cargo runs test binaries one after another).

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::upsert;

const WAIT: Duration = Duration::from_secs(180);
const TOTAL: u64 = 60_000;
const OUTAGE: Duration = Duration::from_secs(20);
/// The broker stays away past `OUTAGE` until sidejoin reports it not ready, at most this long
/// (a loaded machine once took longer than 20 s to notice).
const OUTAGE_MAX: Duration = Duration::from_secs(90);

/// Left rows `{id, k, v}` (primary key id, join key k), right rows `{k, w}` (primary key k),
/// both topics keyed by k; later records update rows written before the outage.
fn records(t0: i64) -> Vec<(bool, String, String, i64)> {
    (0..TOTAL)
        .map(|i| {
            let ts = t0 + i as i64;
            if i % 3 == 0 {
                let id = (i / 3 * 7_919) % 6_000;
                upsert::left_row(id, id % 2_000, i, ts)
            } else {
                upsert::right_row((i * 104_729) % 2_000, i, ts)
            }
        })
        .collect()
}

fn broker(action: &str) {
    let dir = std::env::var("TEST_KAFKA_DIR").expect("TEST_KAFKA_DIR (run under scripts/kafka.sh)");
    let status = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/kafka.sh"))
        .args([action, &dir])
        .status()
        .unwrap();
    assert!(status.success(), "scripts/kafka.sh {action} failed");
}

/// Starts the stopped broker when dropped, unless `now` already did.
struct BrokerBack(bool);

impl BrokerBack {
    fn now(mut self) {
        self.0 = false;
        broker("start");
    }
}

impl Drop for BrokerBack {
    fn drop(&mut self) {
        if self.0 {
            broker("start");
        }
    }
}

fn produce(left: &str, right: &str, records: &[(bool, String, String, i64)]) {
    let batch: Vec<_> = records
        .iter()
        .map(|(l, k, v, ts)| {
            let topic = if *l { left } else { right };
            (topic.to_owned(), Some(k.clone()), Some(v.clone()), *ts)
        })
        .collect();
    kafka::produce_many(&kafka::producer(), &batch);
}

/// Stops the broker until sidejoin reports it not ready (at least `OUTAGE`), then starts it
/// again on its address.
fn outage(sj: &mut Sidejoin) {
    broker("stop");
    // Started again however this test ends: every later test file uses this broker.
    let restart = BrokerBack(true);
    let stopped = Instant::now();
    let mut saw_not_ready = false;
    while stopped.elapsed() < OUTAGE || (!saw_not_ready && stopped.elapsed() < OUTAGE_MAX) {
        saw_not_ready |= sj.get("/readyz").0 == 503;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(saw_not_ready, "ready throughout the outage:\n{}", sj.logs());
    restart.now();
    println!("broker back after {} ms", stopped.elapsed().as_millis());
    let dir = std::env::var("TEST_KAFKA_DIR").unwrap();
    let address = std::fs::read_to_string(format!("{dir}/bootstrap")).unwrap();
    assert_eq!(
        address.trim(),
        kafka::bootstrap(),
        "the broker came back on its address"
    );
}

/// Waits until `app` committed `TOTAL` offsets on `topics`. librdkafka can hang in
/// send_offsets_to_transaction after the coordinator's connection was lost (its issue #5456):
/// sidejoin then exits saying so, and is started again here as Kubernetes would — nothing may
/// be lost across that restart either. Returns the logs of the process that exited, if any.
fn until_committed(
    sj: &mut Sidejoin,
    env: &[(String, String)],
    app: &str,
    topics: [&str; 2],
) -> String {
    let deadline = Instant::now() + WAIT;
    let committed = || -> i64 {
        (topics.iter())
            .flat_map(|t| kafka::committed(app, t))
            .map(|o| o.max(0))
            .sum()
    };
    let mut earlier_logs = String::new();
    while committed() < TOTAL as i64 {
        if let Some(code) = sj.exited() {
            let logs = sj.logs();
            assert!(
                logs.contains("librdkafka issue #5456") && earlier_logs.is_empty(),
                "sidejoin exited ({code}) after the outage:\n{earlier_logs}{logs}"
            );
            println!("restarted after librdkafka's send_offsets_to_transaction hung");
            earlier_logs = logs;
            *sj = Sidejoin::start("run", env);
        }
        assert!(
            Instant::now() < deadline,
            "not every offset committed:\n{}",
            sj.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    earlier_logs
}

#[test]
fn a_broker_outage_mid_run_loses_nothing() {
    let (left, right, out) = kafka::join_topics("outage", [2, 2, 2]);
    let app = kafka::unique("outage-app");
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    let all = records(kafka::now_ms());
    let (before, after) = all.split_at(all.len() / 2);
    produce(&left, &right, before);
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(before.len() as u64, WAIT);

    outage(&mut sj);
    produce(&left, &right, after);
    let earlier_logs = until_committed(&mut sj, &env, &app, [&left, &right]);
    sj.wait_ready(WAIT);
    let want = upsert::replay_table(&env, &all);
    assert_eq!(want.len(), 6_000, "every left id is in the left join");
    let converged =
        std::panic::catch_unwind(|| upsert::wait_for_table(&out, &want, Instant::now() + WAIT));
    if let Err(failure) = converged {
        eprintln!("sidejoin's log:\n{}", sj.logs());
        std::panic::resume_unwind(failure);
    }
    let logs = earlier_logs + &sj.logs();
    assert!(
        logs.contains("no broker reachable"),
        "the outage is logged:\n{logs}"
    );
}
