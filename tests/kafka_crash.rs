//! Crash recovery on the real broker (SPEC §7): sidejoin is killed with SIGKILL three times at
//! random moments (each time with output already written and input still unconsumed) and
//! restarted on the same state directory. At the end every input offset is consumed and the
//! output topic, folded as an upsert table, equals `sidejoin replay` of all the records.

mod common;

use std::time::{Duration, Instant};

use common::kafka::{self, Sidejoin};
use common::upsert;

const WAIT: Duration = Duration::from_secs(180);
/// Large enough that a fast run is still mid-input when it is stopped.
const TOTAL: u64 = 400_000;

/// Left rows `{id, k, v}` (primary key id, join key k = id % 5000), right rows `{k, w}` (primary
/// key k). Both topics are keyed by k, so a join key's rows share a partition. Every left id is
/// inserted in the first 20,000 records; the rest are mostly right updates, whose output depends
/// on left rows written long before: state lost in a crash would show in the final table.
fn records(t0: i64) -> Vec<(bool, String, String, i64)> {
    (0..TOTAL)
        .map(|i| {
            let ts = t0 + i as i64;
            let left = if i < 20_000 { i % 2 == 0 } else { i % 5 == 0 };
            if left {
                let id = if i < 20_000 {
                    i / 2
                } else {
                    (i * 7_919) % 10_000
                };
                upsert::left_row(id, id % 5_000, i, ts)
            } else {
                upsert::right_row((i * 104_729) % 5_000, i, ts)
            }
        })
        .collect()
}

fn consumed(app: &str, left: &str, right: &str) -> i64 {
    kafka::committed(app, left)
        .iter()
        .chain(kafka::committed(app, right).iter())
        .map(|o| (*o).max(0))
        .sum()
}

#[test]
fn kill_nine_three_times_then_the_output_equals_replay() {
    let (left, right, out) = kafka::join_topics("crash", [2, 2, 2]);
    let all = records(kafka::now_ms());
    let produce: Vec<_> = all
        .iter()
        .map(|(l, k, v, ts)| {
            (
                (if *l { &left } else { &right }).clone(),
                Some(k.clone()),
                Some(v.clone()),
                *ts,
            )
        })
        .collect();
    kafka::produce_many(&kafka::producer(), &produce);
    let app = kafka::unique("crash-app");
    let mut env = kafka::with(
        kafka::base_env(&app, &left, &right, &out),
        &upsert::left_join_env(),
    );
    // Small fetches keep both topics' partitions progressing together (librdkafka would
    // otherwise hand over one topic's backlog first).
    env.push((
        "SIDEJOIN_KAFKA_CONSUMER_MAX_PARTITION_FETCH_BYTES".into(),
        "16384".into(),
    ));
    // A killed member leaves the group only when its session times out.
    env.push((
        "SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS".into(),
        "6000".into(),
    ));
    // Random kill moments; the seed is printed so a failure can be replayed.
    let mut seed = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(kafka::now_ms() as u64);
    println!("CRASH_SEED={seed}");
    let mut random_below = |n: u64| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % n.max(1)
    };
    for round in 0..3 {
        let written_before: i64 = kafka::high_watermarks(&out).iter().sum();
        let mut sj = Sidejoin::start("run", &env);
        sj.wait_ready(WAIT);
        // A random moment: once this run has consumed a random number of records and some of
        // its output has reached the topic.
        let before = consumed(&app, &left, &right) as u64;
        let target = 2_000 + random_below((TOTAL - before) / 3);
        sj.wait_records_in(target, WAIT);
        let deadline = Instant::now() + WAIT;
        while kafka::high_watermarks(&out).iter().sum::<i64>() <= written_before {
            assert!(
                Instant::now() < deadline,
                "round {round}: no output written:\n{}",
                sj.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        // Freeze it, check output exists and input is still unconsumed, then SIGKILL.
        sj.signal("STOP");
        let written = kafka::read_all(&out, 1, Duration::from_secs(10)).len();
        let lag = TOTAL as i64 - consumed(&app, &left, &right);
        assert!(
            written > 0,
            "round {round}: no output written before the kill"
        );
        assert!(
            lag > 0,
            "round {round}: nothing left to consume at the kill"
        );
        sj.signal("KILL");
        assert_eq!(sj.wait(WAIT), -1, "killed by a signal");
        println!("round {round}: killed after {target} records of this run, lag {lag}");
    }
    let mut last = Sidejoin::start("run", &env);
    last.wait_ready(WAIT);
    let deadline = Instant::now() + WAIT;
    while consumed(&app, &left, &right) < TOTAL as i64 {
        assert!(
            Instant::now() < deadline,
            "not every offset consumed:\n{}",
            last.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let ends: i64 = kafka::high_watermarks(&left)
        .iter()
        .chain(kafka::high_watermarks(&right).iter())
        .sum();
    assert_eq!(ends, TOTAL as i64);
    // Replay of every record, in production order.
    let replayed: Vec<_> = all
        .iter()
        .map(|(l, _, v, ts)| (*l, v.clone(), *ts))
        .collect();
    let want = upsert::replay_table(&env, &replayed);
    assert_eq!(want.len(), 10_000, "every left id is in the left join");
    upsert::wait_for_table(&out, &want, deadline);
}
