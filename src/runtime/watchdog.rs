//! The watchdog: a worker that reports no progress (`metrics::Step`) for longer than
//! `SIDEJOIN_WATCHDOG_TIMEOUT` is stuck — a call that never returns, a loop that spins without
//! moving. It is logged once with the step it is in, counted
//! (`sidejoin_watchdog_stalls_total{step}`), and `/healthz` answers 503 while it stays stuck, so
//! the liveness probe has Kubernetes restart the pod (the restart resumes from the last
//! checkpoint). A worker that moves again clears it.
//!
//! Waits that retry — a broker outage, unacknowledged output, a registry retried within its
//! budget — report each round as progress: they are alive and readiness already tells the
//! outage; restarting would not help. A checkpoint whose Kafka calls go unanswered for a few
//! seconds makes the instance not ready (it is refreshed here, every look) long before it
//! counts as stuck.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::{Metrics, Step};

/// Watches every worker of `metrics` until `stop`; `bound` zero: off.
pub(super) async fn watch(metrics: Arc<Metrics>, bound: Duration, stop: CancellationToken) {
    if bound.is_zero() {
        return;
    }
    let every = (bound / 10).clamp(Duration::from_millis(100), Duration::from_secs(1));
    let mut stuck = vec![false; metrics.workers()];
    let mut waiting = false;
    loop {
        tokio::select! {
            () = tokio::time::sleep(every) => {}
            () = stop.cancelled() => return,
        }
        look(&metrics, bound, &mut stuck);
        // Readiness also follows a checkpoint that Kafka leaves waiting (`Metrics::is_ready`).
        let now = metrics.refresh_ready();
        if now && !waiting {
            tracing::warn!("a checkpoint is waiting for Kafka: not ready until it completes");
        } else if !now && waiting {
            tracing::info!("checkpoints complete again");
        }
        waiting = now;
    }
}

/// One look at every worker: logs and counts the newly stuck, and sets health.
fn look(metrics: &Metrics, bound: Duration, stuck: &mut [bool]) {
    for (w, was) in stuck.iter_mut().enumerate() {
        let (step, since) = metrics.progress(w);
        let now = step != Step::Off && since > bound;
        if now && !*was {
            tracing::error!(
                "watchdog: worker {w} has made no progress for {:.1} s in step `{}` \
                 (SIDEJOIN_WATCHDOG_TIMEOUT={} s): /healthz fails until it moves, so Kubernetes restarts it",
                since.as_secs_f64(),
                step.name(),
                bound.as_secs_f64()
            );
            metrics.stalled(step);
        } else if !now && *was {
            tracing::info!("watchdog: worker {w} moves again (step `{}`)", step.name());
        }
        *was = now;
    }
    metrics.set_healthy(!stuck.iter().any(|s| *s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_without_progress_past_the_bound_fails_health_until_it_moves() {
        let metrics = Arc::new(Metrics::new(2));
        let (w0, w1) = (metrics.worker(0), metrics.worker(1));
        let bound = Duration::from_millis(50);
        let mut stuck = vec![false; 2];
        // Not started: not watched, however long.
        std::thread::sleep(Duration::from_millis(80));
        look(&metrics, bound, &mut stuck);
        assert!(metrics.is_healthy());
        w0.step(Step::Checkpoint);
        w1.step(Step::Polling);
        std::thread::sleep(Duration::from_millis(80));
        w1.step(Step::Polling);
        look(&metrics, bound, &mut stuck);
        assert_eq!(stuck, [true, false]);
        assert!(!metrics.is_healthy());
        let rendered = metrics.render();
        assert!(
            rendered.contains("sidejoin_watchdog_stalls_total{step=\"checkpoint\"} 1"),
            "{rendered}"
        );
        w0.step(Step::Polling);
        look(&metrics, bound, &mut stuck);
        assert!(metrics.is_healthy());
        w0.step(Step::Off);
        std::thread::sleep(Duration::from_millis(80));
        w1.step(Step::Polling);
        look(&metrics, bound, &mut stuck);
        assert!(metrics.is_healthy(), "a stopped worker is not watched");
    }
}
