//! The watchdog (`src/runtime/watchdog.rs`) on the real broker: a worker held in its first
//! checkpoint by a test fault (`SJ_TEST_FAULT=hold_checkpoint`) makes no progress; after
//! `SIDEJOIN_WATCHDOG_TIMEOUT` `/healthz` answers 503, the log names the step and the stall is
//! counted; past 5 s in the checkpoint `/readyz` answers 503 too.

use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::WAIT;
use crate::common::upsert;

#[test]
fn a_worker_held_in_a_step_fails_healthz_and_is_named_in_the_log() {
    let (left, right, out) = kafka::join_topics("watchdog", [1, 1, 1]);
    let app = kafka::unique("watchdog-app");
    let mut env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    for (k, v) in [
        ("SJ_TEST_FAULT", "hold_checkpoint"),
        ("SIDEJOIN_WATCHDOG_TIMEOUT", "2s"),
        ("SIDEJOIN_WORKERS", "1"),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    let records = upsert::left_join_records(100, 0, kafka::now_ms(), 20, 10);
    upsert::produce_sides(&left, &right, &records);
    let mut sj = Sidejoin::start("run", &env);
    let deadline = Instant::now() + WAIT;
    while sj.get("/healthz").0 != 503 {
        assert!(
            Instant::now() < deadline,
            "/healthz never failed:\n{}",
            sj.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let logs = sj.logs();
    let stuck = "watchdog: worker 0 has made no progress";
    let line = logs.lines().find(|l| l.contains(stuck));
    let line = line.unwrap_or_else(|| panic!("no watchdog line:\n{logs}"));
    assert!(line.contains("in step `checkpoint`"), "{line}");
    let stalls = sj.metric("sidejoin_watchdog_stalls_total", "step=\"checkpoint\"");
    assert_eq!(stalls, 1.0, "{}", sj.get("/metrics").1);
    // Held in a checkpoint past 5 s, it is not ready either (it cannot read the statistics
    // that would say no broker answers).
    let waiting = "a checkpoint is waiting for Kafka: not ready";
    while !sj.logs().contains(waiting) {
        assert!(Instant::now() < deadline, "no `{waiting}`:\n{}", sj.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(sj.get("/readyz").0, 503);
    assert_eq!(sj.metric("sidejoin_ready", ""), 0.0);
    sj.signal("KILL");
    sj.wait(WAIT);
}
