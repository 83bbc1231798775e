//! Pipelined checkpoints (`src/runtime/durable/in_flight.rs`) on the real broker: processing goes
//! on while a checkpoint's transaction is in flight, up to the in-flight bound.
//!
//! A test fault (`SJ_TEST_FAULT=hold_commit`) holds the second checkpoint's transaction open for
//! good, after its output was acknowledged and its offsets sent — a transaction coordinator that
//! never answers the commit. With a backlog of input, the worker keeps consuming and sending
//! output (at least once, output is not in the transaction: it shows up in the output topic at
//! once) for the rest of that commit interval; at the next checkpoint it waits for the one in
//! flight (at most one), so the output stops growing, no third checkpoint is sealed, nothing
//! commits, and after 5 s waiting in a checkpoint the instance is not ready. Exactly once, the
//! output waits in memory meanwhile, and the worker stops at the same bound.

use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::WAIT;
use crate::common::upsert;

/// The output records in `topic` so far (read uncommitted: at least once writes no transaction).
fn outputs(topic: &str) -> i64 {
    kafka::high_watermarks(topic).iter().sum()
}

/// Waits until `f` reads the same twice, `every` apart; returns that.
fn settled(every: Duration, deadline: Instant, mut f: impl FnMut() -> i64) -> i64 {
    let mut before = f();
    loop {
        std::thread::sleep(every);
        let now = f();
        if now == before {
            return now;
        }
        assert!(Instant::now() < deadline, "still changing: {now}");
        before = now;
    }
}

/// sidejoin under `guarantee` with the second checkpoint's commit held, on a backlog of `n`
/// left rows (each makes exactly one output record: a left join's row without a match); returns
/// it once the hold is logged, with the output topic's name.
fn held(guarantee: &str, n: u64) -> (Sidejoin, String) {
    let (left, right, out) = kafka::join_topics("pipelined", [1, 1, 1]);
    let app = kafka::unique("pipelined-app");
    let mut env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    for (k, v) in [
        ("SJ_TEST_FAULT", "hold_commit"),
        ("SIDEJOIN_COMMIT_INTERVAL", "1s"),
        ("SIDEJOIN_WORKERS", "1"),
        ("SIDEJOIN_PROCESSING_GUARANTEE", guarantee),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    let t0 = kafka::now_ms();
    let records: Vec<_> = (0..n)
        .map(|i| upsert::left_row(i % 200_000, i % 20_000, i, t0 + i as i64))
        .collect();
    upsert::produce_sides(&left, &right, &records);
    let sj = Sidejoin::start("run", &env);
    let deadline = Instant::now() + WAIT;
    let held = "SJ_TEST_FAULT=hold_commit";
    while !sj.logs().contains(held) {
        assert!(Instant::now() < deadline, "no `{held}`:\n{}", sj.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
    (sj, out)
}

/// The bound: one checkpoint in flight; the next one waits for it and is never sealed, nothing
/// commits after the first, and waiting in a checkpoint past 5 s makes the instance not ready.
fn assert_bounded(sj: &mut Sidejoin) {
    let deadline = Instant::now() + WAIT;
    let waiting = "a checkpoint is waiting for Kafka: not ready";
    while !sj.logs().contains(waiting) {
        assert!(Instant::now() < deadline, "no `{waiting}`:\n{}", sj.logs());
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(sj.get("/readyz").0, 503);
    let seals = "sidejoin_checkpoint_phase_seconds_count";
    assert_eq!(sj.metric(seals, "phase=\"seal\""), 2.0, "{}", sj.logs());
    let committed = sj.metric("sidejoin_transactions_total", "committed");
    assert_eq!(committed, 1.0, "{}", sj.get("/metrics").1);
}

#[test]
fn processing_goes_on_while_a_checkpoint_commits_up_to_the_in_flight_bound() {
    // Far more than three commit intervals of processing: the input never runs out here.
    let n = 1_000_000;
    let (mut sj, out) = held("at_least_once", n);
    // Everything sent under the held checkpoint was acknowledged before it was held.
    let at_hold = outputs(&out);
    let deadline = Instant::now() + WAIT;
    let at_bound = settled(Duration::from_secs(2), deadline, || outputs(&out));
    let logs = sj.logs();
    assert!(
        at_bound > at_hold,
        "no output while the transaction was in flight ({at_hold} before, {at_bound} after):\n{logs}"
    );
    assert!(
        (at_bound as u64) < n,
        "the input ran out ({at_bound} outputs): the bound is not what stopped it:\n{logs}"
    );
    assert_bounded(&mut sj);
    println!("outputs: {at_hold} when the commit was held, {at_bound} at the in-flight bound");
    sj.signal("KILL");
    sj.wait(WAIT);
}

/// Exactly once, the output of the checkpoint being processed waits (in memory, bounded) for the
/// transaction in flight: the worker neither fails nor goes past the bound, and readiness says it
/// waits on Kafka — also when it is the held output's bound that stops it, not a checkpoint.
#[test]
fn exactly_once_holds_output_while_a_checkpoint_commits_and_stops_at_the_bound() {
    let (mut sj, _) = held("exactly_once", 1_000_000);
    assert_bounded(&mut sj);
    assert_eq!(sj.exited(), None, "{}", sj.logs());
    sj.signal("KILL");
    sj.wait(WAIT);
}
