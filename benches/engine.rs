//! Join throughput through the pipeline replay uses (decode → engine → projection), outputs to
//! `black_box`:
//! - regular left join: 1,000,000 keys, 50/50 sides, 10% primary-key updates
//!   (`SIDEJOIN_BENCH_KEYS` changes the key count);
//! - interval left join: 1,000,000 rows 1 ms apart, 100,000 keys, [-1m, +1m].

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};

/// The allocator of the `sidejoin` binary, so the numbers are the binary's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[path = "support/workload.rs"]
mod workload;

fn keys() -> u64 {
    std::env::var("SIDEJOIN_BENCH_KEYS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

fn regular_left_join(c: &mut Criterion) {
    let config = workload::config();
    let records = workload::as_rows(&workload::records(keys()));
    let mut group = c.benchmark_group("regular_join");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records.len() as u64));
    // Decoded rows moved in (cloned outside the timed part): join, filter, projection.
    group.bench_function("left_join_pk_updates", |b| {
        b.iter_batched(
            || records.clone(),
            |input| {
                workload::run(&config, input, |c| {
                    black_box(c);
                })
            },
            BatchSize::PerIteration,
        )
    });
    // The same from JSON bytes: parsing included, as `sidejoin run` does per Kafka record.
    let bytes = workload::as_bytes(&workload::records(keys()));
    group.bench_function("left_join_pk_updates_from_bytes", |b| {
        b.iter(|| {
            workload::run_bytes(&config, &bytes, |c| {
                black_box(c);
            })
        })
    });
    group.finish();
}

/// Interval left join, [-1m, +1m]: 1,000,000 rows 1 ms apart, alternating sides, 100,000 keys
/// (about one match per row), parsed rows moved in, outputs to `black_box`.
fn interval_left_join(c: &mut Criterion) {
    let config = workload::interval_config();
    let records = workload::as_rows(&workload::interval_records(1_000_000, 100_000));
    let mut group = c.benchmark_group("interval_join");
    group.sample_size(10);
    group.throughput(Throughput::Elements(records.len() as u64));
    group.bench_function("left_join_1m_window", |b| {
        b.iter_batched(
            || records.clone(),
            |input| {
                workload::run(&config, input, |c| {
                    black_box(c);
                })
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, regular_left_join, interval_left_join);
criterion_main!(benches);
