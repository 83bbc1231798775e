//! Property tests of the star join (SPEC §14) against a naive chained join (see
//! `crate::common::star_props`): random 3- and 4-input chains, inner and left, dimensions looked
//! up on the fact and on other dimensions, changes on every input, on memory and RocksDB state.

use crate::common::rocks::TempRocks;
use crate::common::star_props::check_star_join;
use sidejoin::engine::MemoryState;

#[test]
fn star_join_matches_the_naive_chain() {
    check_star_join(1_500, MemoryState::new);
}

#[test]
fn star_join_on_rocksdb_matches_the_naive_chain() {
    check_star_join(200, TempRocks::new);
}
