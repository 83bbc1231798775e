//! The process settings (HTTP address, state directory and caches, workers, logging, error
//! handling) validated into a `ProcessSpec`.

use std::net::SocketAddr;

use crate::error::Problems;
use crate::raw::RawConfig;
use crate::values::{parse_enum, parse_positive};
use crate::{duration, opt, ConfigError, LogFormat, OnError, OnViolation, ProcessSpec};

/// The process settings among `raw`.
pub(crate) fn process_spec(p: &mut Problems, raw: &RawConfig) -> ProcessSpec {
    ProcessSpec {
        http_addr: http_addr(p, raw),
        state_dir: raw
            .state_dir
            .clone()
            .unwrap_or_else(|| "./sidejoin-state".to_owned())
            .into(),
        state_block_cache_mb: opt(p, &raw.state_block_cache_mb, |v| {
            parse_positive("SIDEJOIN_STATE_BLOCK_CACHE_MB", v)
        })
        .unwrap_or(128),
        state_cache_mb: opt(p, &raw.state_cache_mb, |v| {
            parse_positive("SIDEJOIN_STATE_CACHE_MB", v)
        })
        .unwrap_or(128),
        state_write_buffer_mb: opt(p, &raw.state_write_buffer_mb, |v| {
            parse_positive("SIDEJOIN_STATE_WRITE_BUFFER_MB", v)
        })
        .unwrap_or(64),
        log_format: opt(p, &raw.log_format, |v| {
            parse_enum(
                "SIDEJOIN_LOG_FORMAT",
                v,
                &[("text", LogFormat::Text), ("json", LogFormat::Json)],
            )
        })
        .unwrap_or(LogFormat::Text),
        shutdown_timeout_ms: duration(p, "SHUTDOWN_TIMEOUT", &raw.shutdown_timeout, 30_000),
        watchdog_timeout_ms: duration(p, "WATCHDOG_TIMEOUT", &raw.watchdog_timeout, 30_000),
        workers: opt(p, &raw.workers, parse_workers).unwrap_or_else(default_workers),
        on_error: opt(p, &raw.on_error, |v| {
            parse_enum(
                "SIDEJOIN_ON_ERROR",
                v,
                &[
                    ("dlq", OnError::Dlq),
                    ("fail", OnError::Fail),
                    ("skip", OnError::Skip),
                ],
            )
        })
        .unwrap_or(OnError::Dlq),
        on_copartition_violation: opt(p, &raw.on_copartition_violation, |v| {
            parse_enum(
                "SIDEJOIN_ON_COPARTITION_VIOLATION",
                v,
                &[("warn", OnViolation::Warn), ("fail", OnViolation::Fail)],
            )
        })
        .unwrap_or(OnViolation::Warn),
    }
}

fn http_addr(p: &mut Problems, raw: &RawConfig) -> SocketAddr {
    let default: SocketAddr = "0.0.0.0:9464".parse().expect("valid literal address");
    opt(p, &raw.http_addr, |v| {
        v.trim().parse::<SocketAddr>().map_err(|_| {
            ConfigError::new(
                "SIDEJOIN_HTTP_ADDR",
                Some(v),
                "expected host:port, e.g. 0.0.0.0:9464 (port 0 picks a free port)",
            )
        })
    })
    .unwrap_or(default)
}

/// The most worker threads one instance runs.
const MAX_WORKERS: usize = 256;

/// `SIDEJOIN_WORKERS`: 1 to `MAX_WORKERS`.
fn parse_workers(v: &str) -> Result<usize, ConfigError> {
    let n = parse_positive("SIDEJOIN_WORKERS", v)?;
    if n > MAX_WORKERS {
        return Err(ConfigError::new(
            "SIDEJOIN_WORKERS",
            Some(v),
            format!("expected at most {MAX_WORKERS} worker threads"),
        ));
    }
    Ok(n)
}

/// The default `SIDEJOIN_WORKERS`: the cores available to the process.
fn default_workers() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(MAX_WORKERS)
}
