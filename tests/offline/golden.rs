//! Golden replay tests: every fixture under `tests/fixtures/replay/` through the library (over
//! the in-memory store) and through the real `sidejoin` binary.

use crate::common::fixtures;
use sidejoin::engine::MemoryState;

#[test]
fn golden_fixtures_in_process_memory_state() {
    fixtures::golden_suite(MemoryState::new);
}

#[test]
fn golden_fixtures_through_the_binary() {
    let failures: Vec<String> = fixtures::all()
        .iter()
        .filter_map(|f| {
            fixtures::check(f, &fixtures::run_binary(f))
                .err()
                .map(|e| format!("--- {}: {e}", f.name))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} fixture(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
