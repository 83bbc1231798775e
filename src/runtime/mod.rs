//! `sidejoin run`: the Kafka runtime around the pipeline. `run` serves HTTP, runs the processing
//! loop on a blocking thread, and honours `shutdown` (SIGTERM/SIGINT in the binary) within
//! `SIDEJOIN_SHUTDOWN_TIMEOUT`. Everything is passed in; nothing is global.

mod checkpoints;
mod output;
pub mod processor;
mod run_loop;

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::changelog::Side;
use crate::config::Config;
use crate::kafka::admin::StartupError;
use crate::metrics::Metrics;

pub use processor::{InRecord, JoinProcessor, PassthroughProcessor, Processor};
pub use run_loop::now_ms;

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
}

/// Runs `processor` against Kafka until `shutdown` is cancelled (then drains, commits and
/// returns `Ok`) or a fatal error. `metrics` is served on `SIDEJOIN_HTTP_ADDR`.
pub async fn run(
    config: Config,
    mut processor: Box<dyn Processor>,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> Result<(), RunError> {
    let http_stop = CancellationToken::new();
    crate::http::serve(config.process.http_addr, metrics.clone(), http_stop.clone())
        .await
        .map_err(RunError::Http)?;
    let timeout = Duration::from_millis(config.process.shutdown_timeout_ms.max(0) as u64);
    let token = shutdown.clone();
    let mut worker = tokio::task::spawn_blocking(move || {
        run_loop::run_blocking(&config, processor.as_mut(), &metrics, &token)
    });
    let joined = tokio::select! {
        r = &mut worker => r,
        () = shutdown.cancelled() => match tokio::time::timeout(timeout, &mut worker).await {
            Ok(r) => r,
            Err(_) => {
                http_stop.cancel();
                return Err(RunError::ShutdownTimeout(timeout.as_millis() as i64));
            }
        },
    };
    http_stop.cancel();
    joined.map_err(|e| RunError::Panicked(e.to_string()))?
}
