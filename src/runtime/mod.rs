//! `sidejoin run`: the Kafka runtime around the pipeline. `run` serves HTTP, runs one processing
//! loop per worker (`SIDEJOIN_WORKERS`) on its own blocking thread, and honours `shutdown`
//! (SIGTERM/SIGINT in the binary) within `SIDEJOIN_SHUTDOWN_TIMEOUT`. Everything is passed in;
//! nothing is global.

mod broadcast;
mod durable;
mod input;
mod merge;
mod output;
mod probe;
pub mod processor;
mod repartition;
mod run_loop;
mod streams;
mod workers;

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::change::Side;
use crate::config::Config;
use crate::kafka::admin::StartupError;
use crate::metrics::Metrics;

pub use processor::{InRecord, JoinProcessor, PassthroughProcessor, Processor};
pub use repartition::join_config;
pub use run_loop::now_ms;
pub use workers::worker_configs;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Startup(#[from] StartupError),
    #[error("Kafka: {}", crate::kafka::redact(.0))]
    Kafka(#[from] rdkafka::error::KafkaError),
    #[error(
        "cannot decode the {side} record at topic {topic} partition {partition} offset {offset}: {error} \
         (SIDEJOIN_ON_ERROR=fail; the records before it are committed, a restart resumes at it)"
    )]
    Failed {
        topic: String,
        partition: i32,
        offset: i64,
        side: Side,
        error: String,
    },
    #[error(
        "the {side} record at topic {topic} partition {partition} offset {offset} is not co-partitioned: {why}; {fix} \
         (SIDEJOIN_ON_COPARTITION_VIOLATION=fail; the records before it are committed, a restart resumes at it)"
    )]
    Copartition {
        topic: String,
        partition: i32,
        offset: i64,
        side: Side,
        why: String,
        fix: String,
    },
    #[error(
        "an output record could not be delivered: {0}; nothing after the last commit is committed"
    )]
    Delivery(String),
    #[error("shutdown did not finish within SIDEJOIN_SHUTDOWN_TIMEOUT ({0} ms)")]
    ShutdownTimeout(i64),
    #[error("cannot serve HTTP on SIDEJOIN_HTTP_ADDR: {0}")]
    Http(std::io::Error),
    #[error("state: {0}")]
    State(String),
    /// The consumer can no longer work, e.g. fenced by another instance with the same
    /// `SIDEJOIN_INSTANCE_ID`.
    #[error("the consumer failed fatally: {0}")]
    ConsumerFatal(String),
    #[error("the processing thread panicked: {0}")]
    Panicked(String),
    /// A checkpoint transaction failed; `fatal`: the producer cannot go on (fenced).
    #[error("checkpoint transaction: {what}")]
    Transaction { fatal: bool, what: String },
    /// A checkpoint transaction was aborted: what it held is dropped and the partitions are
    /// restored from what was committed (handled by the run loop, never returned by `run`).
    #[error("checkpoint transaction aborted: {0}")]
    Aborted(String),
    /// Shutdown came while newly assigned partitions were being restored: nothing was
    /// processed since the revoke before it committed (handled by the run loop as a clean
    /// stop, never returned by `run`).
    #[error("stopped while restoring")]
    StoppedRestoring,
}

impl RunError {
    /// The process exit code: 2 for what the configuration must change (topics that do not
    /// exist or do not fit the join, a Kafka property librdkafka refuses), as for a
    /// configuration error; 1 for everything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Startup(
                StartupError::Topics(_)
                | StartupError::ClientConfig(_)
                | StartupError::Copartitioning(_),
            ) => 2,
            _ => 1,
        }
    }
}

impl From<crate::engine::state::StateError> for RunError {
    fn from(e: crate::engine::state::StateError) -> Self {
        RunError::State(e.0)
    }
}

/// Runs each worker, a configuration from `worker_configs` and the processor of its state,
/// against Kafka until `shutdown` is cancelled (then every worker drains, commits and returns:
/// `Ok`) or a worker fails (then the others drain and commit too, and its error is returned).
/// `config` is the instance's as the user gave it (the workers' are from `join_config`: the
/// repartitioned sides read their repartition topics, whose routers run here too); `metrics`,
/// made for as many workers, is served on `SIDEJOIN_HTTP_ADDR`.
pub async fn run(
    config: &Config,
    workers: Vec<(Config, Box<dyn Processor>)>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    let http_stop = CancellationToken::new();
    crate::http::serve(config.process.http_addr, metrics.clone(), http_stop.clone())
        .await
        .map_err(RunError::Http)?;
    let timeout = Duration::from_millis(config.process.shutdown_timeout_ms.max(0) as u64);
    // Cancelled by `shutdown`, or by the first worker to fail.
    let stop = shutdown.child_token();
    let planned = {
        let (cfg, token) = (config.clone(), stop.clone());
        tokio::task::spawn_blocking(move || repartition::prepare(&cfg, &token))
            .await
            .map_err(|e| RunError::Panicked(e.to_string()))
    };
    let planned = match planned.and_then(|r| r) {
        Ok(p) => p,
        Err(e) => {
            http_stop.cancel();
            return Err(e);
        }
    };
    let several = workers.len() > 1;
    let gate = Arc::new(workers::StartGate::new(workers.len()));
    let mut running = JoinSet::new();
    for (i, (cfg, mut processor)) in workers.into_iter().enumerate() {
        let (m, token, gate) = (metrics.worker(i), stop.clone(), gate.clone());
        running.spawn_blocking(move || {
            let _span = several.then(|| tracing::info_span!("worker", i).entered());
            run_loop::run_blocking(&cfg, processor.as_mut(), &m, &gate, &token)
        });
    }
    for (side, target) in planned {
        let (cfg, m, token) = (config.clone(), metrics.clone(), stop.clone());
        running.spawn_blocking(move || {
            let _span = tracing::info_span!("router", side = side.name()).entered();
            repartition::run_blocking(&cfg, side, target, m, &token)
        });
    }
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
                    http_stop.cancel();
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
    http_stop.cancel();
    first_error.map_or(Ok(()), Err)
}
