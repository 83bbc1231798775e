//! What each worker is doing and since when it last moved on — the watchdog's input
//! (`runtime::watchdog`) — and whether the process is healthy (`/healthz`).
//!
//! A worker reports a step whenever it enters one and again as it makes progress inside it
//! (records polled or processed, a checkpoint closed, a restore's records read, one more retry
//! of a call to Kafka): two relaxed atomic stores, cheap enough for every loop round. A worker
//! is watched from its first report until it stops.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// Where a worker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    /// Not started, or stopped: not watched.
    Off = 0,
    /// Polling its partitions for records (explicitly idle when none come).
    Polling,
    /// Processing records (decoding, schema lookups, the join, sending outputs).
    Processing,
    /// Applying a rebalance: committing what is revoked, restoring what is assigned.
    Rebalancing,
    /// Reading a changelog back into the state.
    Restoring,
    /// Closing a checkpoint (state, changelog, offsets in one transaction).
    Checkpoint,
    /// Retrying a call Kafka could not answer (an outage: readiness says so).
    WaitingForKafka,
}

impl Step {
    const ALL: [Step; 7] = [
        Step::Off,
        Step::Polling,
        Step::Processing,
        Step::Rebalancing,
        Step::Restoring,
        Step::Checkpoint,
        Step::WaitingForKafka,
    ];

    /// The name logs and the `step` label use.
    pub fn name(self) -> &'static str {
        match self {
            Step::Off => "off",
            Step::Polling => "polling",
            Step::Processing => "processing",
            Step::Rebalancing => "rebalancing",
            Step::Restoring => "restoring",
            Step::Checkpoint => "checkpoint",
            Step::WaitingForKafka => "waiting for kafka",
        }
    }
}

/// One worker's last report.
pub(super) struct Progress {
    step: AtomicU8,
    /// When, in ms since `Health::epoch`.
    at_ms: AtomicU64,
}

/// Every worker's progress and the process's health.
pub(super) struct Health {
    epoch: Instant,
    workers: Vec<Progress>,
    healthy: AtomicBool,
}

impl Health {
    pub(super) fn new(workers: usize) -> Self {
        Health {
            epoch: Instant::now(),
            workers: (0..workers.max(1))
                .map(|_| Progress {
                    step: AtomicU8::new(Step::Off as u8),
                    at_ms: AtomicU64::new(0),
                })
                .collect(),
            healthy: AtomicBool::new(true),
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    pub(super) fn report(&self, w: usize, step: Step) {
        let p = &self.workers[w];
        p.at_ms.store(self.now_ms(), Ordering::Relaxed);
        p.step.store(step as u8, Ordering::Relaxed);
    }

    /// Worker `w`'s step and how long ago it last reported.
    pub(super) fn last(&self, w: usize) -> (Step, Duration) {
        let p = &self.workers[w];
        let step = Step::ALL[usize::from(p.step.load(Ordering::Relaxed)).min(Step::ALL.len() - 1)];
        let at = p.at_ms.load(Ordering::Relaxed);
        (
            step,
            Duration::from_millis(self.now_ms().saturating_sub(at)),
        )
    }

    pub(super) fn workers(&self) -> usize {
        self.workers.len()
    }

    pub(super) fn set_healthy(&self, healthy: bool) {
        self.healthy.store(healthy, Ordering::Relaxed);
    }

    pub(super) fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }
}
