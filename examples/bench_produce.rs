//! Fills two topics for the Kafka benchmark (`scripts/bench-kafka.sh`): `N` records alternating
//! between LEFT and RIGHT, keyed by `{"id":…}` over `KEYS` keys (left in order, right
//! scattered), 5-column JSON values.
//!
//!     bench_produce BOOTSTRAP LEFT RIGHT N KEYS

use std::time::{Duration, Instant};

use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::ClientConfig;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, bootstrap, left, right, n, keys] = &args[..] else {
        eprintln!("usage: bench_produce BOOTSTRAP LEFT RIGHT N KEYS");
        std::process::exit(2);
    };
    let (n, keys): (u64, u64) = (n.parse().unwrap(), keys.parse().unwrap());
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("compression.type", "lz4")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .expect("producer");
    let started = Instant::now();
    // Record i is stamped t0 + i ms, ending now: brokers refuse times over an hour ahead.
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - n as i64;
    let mut pending = Vec::with_capacity(100_000);
    for i in 0..n {
        let (left_side, id, value) = record_for(i, keys, t0);
        let topic = if left_side { left } else { right };
        let key = format!("{{\"id\":{id}}}");
        let record = FutureRecord::to(topic.as_str())
            .key(&key)
            .payload(&value)
            .timestamp(t0 + i as i64);
        let delivery = send(&producer, record);
        pending.push(delivery);
        if pending.len() == 100_000 {
            for r in futures::executor::block_on(futures::future::join_all(pending.drain(..))) {
                r.expect("delivery").expect("delivered");
            }
        }
    }
    for r in futures::executor::block_on(futures::future::join_all(pending)) {
        r.expect("delivery").expect("delivered");
    }
    eprintln!(
        "produced {n} records in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// Record `i`: whether it goes to LEFT, its id and its JSON value. Left rows walk the keys in
/// order, right rows in a scattered order (a multiplicative permutation), so a right row meets a
/// left row written at a random earlier time and lookups spread over the whole state, as they do
/// in real traffic.
fn record_for(i: u64, keys: u64, t0: i64) -> (bool, u64, String) {
    let step = i / 2;
    if i % 2 == 0 {
        let id = step % keys;
        let city = ["paris", "lima", "oslo", "pune"][(id % 4) as usize];
        let value = format!(
            "{{\"id\":{id},\"name\":\"user-{id}\",\"city\":\"{city}\",\"age\":{},\"ts\":{}}}",
            20 + id % 50,
            t0 + i as i64
        );
        (true, id, value)
    } else {
        let id = (step.wrapping_mul(1_000_003) + 12_345) % keys;
        let value = format!(
            "{{\"id\":{id},\"score\":{},\"level\":{},\"tag\":\"t{}\",\"ts\":{}}}",
            (id * 7 + i) % 1000,
            id % 10,
            id % 100,
            t0 + i as i64
        );
        (false, id, value)
    }
}

/// Queues `record`: send_result copies it into librdkafka's queue; retried while the queue is full.
fn send(producer: &FutureProducer, mut record: FutureRecord<'_, String, String>) -> DeliveryFuture {
    loop {
        match producer.send_result(record) {
            Ok(d) => return d,
            Err((_, back)) => {
                record = back;
                std::thread::sleep(Duration::from_millis(5));
            }
        }
    }
}
