//! `sidejoin run`: the Kafka runtime around the pipeline. `run` serves HTTP, prepares the plan
//! (`startup`), runs one processing loop per worker of the plan (`worker`, `SIDEJOIN_WORKERS`)
//! and one repartition router per repartitioned side (`router`), each on its own blocking
//! thread, and honours `shutdown` (SIGTERM/SIGINT in the binary) within
//! `SIDEJOIN_SHUTDOWN_TIMEOUT`. Everything is passed in; nothing is global.

mod broadcast;
mod dead_letter;
mod durable;
mod error;
mod faults;
mod input;
mod output;
mod probe;
pub mod processor;
mod router;
mod startup;
mod streams;
mod watchdog;
mod worker;
mod workers;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::metrics::Metrics;
use crate::store::Checkpointed;

pub use error::{RunError, StartupError};
pub use processor::{InRecord, JoinProcessor, PassthroughProcessor, Processor};
pub use worker::now_ms;

/// What sits between the consumer and the producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// The join over RocksDB state mirrored to changelog topics (`sidejoin run`).
    Join,
    /// The join with its state in memory only: nothing survives a restart (benchmarks).
    JoinInMemory,
    /// Every input record copied unchanged, by the same consumer, producer and commit code:
    /// the baseline sidejoin is benchmarked against.
    Passthrough,
}

/// Runs `config` against Kafka until `shutdown` is cancelled (then every worker drains,
/// commits and returns: `Ok`) or a worker or router fails (then the others drain and commit
/// too, and its error is returned). `metrics`, made for as many workers as the configuration
/// asks for, is served on `SIDEJOIN_HTTP_ADDR`.
pub async fn run(
    config: &Config,
    mode: RunMode,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    crate::kafka::native_heap::keep_freed_pages();
    let http_stop = CancellationToken::new();
    crate::http::serve(config.process.http_addr, metrics.clone(), http_stop.clone())
        .await
        .map_err(RunError::Http)?;
    let bound = Duration::from_millis(config.process.watchdog_timeout_ms.max(0) as u64);
    tokio::spawn(watchdog::watch(metrics.clone(), bound, http_stop.clone()));
    let timeout = Duration::from_millis(config.process.shutdown_timeout_ms.max(0) as u64);
    // Cancelled by `shutdown`, or by the first worker to fail.
    let stop = shutdown.child_token();
    let started = {
        let (cfg, token) = (config.clone(), stop.clone());
        tokio::task::spawn_blocking(move || startup::prepare(&cfg, mode, &token))
            .await
            .map_err(|e| RunError::Panicked(e.to_string()))
            .and_then(|r| r)
    };
    let running = match started {
        Ok(Some(started)) => spawn(config, started, &metrics, &stop),
        Ok(None) => JoinSet::new(),
        Err(e) => {
            http_stop.cancel();
            return Err(e);
        }
    };
    let result = join(running, &stop, timeout).await;
    http_stop.cancel();
    result
}

/// Starts every worker and router of the plan.
fn spawn(
    config: &Config,
    started: startup::Started,
    metrics: &Arc<Metrics>,
    stop: &CancellationToken,
) -> JoinSet<Result<(), RunError>> {
    match started {
        startup::Started::Durable(w) => spawn_workers(config, w, metrics, stop),
        startup::Started::Volatile(w) => spawn_workers(config, w, metrics, stop),
    }
}

fn spawn_workers<S: Checkpointed + Send + 'static>(
    config: &Config,
    workers: startup::Workers<S>,
    metrics: &Arc<Metrics>,
    stop: &CancellationToken,
) -> JoinSet<Result<(), RunError>> {
    let plan = Arc::new(workers.plan);
    let several = workers.each.len() > 1;
    let gate = Arc::new(workers::StartGate::new(workers.each.len()));
    let mut running = JoinSet::new();
    for (i, (mut processor, state)) in workers.each.into_iter().enumerate() {
        let (cfg, plan, gate) = (config.clone(), plan.clone(), gate.clone());
        let (m, token) = (metrics.worker(i), stop.clone());
        running.spawn_blocking(move || {
            let _span = several.then(|| tracing::info_span!("worker", i).entered());
            worker::run_blocking(worker::Job {
                cfg: &cfg,
                plan: &plan,
                me: &plan.workers[i],
                state,
                processor: processor.as_mut(),
                metrics: &m,
                gate: &gate,
                shutdown: &token,
            })
        });
    }
    for r in 0..plan.routers.len() {
        let (cfg, plan, m, token) = (config.clone(), plan.clone(), metrics.clone(), stop.clone());
        running.spawn_blocking(move || {
            let router = &plan.routers[r];
            let _span = tracing::info_span!("router", side = router.side.name()).entered();
            router::run_blocking(&cfg, router, m, &token)
        });
    }
    running
}

/// Waits for every task; once stopping, for at most `timeout`. Returns the first error.
async fn join(
    mut running: JoinSet<Result<(), RunError>>,
    stop: &CancellationToken,
    timeout: Duration,
) -> Result<(), RunError> {
    let mut first_error = None;
    // Once stopping: when every worker must have finished.
    let mut deadline = None;
    loop {
        let joined = match deadline {
            None => tokio::select! {
                r = running.join_next() => r,
                () = stop.cancelled() => {
                    deadline = Some(tokio::time::Instant::now() + timeout);
                    continue;
                }
            },
            Some(at) => match tokio::time::timeout_at(at, running.join_next()).await {
                Ok(r) => r,
                Err(_) => {
                    let late = RunError::ShutdownTimeout(timeout.as_millis() as i64);
                    return Err(first_error.unwrap_or(late));
                }
            },
        };
        let Some(joined) = joined else { break };
        let result = joined.map_err(|e| RunError::Panicked(e.to_string()));
        if let Err(e) = result.and_then(|r| r) {
            stop.cancel();
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}
