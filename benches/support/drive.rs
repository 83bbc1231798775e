//! Drives a `Processor` the way `sidejoin run` does, minus Kafka: records in, output records
//! out (counted, their bytes handed to `black_box`), a checkpoint sealed with the input offsets
//! every `CHECKPOINT_EVERY` records and persisted one checkpoint later, as the run loop does.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::hint::black_box;

use sidejoin::config::Config;
use sidejoin::engine::MemoryState;
use sidejoin::format::Reading;
use sidejoin::runtime::{InRecord, JoinProcessor, Processor};
use sidejoin::sink::Records;
use sidejoin::store::{RocksState, StoreOptions};

use super::kafka_workload::KafkaRecord;

/// Records between two checkpoints (about what one commit interval holds at full speed).
pub const CHECKPOINT_EVERY: usize = 50_000;

/// Which state store the processor runs on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Store {
    Memory,
    Rocks,
}

impl Store {
    pub fn name(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Rocks => "rocksdb",
        }
    }
}

/// A processor over a fresh store (RocksDB in `dir`, with `options`), assigned partitions 0
/// and 1.
pub fn processor(
    config: &Config,
    store: Store,
    dir: &std::path::Path,
    options: StoreOptions,
) -> Box<dyn Processor> {
    let mut p: Box<dyn Processor> = match store {
        Store::Memory => Box::new(JoinProcessor::volatile(
            config,
            [Reading::Own; 2],
            MemoryState::new(),
        )),
        Store::Rocks => {
            let state = RocksState::open(dir, &options).expect("open RocksDB");
            Box::new(JoinProcessor::new(config, [Reading::Own; 2], state))
        }
    };
    p.assigned(&[0, 1], 0);
    p
}

/// Feeds every record; returns the number of output records and their total bytes. `progress`
/// is called after every million records.
#[inline(never)]
pub fn run<'a>(
    p: &mut dyn Processor,
    records: impl IntoIterator<Item = std::borrow::Cow<'a, KafkaRecord>>,
    mut progress: impl FnMut(usize),
) -> (usize, usize) {
    let mut out = Records::default();
    let mut offsets: BTreeMap<(String, i32), i64> = BTreeMap::new();
    let (mut count, mut bytes) = (0, 0);
    let mut previous = None;
    for (i, r) in records.into_iter().enumerate() {
        let rec = InRecord {
            side: r.side,
            partition: r.partition,
            timestamp: r.timestamp,
            key: Some(&r.key),
            value: Some(&r.value),
        };
        p.process(&rec, 0, &mut out).expect("valid record");
        count += out.len();
        bytes += out.bytes.len();
        black_box(&out.bytes);
        out.clear();
        offsets.insert((r.side.name().to_owned(), r.partition), i as i64 + 1);
        if (i + 1) % 1_000_000 == 0 {
            progress(i + 1);
        }
        if (i + 1) % CHECKPOINT_EVERY == 0 {
            // As the run loop does: seal now, persist the previous checkpoint (its outputs
            // would be acknowledged by then).
            let sealed = p.seal(&offsets, &mut |_, _| {}).expect("seal");
            if let Some(previous) = previous.replace(sealed) {
                p.persist(previous).expect("persist");
            }
        }
    }
    let last = p.seal(&offsets, &mut |_, _| {}).expect("seal");
    p.persist(last).expect("persist");
    (count, bytes)
}
