//! Runs one bytes-to-bytes workload once (Kafka record bytes → the run loop's `Processor` →
//! output record bytes), for instruction counts and wall time:
//!
//!     valgrind --tool=callgrind --toggle-collect='*drive::run*' \
//!         $CARGO_TARGET_DIR/release/examples/bytes_callgrind pk_left memory 200000
//!
//! Instructions per record = the collected total / the input records it prints. Workloads:
//! `pk_left`, `fanout_inner`, `interval_left`; stores: `memory`, `rocksdb`. A fourth argument
//! sets the key count (default records / 10); then records are made one at a time instead of up
//! front, so the peak RSS printed is the join's own (10M rows: `pk_left memory 10000000
//! 5000000`). `SIDEJOIN_STATE_CACHE_MB` and `SIDEJOIN_STATE_BLOCK_CACHE_MB` size the RocksDB
//! store; records/s is printed every million records (does throughput stay flat as state
//! grows?).

/// The allocator of the `sidejoin` binary, so the numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "../benches/support/drive.rs"]
mod drive;
#[path = "../benches/support/kafka_workload.rs"]
mod kafka_workload;

use std::borrow::Cow;

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
    let keys: Option<u64> = args.get(4).and_then(|a| a.parse().ok());
    let options = store_options();
    let config = workload.config();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut p = drive::processor(&config, store, dir.path(), options);
    let mut last = (std::time::Instant::now(), cpu_seconds());
    let progress = |done: usize| {
        let now = (std::time::Instant::now(), cpu_seconds());
        // CPU per record is what a shared machine does not distort; wall time is what it does.
        eprintln!(
            "  {done} records: {:.0} records/s, {:.2} µs CPU per record over the last million",
            1e6 / (now.0 - last.0).as_secs_f64(),
            now.1 - last.1
        );
        last = now;
    };
    let (started, (outputs, bytes)) = match keys {
        Some(keys) => {
            let started = std::time::Instant::now();
            let r = drive::run(&mut p, workload.stream(n, keys).map(Cow::Owned), progress);
            (started, r)
        }
        None => {
            let records = workload.records(n);
            let started = std::time::Instant::now();
            let r = drive::run(&mut p, records.iter().map(Cow::Borrowed), progress);
            (started, r)
        }
    };
    let secs = started.elapsed().as_secs_f64();
    let rss = peak_rss_mib();
    println!(
        "{} on {}: {n} input records, {outputs} output records ({bytes} bytes) in {secs:.2}s = {:.0} records/s, peak RSS {rss:.0} MiB",
        workload.name(),
        store.name(),
        n as f64 / secs
    );
}

/// The RocksDB store's sizes: `SIDEJOIN_STATE_BLOCK_CACHE_MB` and `SIDEJOIN_STATE_CACHE_MB`, 128
/// MB each unless set.
fn store_options() -> sidejoin::store::StoreOptions {
    let mb = |var: &str, default: usize| {
        std::env::var(var)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    sidejoin::store::StoreOptions {
        block_cache_mb: mb("SIDEJOIN_STATE_BLOCK_CACHE_MB", 128),
        write_buffer_mb: 64,
        cache_mb: mb("SIDEJOIN_STATE_CACHE_MB", 128),
    }
}

/// This process's peak resident set size so far, in MiB (`VmHWM` of `/proc/self/status`).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// This process's user + system CPU time so far, in seconds (`/proc/self/stat`, clock ticks of
/// 1/100 s on Linux).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map_or("", |(_, rest)| rest)
        .split_whitespace()
        .collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line: 11 and 12 counting from the state (3).
    (ticks(11) + ticks(12)) / 100.0
}
