//! The output producer's context: delivery reports counted per checkpoint, in the thread that
//! polls the producer (no future or allocation per record), the end-to-end latency observed from
//! each delivered record's timestamp (the input record's), and the first delivery failure kept
//! for the run loop, which treats it as fatal.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::error::KafkaError;
use rdkafka::message::{DeliveryResult, Message};
use rdkafka::producer::ProducerContext;

use rustc_hash::FxHashMap;

use crate::change::Side;
use crate::metrics::Metrics;

#[derive(Default)]
struct Counts {
    /// Checkpoint number → records sent under it and not yet acknowledged.
    outstanding: BTreeMap<u64, u64>,
    /// `(side index, partition)` of a changelog topic → the offset after its last delivered
    /// record.
    changelog: FxHashMap<(usize, i32), i64>,
    failed: Option<String>,
}

impl Counts {
    /// One record of `checkpoint` is outstanding no more.
    fn one_less(&mut self, checkpoint: u64) {
        if let Some(n) = self.outstanding.get_mut(&checkpoint) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.outstanding.remove(&checkpoint);
            }
        }
    }
}

/// The delivery opaque of a changelog record of `side` (output records carry their checkpoint
/// number, which never comes near these).
pub(crate) fn changelog_opaque(side: Side) -> usize {
    usize::MAX - side.index()
}

/// The lowest changelog opaque: that of the last input a join can have.
const LOWEST_CHANGELOG: usize = usize::MAX - (sidejoin_core::config::MAX_SOURCES - 1);

/// The delivery opaque of a repartition router's records: only a failure is kept.
pub(crate) const ROUTED: usize = LOWEST_CHANGELOG - 1;

pub(crate) struct Deliveries {
    counts: Mutex<Counts>,
    metrics: Arc<Metrics>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Deliveries {
    pub(crate) fn new(metrics: Arc<Metrics>) -> Self {
        Deliveries {
            counts: Mutex::new(Counts::default()),
            metrics,
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A record was handed to the producer under `checkpoint`.
    pub(crate) fn sent(&self, checkpoint: u64) {
        *self.counts().outstanding.entry(checkpoint).or_insert(0) += 1;
    }

    /// A record counted by `sent` under `checkpoint` was not handed over after all.
    pub(crate) fn unsent(&self, checkpoint: u64) {
        self.counts().one_less(checkpoint);
    }

    /// Records of `checkpoint` and earlier not yet acknowledged.
    pub(crate) fn outstanding_through(&self, checkpoint: u64) -> u64 {
        self.counts()
            .outstanding
            .range(..=checkpoint)
            .map(|(_, n)| *n)
            .sum()
    }

    /// Takes the changelog positions delivered since the last call: `(side index, partition)` →
    /// the offset after the last delivered record.
    pub(crate) fn take_changelog_positions(&self) -> FxHashMap<(usize, i32), i64> {
        std::mem::take(&mut self.counts().changelog)
    }

    /// Forgets delivery failures and changelog positions: what failed was purged with an
    /// aborted transaction, which is redone.
    pub(crate) fn aborted(&self) {
        let mut c = self.counts();
        c.failed = None;
        c.changelog.clear();
        c.outstanding.clear();
    }

    /// The metrics deliveries are observed in.
    pub(crate) fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    /// The first delivery that failed, if any (the producer's retries are exhausted).
    pub(crate) fn failure(&self) -> Option<String> {
        self.counts().failed.clone()
    }
}

impl ClientContext for Deliveries {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        super::context::log(level, fac, message)
    }

    fn error(&self, error: KafkaError, reason: &str) {
        tracing::warn!(target: "librdkafka", "{error}: {reason}");
    }
}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, checkpoint: usize) {
        let mut c = self.counts();
        if checkpoint == ROUTED {
            if let (Err((e, _)), None) = (result, &c.failed) {
                c.failed = Some(format!("repartition: {e}"));
            }
            return;
        }
        if checkpoint >= LOWEST_CHANGELOG {
            match result {
                Ok(msg) => {
                    let at = (usize::MAX - checkpoint, msg.partition());
                    let next = c.changelog.entry(at).or_insert(0);
                    *next = (*next).max(msg.offset() + 1);
                }
                Err((e, _)) => {
                    if c.failed.is_none() {
                        c.failed = Some(format!("changelog: {e}"));
                    }
                }
            }
            return;
        }
        c.one_less(checkpoint as u64);
        match result {
            Ok(msg) => {
                if let Some(ts) = msg.timestamp().to_millis() {
                    self.metrics
                        .observe_latency((now_ms() - ts).max(0) as f64 / 1000.0);
                }
            }
            Err((e, _)) => {
                if c.failed.is_none() {
                    c.failed = Some(e.to_string());
                }
            }
        }
    }
}
