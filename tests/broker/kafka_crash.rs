//! Crash recovery on the real broker (SPEC §7): sidejoin is killed with SIGKILL three times at
//! random moments (each time with output already written and input still unconsumed) and
//! restarted on the same state directory. At the end every input offset is consumed and the
//! output topic, folded as an upsert table, equals `sidejoin replay` of all the records.

use std::time::Instant;

use crate::common::kafka;
use crate::common::kills::{self, WAIT};
use crate::common::upsert;

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
    // One worker (one group member): the kill rounds' pacing assumes it (see kafka_changelog).
    env.push(("SIDEJOIN_WORKERS".into(), "1".into()));
    // A killed member leaves the group only when its session times out.
    env.push((
        "SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS".into(),
        "6000".into(),
    ));
    let _last = kills::kill_rounds(
        &env,
        &app,
        &[&left, &right],
        &out,
        &mut kills::Input::fixed(TOTAL),
        3,
        |_| {},
    );
    let ends: i64 = kafka::high_watermarks(&left)
        .iter()
        .chain(kafka::high_watermarks(&right).iter())
        .sum();
    assert_eq!(ends, TOTAL as i64);
    // Replay of every record, in production order.
    let want = upsert::replay_table(&env, &all);
    assert_eq!(want.len(), 10_000, "every left id is in the left join");
    upsert::wait_for_table(&out, &want, Instant::now() + WAIT);
}
