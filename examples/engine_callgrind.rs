//! Runs the regular-join bench workload once, for instruction counts:
//!
//!     valgrind --tool=callgrind --toggle-collect='*workload::run<*' \
//!         target/release/examples/engine_callgrind 100000
//!
//! Instructions per change = the collected total / the number of input records it prints.
//! A second argument `interval` runs the interval-join workload (10 × KEYS rows) instead.

use std::hint::black_box;

/// The allocator of the `sidejoin` binary, so the numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/support/workload.rs"]
mod workload;

fn main() {
    let keys: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let interval = std::env::args().nth(2).as_deref() == Some("interval");
    let (config, records) = if interval {
        (
            workload::interval_config(),
            workload::interval_records(keys * 10, keys),
        )
    } else {
        (workload::config(), workload::records(keys))
    };
    let n = records.len();
    let bytes = workload::as_bytes(&records);
    let records = workload::as_rows(&records);
    let started = std::time::Instant::now();
    let (outputs, state) = workload::run(&config, records, |c| {
        black_box(c);
    });
    let secs = started.elapsed().as_secs_f64();
    drop(state);
    println!(
        "parsed rows: {n} input records, {outputs} output changes in {secs:.2}s = {:.0} changes/s",
        n as f64 / secs
    );
    let started = std::time::Instant::now();
    let (_, state) = workload::run_bytes(&config, &bytes, |c| {
        black_box(c);
    });
    let secs = started.elapsed().as_secs_f64();
    drop(state);
    println!(
        "JSON bytes:  {n} input records in {secs:.2}s = {:.0} changes/s",
        n as f64 / secs
    );
}
