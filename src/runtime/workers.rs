//! `SIDEJOIN_WORKERS` (SPEC §6): the partitions an instance owns are spread over worker
//! threads, as Kafka Streams' stream threads (the plan's `WorkerPlan`s). Each worker is exactly
//! one instance of before: its own group consumer (in the same group), producers, restore
//! consumer, engine and state. Partitions moving between workers are restored from the
//! changelog like partitions moving between instances. This module holds their start gate.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// Holds each worker back, once its startup is done, until every worker is ready to join the
/// group: joined together they cause one rebalance, where joining one by one causes one each,
/// and each revokes what the workers already in the group process (aborting their checkpoints).
pub(super) struct StartGate {
    workers: usize,
    arrived: AtomicUsize,
}

impl StartGate {
    pub(super) fn new(workers: usize) -> Self {
        StartGate {
            workers,
            arrived: AtomicUsize::new(0),
        }
    }

    /// Returns once every worker has arrived, or `stop` is cancelled (a worker that fails
    /// before arriving cancels it: nobody waits for it).
    pub(super) fn arrive(&self, stop: &CancellationToken) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        while self.arrived.load(Ordering::SeqCst) < self.workers && !stop.is_cancelled() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_opens_when_every_worker_arrived_or_on_stop() {
        let gate = std::sync::Arc::new(StartGate::new(2));
        let stop = CancellationToken::new();
        let (g, s) = (gate.clone(), stop.clone());
        let first = std::thread::spawn(move || g.arrive(&s));
        gate.arrive(&stop);
        first.join().unwrap();
        let lonely = StartGate::new(2);
        stop.cancel();
        lonely.arrive(&stop);
    }
}
