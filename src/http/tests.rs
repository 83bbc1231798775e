//! The endpoint's limits and `/healthz`, over real TCP connections.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use super::*;

/// A server with `limits` on a free port of 127.0.0.1.
async fn server(limits: Limits) -> (SocketAddr, Arc<Metrics>, CancellationToken) {
    let metrics = Arc::new(Metrics::new(1));
    let stop = CancellationToken::new();
    let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let addr = serve_with(any, metrics.clone(), limits, stop.clone())
        .await
        .unwrap();
    (addr, metrics, stop)
}

/// The status line's code of `GET path` on a new connection.
fn get(addr: SocketAddr, path: &str) -> u16 {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    text.split(' ').nth(1).unwrap_or("0").parse().unwrap()
}

/// Whether the server closed `s` (read returns end of stream, or a reset) within a generous bound.
fn closed(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut buf = [0u8; 64];
    matches!(s.read(&mut buf), Ok(0) | Err(_))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthz_fails_while_a_worker_is_stuck() {
    let (addr, metrics, stop) = server(LIMITS).await;
    let ok = tokio::task::spawn_blocking(move || get(addr, "/healthz"));
    assert_eq!(ok.await.unwrap(), 200);
    metrics.set_healthy(false);
    let stuck = tokio::task::spawn_blocking(move || get(addr, "/healthz"));
    assert_eq!(stuck.await.unwrap(), 503);
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_finish_its_headers_is_cut_off() {
    let limits = Limits {
        connections: 4,
        header_read: Duration::from_millis(300),
    };
    let (addr, _, stop) = server(limits).await;
    let took = tokio::task::spawn_blocking(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n").unwrap();
        let started = Instant::now();
        assert!(closed(&mut s), "a slow client keeps its connection");
        started.elapsed()
    });
    let took = took.await.unwrap();
    assert!(took < Duration::from_secs(10), "closed after {took:?}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_limit_are_closed_at_once() {
    let limits = Limits {
        connections: 2,
        header_read: Duration::from_secs(30),
    };
    let (addr, _, stop) = server(limits).await;
    tokio::task::spawn_blocking(move || {
        let held: Vec<TcpStream> = (0..2).map(|_| TcpStream::connect(addr).unwrap()).collect();
        // The accept loop takes them in order: give it a moment to hold both slots.
        std::thread::sleep(Duration::from_millis(200));
        let mut third = TcpStream::connect(addr).unwrap();
        assert!(closed(&mut third), "a third connection is served");
        drop(held);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(get(addr, "/healthz"), 200, "a slot is free again");
    })
    .await
    .unwrap();
    stop.cancel();
}
