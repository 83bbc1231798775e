use super::*;

#[test]
fn counters_follow_stats_and_render() {
    let m = Arc::new(Metrics::new(1)).worker(0);
    let mut s = Stats {
        records_in: [3, 1, 0, 0, 0, 0, 0, 0],
        state_rows: [2, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    s.input_dropped(Side::Right, DropReason::Tombstone);
    m.observe_stats(&s);
    s.records_in[0] = 5;
    m.observe_stats(&s);
    let text = m.render();
    assert!(
        text.contains("sidejoin_records_in_total{side=\"left\"} 5"),
        "{text}"
    );
    assert!(text.contains("sidejoin_state_rows{side=\"left\"} 2"));
    assert!(text.contains("sidejoin_input_dropped_total{reason=\"tombstone\",side=\"right\"} 1"));
    assert!(text.contains("sidejoin_end_to_end_latency_seconds_bucket"));
}

#[test]
fn workers_add_up() {
    let shared = Arc::new(Metrics::new(2));
    let (a, b) = (shared.worker(0), shared.worker(1));
    let stats = |records_in, rows| Stats {
        records_in: [records_in, 0, 0, 0, 0, 0, 0, 0],
        state_rows: [rows, 0, 0, 0, 0, 0, 0, 0],
        ..Default::default()
    };
    a.observe_stats(&stats(3, 2));
    b.observe_stats(&stats(4, 5));
    a.observe_stats(&stats(6, 1));
    a.set_watermark(Side::Left, 20);
    b.set_watermark(Side::Left, 10);
    let text = shared.render();
    assert!(
        text.contains("sidejoin_records_in_total{side=\"left\"} 10"),
        "{text}"
    );
    assert!(
        text.contains("sidejoin_state_rows{side=\"left\"} 6"),
        "{text}"
    );
    assert!(
        text.contains("sidejoin_watermark_ms{side=\"left\"} 10"),
        "{text}"
    );
    a.set_ready(true);
    assert!(!shared.is_ready(), "one worker is not ready yet");
    b.set_ready(true);
    assert!(shared.is_ready());
    b.set_brokers_up(0);
    assert!(!shared.is_ready(), "a worker reaches no broker");
}

/// A checkpoint that Kafka leaves waiting makes the instance not ready once it has waited past
/// `CHECKPOINT_NOT_READY` (the worker cannot serve the statistics that would say so), and ready
/// again when it completes; the `sidejoin_ready` gauge follows on `refresh_ready`.
#[test]
fn a_checkpoint_waiting_on_kafka_makes_the_instance_not_ready() {
    let shared = Arc::new(Metrics::new(1));
    let w = shared.worker(0);
    w.set_ready(true);
    w.step(Step::Checkpoint);
    assert!(shared.is_ready(), "a checkpoint that just began");
    std::thread::sleep(super::CHECKPOINT_NOT_READY + std::time::Duration::from_millis(200));
    assert!(!shared.is_ready(), "a checkpoint waiting past the bound");
    assert!(shared.refresh_ready());
    assert!(shared.render().contains("sidejoin_ready 0"));
    w.step(Step::Polling);
    assert!(shared.is_ready(), "the checkpoint completed");
    assert!(!shared.refresh_ready());
    assert!(shared.render().contains("sidejoin_ready 1"));
}
