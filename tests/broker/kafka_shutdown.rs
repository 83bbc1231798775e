//! SIGTERM on the real broker (SPEC §7): with records still unconsumed, sidejoin stops fetching,
//! finishes and commits in-flight work and exits 0; the next run of the same group starts
//! exactly after what was committed, reprocessing nothing. `/metrics` moves during the run.

use std::time::Duration;

use crate::common::kafka::{self, Sidejoin};

const WAIT: Duration = Duration::from_secs(120);

#[test]
fn sigterm_drains_commits_and_the_next_run_reprocesses_nothing() {
    let (left, right, out) = kafka::join_topics("term", [2, 2, 2]);
    let t0 = kafka::now_ms();
    let producer = kafka::producer();
    kafka::produce_many(&producer, &records(&left, &right, t0, 0, 20_000));
    let app = kafka::unique("term-app");
    let mut env = kafka::base_env(&app, &left, &right, &out);
    env.push(("SIDEJOIN_LEFT_KEY".into(), "id".into()));
    env.push(("SIDEJOIN_RIGHT_KEY".into(), "id".into()));
    let mut first = Sidejoin::start("run", &env);
    run_through_the_first_records(&mut first);
    // Freeze it, add records it has not seen, and signal it while they wait: lag > 0.
    first.signal("STOP");
    kafka::produce_many(&producer, &records(&left, &right, t0, 20_000, 40_000));
    let total = 40_000u64;
    assert_lag_at_the_signal(&app, &left, &right, total);
    first.signal("TERM");
    first.signal("CONT");
    assert_eq!(first.wait(WAIT), 0, "{}", first.logs());
    let committed: i64 = kafka::committed(&app, &left)
        .iter()
        .chain(kafka::committed(&app, &right).iter())
        .sum();
    assert!(
        committed > 0 && (committed as u64) < total,
        "committed {committed}"
    );
    assert_everything_processed_was_committed(&first.logs(), committed);
    let mut second = Sidejoin::start("run", &env);
    let rest = total - committed as u64;
    second.wait_records_in(rest, WAIT);
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        second.records_in(),
        rest,
        "the second run reprocessed committed records"
    );
}

/// Records `from..to`: even ones left rows `{id, v}`, odd ones right rows `{id, w}`, two per id,
/// keyed by id; record i has timestamp `t0 + i`.
fn records(
    left: &str,
    right: &str,
    t0: i64,
    from: u64,
    to: u64,
) -> Vec<(String, Option<String>, Option<String>, i64)> {
    (from..to)
        .map(|i| {
            let (topic, side) = if i % 2 == 0 {
                (left, "v")
            } else {
                (right, "w")
            };
            let id = i / 2;
            (
                topic.to_owned(),
                Some(format!("{id}")),
                Some(format!("{{\"id\":{id},\"{side}\":{i}}}")),
                t0 + i as i64,
            )
        })
        .collect()
}

/// Waits until `first` has consumed the first 20,000 records (its metrics moving meanwhile),
/// joined every id, and reports its consumer lag.
fn run_through_the_first_records(first: &mut Sidejoin) {
    first.wait_records_in(2_000, WAIT);
    // Metrics move while it runs.
    let a = first.metric("sidejoin_records_in_total", "");
    first.wait_records_in(a as u64 + 1, WAIT);
    first.wait_records_in(20_000, WAIT);
    // Every id has both rows by now: one inner-join row each.
    let deadline = std::time::Instant::now() + WAIT;
    while first.metric("sidejoin_records_out_total", "op=\"+I\"") < 10_000.0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{}",
            first.get("/metrics").1
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // librdkafka reports consumer lag every second.
    while !first.get("/metrics").1.contains("sidejoin_consumer_lag{") {
        assert!(
            std::time::Instant::now() < deadline,
            "no consumer lag metric"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// All `total` records are in the topics, and at least the 20,000 added last are not committed.
fn assert_lag_at_the_signal(app: &str, left: &str, right: &str, total: u64) {
    let end: i64 = kafka::high_watermarks(left)
        .iter()
        .chain(kafka::high_watermarks(right).iter())
        .sum();
    assert_eq!(end as u64, total);
    let committed_before: i64 = kafka::committed(app, left)
        .iter()
        .chain(kafka::committed(app, right).iter())
        .map(|o| o.max(&0))
        .sum();
    assert!(
        end - committed_before >= 20_000,
        "lag at the signal: {}",
        end - committed_before
    );
}

/// The final counts in the `logs` of a clean stop (one per worker, `SIDEJOIN_WORKERS`) add up
/// to the `committed` offsets.
fn assert_everything_processed_was_committed(logs: &str, committed: i64) {
    let counts: Vec<u64> = logs
        .split("stopped cleanly after ")
        .skip(1)
        .filter_map(|s| s.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(!counts.is_empty(), "no final count in:\n{logs}");
    let processed: u64 = counts.iter().sum();
    assert_eq!(
        processed, committed as u64,
        "everything processed was committed"
    );
}
