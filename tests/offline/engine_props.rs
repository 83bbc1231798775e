//! Property tests of the regular join against a naive SQL join (see `crate::common::props`), 2,000
//! random cases per join type over the in-memory store.

use crate::common::props::check_join_type;
use sidejoin::engine::MemoryState;

const CASES: u32 = 2_000;

#[test]
fn inner_join_matches_reference() {
    check_join_type("inner", CASES, MemoryState::new);
}

#[test]
fn left_join_matches_reference() {
    check_join_type("left", CASES, MemoryState::new);
}

#[test]
fn right_join_matches_reference() {
    check_join_type("right", CASES, MemoryState::new);
}

#[test]
fn full_join_matches_reference() {
    check_join_type("full", CASES, MemoryState::new);
}
