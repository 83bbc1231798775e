//! Bytes-to-bytes throughput (issue 9): Kafka record bytes in, output record bytes out, through
//! the `Processor` that `sidejoin run` uses, on memory and RocksDB state, for the three workloads
//! of `support/kafka_workload.rs` (a primary-key left join, a multiset inner join with fan-out, an
//! interval left join). `SIDEJOIN_BENCH_RECORDS` sets the record count (default 1,000,000).

use std::borrow::Cow;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

/// The allocator of the `sidejoin` binary, so the numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/drive.rs"]
mod drive;
#[path = "support/kafka_workload.rs"]
mod kafka_workload;

use drive::Store;
use kafka_workload::Workload;

fn records() -> u64 {
    std::env::var("SIDEJOIN_BENCH_RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn bytes_to_bytes(c: &mut Criterion) {
    let n = records();
    let mut group = c.benchmark_group("bytes_to_bytes");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n));
    for workload in Workload::ALL {
        let config = workload.config();
        let input = workload.records(n);
        for store in [Store::Memory, Store::Rocks] {
            let id = format!("{}/{}", workload.name(), store.name());
            group.bench_function(id, |b| {
                b.iter_batched(
                    || {
                        let dir = tempfile::tempdir().expect("temp dir");
                        let p = drive::processor(
                            &config,
                            store,
                            dir.path(),
                            sidejoin::store::StoreOptions::default(),
                        );
                        (dir, p)
                    },
                    |(dir, mut p)| {
                        drive::run(&mut p, input.iter().map(Cow::Borrowed), |_| {});
                        (dir, p)
                    },
                    BatchSize::PerIteration,
                )
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bytes_to_bytes);
criterion_main!(benches);
