//! Interval join (SPEC §4): property tests against a naive reference (2,000 cases per join
//! type), processing-time behaviour with a fake clock (`SIDEJOIN_MAX_WAIT`,
//! `SIDEJOIN_IDLE_TIMEOUT`), and bounded state over a million rows.

use crate::common::interval_props::check_interval_join;
use serde_json::json;
use sidejoin::change::{Event, Input, JoinedChange, Kind, Row, Side};
use sidejoin::config::{self, Mode};
use sidejoin::engine::{Engine, MemoryState};

const CASES: u32 = 2_000;

#[test]
fn inner_interval_join_matches_reference() {
    check_interval_join("inner", CASES, MemoryState::new);
}

#[test]
fn left_interval_join_matches_reference() {
    check_interval_join("left", CASES, MemoryState::new);
}

#[test]
fn right_interval_join_matches_reference() {
    check_interval_join("right", CASES, MemoryState::new);
}

#[test]
fn full_interval_join_matches_reference() {
    check_interval_join("full", CASES, MemoryState::new);
}

fn engine(extra: &[(&str, &str)]) -> Engine {
    let mut env: Vec<(String, String)> = [
        ("SIDEJOIN_JOIN_TYPE", "left"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_INTERVAL_LOWER", "-10s"),
        ("SIDEJOIN_INTERVAL_UPPER", "10s"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Engine::new(&config::load(env, Mode::Replay).expect("config").join)
}

fn input(side: Side, k: i64, name: &str, time: i64, processing_time: i64) -> Input {
    let row = Row::from_value(&json!({"k": k, "name": name})).unwrap();
    Input {
        side,
        partition: 0,
        timestamp: time,
        time: Some(time),
        processing_time,
        event: Some(Event::Change(Kind::Insert, row)),
    }
}

/// `(left name, right name)` of each change, `None` for a padded side.
fn names(changes: &[JoinedChange]) -> Vec<(Option<String>, Option<String>)> {
    let name = |r: &Option<Row>| {
        r.as_ref()
            .map(|r| r.get(b"name").unwrap().as_str().unwrap().into_owned())
    };
    changes
        .iter()
        .map(|c| {
            assert_eq!(c.kind, Kind::Insert);
            (name(&c.left), name(&c.right))
        })
        .collect()
}

fn some(s: &str) -> Option<String> {
    Some(s.to_owned())
}

#[test]
fn max_wait_pads_a_stalled_row_once_and_later_matches_still_come() {
    let mut e = engine(&[("SIDEJOIN_MAX_WAIT", "5s")]);
    let mut state = MemoryState::new();
    e.set_partitions(&[0], 0);
    let mut out = Vec::new();
    e.process(&mut state, input(Side::Left, 1, "a", 0, 1_000), &mut out)
        .expect("state");
    assert!(out.is_empty());
    e.tick(&mut state, 5_999, &mut out).expect("state");
    assert!(out.is_empty(), "max wait not reached yet");
    e.tick(&mut state, 6_000, &mut out).expect("state");
    assert_eq!(
        names(&out),
        vec![(some("a"), None)],
        "padded after 5s although W is stalled"
    );
    out.clear();
    e.tick(&mut state, 60_000, &mut out).expect("state");
    assert!(out.is_empty(), "padded only once");
    e.process(
        &mut state,
        input(Side::Right, 1, "x", 1_000, 61_000),
        &mut out,
    )
    .expect("state");
    assert_eq!(
        names(&out),
        vec![(some("a"), some("x"))],
        "a later match is still emitted"
    );
    out.clear();
    e.flush(&mut state, &mut out).expect("state");
    assert!(out.is_empty(), "never padded again when final");
    let s = e.stats();
    assert_eq!(s.unmatched_emitted[0], [0, 0, 1], "one max_wait padding");
    assert_eq!(s.late_matches, 1);
    assert_eq!(s.state_rows, [0; sidejoin_core::config::MAX_SOURCES]);
}

#[test]
fn idle_timeout_lets_w_pass_an_idle_partition() {
    let mut e = engine(&[("SIDEJOIN_IDLE_TIMEOUT", "10s")]);
    let mut state = MemoryState::new();
    e.set_partitions(&[0], 0);
    let mut out = Vec::new();
    e.process(&mut state, input(Side::Left, 1, "a", 0, 0), &mut out)
        .expect("state");
    e.process(
        &mut state,
        input(Side::Left, 2, "b", 20_001, 5_000),
        &mut out,
    )
    .expect("state");
    e.tick(&mut state, 9_999, &mut out).expect("state");
    assert!(
        out.is_empty(),
        "the right partition is not idle yet: W is still -inf"
    );
    e.tick(&mut state, 10_000, &mut out).expect("state");
    assert_eq!(
        names(&out),
        vec![(some("a"), None)],
        "right idle: W = 20001 > 0 + 10s"
    );
    assert_eq!(e.stats().unmatched_emitted[0], [1, 0, 0]);
    // A record on the idle partition makes it active again; W never goes back.
    out.clear();
    e.process(
        &mut state,
        input(Side::Right, 2, "x", 15_000, 11_000),
        &mut out,
    )
    .expect("state");
    assert_eq!(names(&out), vec![(some("b"), some("x"))]);
}

#[test]
fn replay_ignores_processing_time_settings() {
    // Same engine, processing time 0 throughout: max wait and idleness never trigger.
    let mut e = engine(&[("SIDEJOIN_MAX_WAIT", "1s"), ("SIDEJOIN_IDLE_TIMEOUT", "1s")]);
    let mut state = MemoryState::new();
    e.set_partitions(&[0], 0);
    let mut out = Vec::new();
    e.process(&mut state, input(Side::Left, 1, "a", 0, 0), &mut out)
        .expect("state");
    e.process(&mut state, input(Side::Left, 1, "b", 50_000, 0), &mut out)
        .expect("state");
    assert!(out.is_empty());
}

#[test]
fn state_stays_bounded_over_a_million_rows() {
    // 1,000,000 rows 1 ms apart, alternating sides, 1,000 keys, interval [-1m, +1m], delay 0.
    let mut e = engine(&[
        ("SIDEJOIN_INTERVAL_LOWER", "-1m"),
        ("SIDEJOIN_INTERVAL_UPPER", "1m"),
    ]);
    let mut state = MemoryState::new();
    e.set_partitions(&[0], 0);
    // (UPPER - LOWER + delay) / spacing + keys
    let (upper, lower, delay, spacing) = (60_000, -60_000, 0, 1);
    let bound = (upper - lower + delay) / spacing + 1_000;
    let mut out = Vec::new();
    let mut peak = 0;
    for i in 0..1_000_000i64 {
        let side = if i % 2 == 0 { Side::Left } else { Side::Right };
        let row = Row::from_value(&json!({"k": i % 1_000})).unwrap();
        let input = Input {
            side,
            partition: 0,
            timestamp: i,
            time: Some(i),
            processing_time: 0,
            event: Some(Event::Change(Kind::Insert, row)),
        };
        out.clear();
        e.process(&mut state, input, &mut out).expect("state");
        if i % 10_000 == 9_999 {
            let rows = e.stats().state_rows[0] + e.stats().state_rows[1];
            peak = peak.max(rows);
            assert!(
                rows <= bound,
                "{rows} rows stored after {} inputs (bound {bound})",
                i + 1
            );
        }
    }
    // Each row waits 60 s of stream time (its finality bound) before it is evicted.
    assert!(
        peak > 55_000,
        "the window really holds ~60,000 rows: peak {peak}"
    );
}
