//! Runs one bytes-to-bytes workload once (Kafka record bytes → the run loop's `Processor` →
//! output record bytes), for instruction counts and wall time:
//!
//!     valgrind --tool=callgrind --toggle-collect='*drive::run*' \
//!         $CARGO_TARGET_DIR/release/examples/bytes_callgrind pk_left memory 200000
//!
//! Instructions per record = the collected total / the input records it prints. Workloads:
//! `pk_left`, `fanout_inner`, `interval_left`; stores: `memory`, `rocksdb`.

/// The allocator of the `sidejoin` binary, so the numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/support/drive.rs"]
mod drive;
#[path = "../benches/support/kafka_workload.rs"]
mod kafka_workload;

use drive::Store;
use kafka_workload::Workload;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let workload = args
        .get(1)
        .and_then(|w| Workload::parse(w))
        .unwrap_or(Workload::PkLeft);
    let store = match args.get(2).map(String::as_str) {
        Some("rocksdb") => Store::Rocks,
        _ => Store::Memory,
    };
    let n: u64 = args.get(3).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let records = workload.records(n);
    let config = workload.config();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut p = drive::processor(&config, store, dir.path());
    let started = std::time::Instant::now();
    let (outputs, bytes) = drive::run(p.as_mut(), &records);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "{} on {}: {n} input records, {outputs} output records ({bytes} bytes) in {secs:.2}s = {:.0} records/s",
        workload.name(),
        store.name(),
        n as f64 / secs
    );
}
