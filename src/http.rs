//! The HTTP edge: `/metrics` (Prometheus text), `/healthz` (the process is alive) and `/readyz`
//! (assigned partitions are restored and being processed).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::metrics::Metrics;

async fn metrics(State(m): State<Arc<Metrics>>) -> ([(&'static str, &'static str); 1], String) {
    ([("content-type", "text/plain; version=0.0.4")], m.render())
}

async fn healthz() -> &'static str {
    "ok\n"
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

/// Binds `addr` (port 0 picks a free port), logs the address and serves until `shutdown`.
pub(crate) async fn serve(
    addr: SocketAddr,
    metrics: Arc<Metrics>,
    shutdown: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    tracing::info!(addr = %local, "http listening on {local} (/metrics, /healthz, /readyz)");
    tokio::spawn(async move {
        let served = axum::serve(listener, router(metrics))
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::error!("http server stopped: {e}");
        }
    });
    Ok(local)
}
