//! The RocksDB store runs the engine's golden and property suites unchanged, and TTL expiry on it
//! does work proportional to what expires, not to what is stored.

use crate::common::interval_props::check_interval_join;
use crate::common::props::check_join_type;
use crate::common::rocks::{Counting, TempRocks};
use serde_json::json;
use sidejoin::change::{Event, Input, Kind, Side};
use sidejoin::config::{self, Mode};
use sidejoin::engine::{Engine, JoinState};

const CASES: u32 = 2_000;

#[test]
fn golden_fixtures_on_rocksdb() {
    crate::common::fixtures::golden_suite(TempRocks::new);
}

#[test]
fn regular_joins_on_rocksdb_match_the_reference() {
    for join in ["inner", "left", "right", "full"] {
        check_join_type(join, CASES, TempRocks::new);
    }
}

#[test]
fn interval_joins_on_rocksdb_match_the_reference() {
    for join in ["inner", "left", "right", "full"] {
        check_interval_join(join, CASES, TempRocks::new);
    }
}

fn insert(e: &mut Engine, s: &mut impl JoinState, k: u64, ts: i64) {
    let row = sidejoin::change::Row::from_value(&json!({"k": k})).unwrap();
    let input = Input {
        side: Side::Left,
        partition: 0,
        timestamp: ts,
        time: None,
        processing_time: 0,
        event: Some(Event::Change(Kind::Insert, row)),
    };
    e.process(s, input, &mut Vec::new()).expect("state");
}

/// Scan steps of one record that expires `expiring` rows while `live` rows stay.
fn expiry_work(live: u64, expiring: u64) -> u64 {
    let env = [
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_STATE_TTL", "10s"),
    ];
    let cfg = config::load(
        env.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        Mode::Replay,
    )
    .unwrap();
    let mut e = Engine::new(&cfg.join);
    let mut s = Counting {
        inner: TempRocks::new(),
        visited: 0,
    };
    for k in 0..expiring {
        insert(&mut e, &mut s, k, 0);
    }
    for k in 0..live {
        insert(&mut e, &mut s, 1_000_000 + k, 5_000);
    }
    s.inner.flush().unwrap();
    assert_eq!(e.stats().state_rows[0], (live + expiring) as i64);
    s.visited = 0;
    // Stream time 10,001: the rows written at 0 are past the TTL, those at 5,000 are not.
    insert(&mut e, &mut s, 2_000_000, 10_001);
    assert_eq!(e.stats().state_expired[0], expiring);
    assert_eq!(e.stats().state_rows[0], (live + 1) as i64);
    s.visited
}

#[test]
fn ttl_expiry_work_does_not_grow_with_live_rows() {
    let small = expiry_work(1_000, 50);
    let large = expiry_work(50_000, 50);
    assert_eq!(
        small, large,
        "expiry visited {small} items with 1,000 live rows, {large} with 50,000"
    );
    assert!(
        small <= 50 + 2,
        "expiry visited {small} items to expire 50 rows"
    );
}
