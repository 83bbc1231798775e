//! Drives a `Processor` the way `sidejoin run` does, minus Kafka: records in, output records
//! out (counted, their bytes handed to `black_box`), a checkpoint sealed every `CHECKPOINT_EVERY` records and persisted one checkpoint later, as the run loop does.
#![allow(dead_code)]

use std::hint::black_box;

use sidejoin::config::Config;
use sidejoin::engine::MemoryState;
use sidejoin::format::Reading;
use sidejoin::runtime::{InRecord, JoinProcessor, Processor};
use sidejoin::sink::Records;
use sidejoin::store::{Checkpointed, RocksState, StoreOptions};

use super::kafka_workload::KafkaRecord;

/// Records between two checkpoints (about what one commit interval holds at full speed).
pub(crate) const CHECKPOINT_EVERY: usize = 50_000;

/// Which state store the processor runs on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Store {
    Memory,
    Rocks,
}

impl Store {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Rocks => "rocksdb",
        }
    }
}

/// The join processor with the state it joins against.
pub(crate) enum Driven {
    Memory(JoinProcessor, MemoryState),
    Rocks(JoinProcessor, Box<RocksState>),
}

/// A processor over a fresh store (RocksDB in `dir`, with `options`), assigned partitions 0
/// and 1.
pub(crate) fn processor(
    config: &Config,
    store: Store,
    dir: &std::path::Path,
    options: StoreOptions,
) -> Driven {
    let mut p = JoinProcessor::new(config, vec![Reading::Own; 2]);
    match store {
        Store::Memory => {
            let mut state = MemoryState::new();
            Processor::assigned(&mut p, &mut state, &[0, 1], &[], 0).expect("assign");
            Driven::Memory(p, state)
        }
        Store::Rocks => {
            let mut state = RocksState::open(dir, &options).expect("open RocksDB");
            Processor::assigned(&mut p, &mut state, &[0, 1], &[], 0).expect("assign");
            Driven::Rocks(p, Box::new(state))
        }
    }
}

/// Feeds every record; returns the number of output records and their total bytes. `progress`
/// is called after every million records.
pub(crate) fn run<'a>(
    driven: &mut Driven,
    records: impl IntoIterator<Item = std::borrow::Cow<'a, KafkaRecord>>,
    progress: impl FnMut(usize),
) -> (usize, usize) {
    match driven {
        Driven::Memory(p, state) => run_on(p, state, records, progress),
        Driven::Rocks(p, state) => run_on(p, &mut **state, records, progress),
    }
}

#[inline(never)]
fn run_on<'a, S: Checkpointed>(
    p: &mut dyn Processor<S>,
    state: &mut S,
    records: impl IntoIterator<Item = std::borrow::Cow<'a, KafkaRecord>>,
    mut progress: impl FnMut(usize),
) -> (usize, usize) {
    let mut out = Records::default();
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
        p.process(state, &rec, 0, &mut out).expect("valid record");
        count += out.len();
        bytes += out.bytes.len();
        black_box(&out.bytes);
        out.clear();
        if (i + 1) % 1_000_000 == 0 {
            progress(i + 1);
        }
        if (i + 1) % CHECKPOINT_EVERY == 0 {
            // As the run loop does: seal now, persist the previous checkpoint (its outputs
            // would be acknowledged by then).
            p.checkpoint(state);
            let sealed = state.seal().expect("seal");
            if let Some(previous) = previous.replace(sealed) {
                state.persist(previous).expect("persist");
            }
        }
    }
    p.checkpoint(state);
    let last = state.seal().expect("seal");
    state.persist(last).expect("persist");
    (count, bytes)
}
