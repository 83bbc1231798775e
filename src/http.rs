//! The HTTP edge: `/metrics` (Prometheus text), `/healthz` (the process is alive: no worker is
//! stuck, `runtime::watchdog`) and `/readyz` (assigned partitions are restored and being
//! processed).
//!
//! Limits, so that a slow or misbehaving client cannot hold the endpoint the probes need: at
//! most `Limits::connections` connections at once (more are closed at accept), a request's
//! headers within `Limits::header_read` (else the connection is closed) and at most
//! `MAX_HEADER_BYTES` of them; HTTP/1.1 only (probes and Prometheus).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

async fn metrics(State(m): State<Arc<Metrics>>) -> ([(&'static str, &'static str); 1], String) {
    ([("content-type", "text/plain; version=0.0.4")], m.render())
}

async fn healthz(State(m): State<Arc<Metrics>>) -> (StatusCode, &'static str) {
    if m.is_healthy() {
        (StatusCode::OK, "ok\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "stalled\n")
    }
}

async fn readyz(State(m): State<Arc<Metrics>>) -> (StatusCode, &'static str) {
    if m.is_ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not ready\n")
    }
}

pub(crate) fn router(metrics: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(self::metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(metrics)
}

/// The most header bytes a request may send (hyper's smallest buffer).
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// How much of the endpoint a client may take.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Connections served at once.
    pub connections: usize,
    /// The time a request's headers may take to arrive (also an idle keep-alive connection's).
    pub header_read: Duration,
}

/// The endpoint's limits: a probe, a scrape or two and a person with curl need a handful of
/// connections; a probe's `timeoutSeconds` is a few seconds.
pub(crate) const LIMITS: Limits = Limits {
    connections: 32,
    header_read: Duration::from_secs(5),
};

/// Binds `addr` (port 0 picks a free port), logs the address and serves until `shutdown`.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    serve_with(addr, metrics, LIMITS, shutdown).await
}

/// `serve` with `limits`.
pub(crate) async fn serve_with(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    limits: Limits,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "http listening on {local} (/metrics, /healthz, /readyz)");
    tokio::spawn(accept(listener, router(metrics), limits, shutdown));
    Ok(local)
}

/// Accepts connections until `shutdown`, each served on its own task within `limits`.
async fn accept(listener: TcpListener, app: Router, limits: Limits, shutdown: CancellationToken) {
    let slots = Arc::new(Semaphore::new(limits.connections));
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, say: wait rather than spin.
                    tracing::warn!("http: accepting a connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = shutdown.cancelled() => return,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            // Over the limit: closed at once (dropped).
            continue;
        };
        let service = TowerToHyperService::new(app.clone());
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let mut builder = http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_read)
                .max_buf_size(MAX_HEADER_BYTES);
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            let mut conn = std::pin::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
            drop(slot);
        });
    }
}

#[cfg(test)]
mod tests;
