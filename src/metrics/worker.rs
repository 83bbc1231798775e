//! A worker's handle on the shared metrics (`SIDEJOIN_WORKERS`): what it reports about itself
//! goes to its own slot.

use std::ops::Deref;
use std::sync::Arc;

use super::Metrics;
use crate::change::Side;
use crate::stats::Stats;

/// One worker's view of the shared `Metrics`: what it reports about itself goes to its slot;
/// everything else (`Deref`) is shared as is.
#[derive(Clone)]
pub struct WorkerMetrics {
    pub(super) shared: Arc<Metrics>,
    pub(super) index: usize,
}

impl WorkerMetrics {
    /// Brings every engine-derived metric up to `stats`, this worker's engine's counts.
    pub fn observe_stats(&self, stats: &Stats) {
        self.shared.observe_stats(self.index, stats);
    }

    pub fn set_watermark(&self, side: Side, ms: i64) {
        self.shared.set_watermark(self.index, side, ms);
    }

    /// Whether this worker's assigned partitions are restored and being processed.
    pub fn set_ready(&self, ready: bool) {
        self.shared.set_processing(self.index, ready);
    }

    /// How many brokers this worker's consumer is connected to; none makes the instance not
    /// ready.
    pub fn set_brokers_up(&self, up: usize) {
        self.shared.set_brokers_up(self.index, up);
    }

    /// This worker is in `step` and moving (the watchdog's input: `progress`).
    #[inline]
    pub fn step(&self, step: super::Step) {
        self.shared.health.report(self.index, step);
    }

    pub fn shared(&self) -> &Arc<Metrics> {
        &self.shared
    }
}

impl Deref for WorkerMetrics {
    type Target = Metrics;

    fn deref(&self) -> &Metrics {
        &self.shared
    }
}
