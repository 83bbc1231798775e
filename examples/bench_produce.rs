//! Fills the topics of the Kafka benchmark (`scripts/bench-kafka.sh`).
//!
//!     bench_produce BOOTSTRAP LEFT RIGHT N KEYS
//!         The two-way join: `N` records alternating between LEFT and RIGHT, keyed by `{"id":…}`
//!         over `KEYS` keys (left in order, right scattered), 5-column JSON values.
//!
//!     bench_produce star BOOTSTRAP FACT DIM1 DIM2 N KEYS DIM_ROWS
//!         The star join: first DIM1 and DIM2, `DIM_ROWS` rows each, one per primary key
//!         (`{"id1":…}`, `{"id2":…}`, 4-column JSON values; a dim1 row's `region` is a dim2 key),
//!         then FACT, `N` rows over `KEYS` fact ids (`{"id":…}`, in order, so each id is
//!         updated N / KEYS times), each row's lookup columns `d1` and `d2` scattered over the
//!         dimension keys and changing with every update. Timestamps follow that order.

use std::time::{Duration, Instant};

use rdkafka::producer::{DeliveryFuture, FutureProducer, FutureRecord};
use rdkafka::ClientConfig;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (bootstrap, n, records): (&String, u64, Box<dyn Iterator<Item = Record>>) = match &args[1..]
    {
        [command, bootstrap, fact, dim1, dim2, n, keys, dims] if command == "star" => {
            let (n, keys, dims) = (number(n), number(keys), number(dims));
            let topics = [fact.clone(), dim1.clone(), dim2.clone()];
            (bootstrap, n + 2 * dims, star(topics, n, keys, dims))
        }
        [bootstrap, left, right, n, keys] => {
            let (n, keys) = (number(n), number(keys));
            (
                bootstrap,
                n,
                two_way([left.clone(), right.clone()], n, keys),
            )
        }
        _ => {
            eprintln!(
                "usage: bench_produce BOOTSTRAP LEFT RIGHT N KEYS\n       \
                 bench_produce star BOOTSTRAP FACT DIM1 DIM2 N KEYS DIM_ROWS"
            );
            std::process::exit(2);
        }
    };
    let started = Instant::now();
    produce(bootstrap, records);
    eprintln!(
        "produced {n} records in {:.1}s",
        started.elapsed().as_secs_f64()
    );
}

/// The two-way workload's `n` records over `keys` keys, alternating between `left` and `right`.
fn two_way([left, right]: [String; 2], n: u64, keys: u64) -> Box<dyn Iterator<Item = Record>> {
    let t0 = start_ms(n);
    Box::new((0..n).map(move |i| {
        let (left_side, id, value) = record_for(i, keys, t0);
        let topic = if left_side { &left } else { &right };
        let key = format!("{{\"id\":{id}}}");
        (topic.clone(), (key, value, t0 + i as i64))
    }))
}

/// The star workload: both dimensions' `dims` rows, then `n` fact rows over `keys` ids.
fn star(
    [fact, dim1, dim2]: [String; 3],
    n: u64,
    keys: u64,
    dims: u64,
) -> Box<dyn Iterator<Item = Record>> {
    let total = n + 2 * dims;
    let t0 = start_ms(total);
    Box::new((0..total).map(move |i| {
        let t = t0 + i as i64;
        if i < dims {
            (dim1.clone(), dim1_record(i, dims, t))
        } else if i < 2 * dims {
            (dim2.clone(), dim2_record(i - dims, t))
        } else {
            (fact.clone(), fact_record(i - 2 * dims, keys, dims, t))
        }
    }))
}

/// Writes `records` and waits until every one is acknowledged.
fn produce(bootstrap: &str, records: impl Iterator<Item = Record>) {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("linger.ms", "20")
        .set("batch.size", "1000000")
        .set("compression.type", "lz4")
        .set("queue.buffering.max.messages", "1000000")
        .create()
        .expect("producer");
    let mut pending = Vec::with_capacity(100_000);
    for (topic, (key, value, timestamp)) in records {
        let record = FutureRecord::to(topic.as_str())
            .key(&key)
            .payload(&value)
            .timestamp(timestamp);
        pending.push(send(&producer, record));
        if pending.len() == 100_000 {
            for r in futures::executor::block_on(futures::future::join_all(pending.drain(..))) {
                r.expect("delivery").expect("delivered");
            }
        }
    }
    for r in futures::executor::block_on(futures::future::join_all(pending)) {
        r.expect("delivery").expect("delivered");
    }
}

/// A record to write: its topic, and its key, value and timestamp.
type Record = (String, (String, String, i64));

/// A count argument: a positive integer.
fn number(arg: &str) -> u64 {
    match arg.parse() {
        Ok(n) if n > 0 => n,
        _ => {
            eprintln!("bench_produce: not a positive count: {arg}");
            std::process::exit(2);
        }
    }
}

/// The timestamp of the first of `n` records stamped 1 ms apart and ending now: brokers refuse
/// times over an hour ahead.
fn start_ms(n: u64) -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
        - n as i64
}

/// Dimension 1 row `k` of `dims`: key, value (`region` is a dimension 2 key) and timestamp.
fn dim1_record(k: u64, dims: u64, t: i64) -> (String, String, i64) {
    let region = (k.wrapping_mul(7_919) + 13) % dims;
    let value = format!("{{\"id1\":{k},\"name1\":\"brand-{k}\",\"region\":{region},\"ts1\":{t}}}");
    (format!("{{\"id1\":{k}}}"), value, t)
}

/// Dimension 2 row `k`: key, value and timestamp.
fn dim2_record(k: u64, t: i64) -> (String, String, i64) {
    let value = format!(
        "{{\"id2\":{k},\"name2\":\"store-{k}\",\"tier\":{},\"ts2\":{t}}}",
        k % 5
    );
    (format!("{{\"id2\":{k}}}"), value, t)
}

/// Fact row `i`: fact id `i % keys` (walked in order, so every id is updated in turn), its
/// lookup columns scattered over the `dims` dimension keys by two multiplicative hashes of `i`
/// (an update usually moves the row to other dimension rows).
fn fact_record(i: u64, keys: u64, dims: u64, t: i64) -> (String, String, i64) {
    let id = i % keys;
    let d1 = (i.wrapping_mul(1_000_003) + 12_345) % dims;
    let d2 = (i.wrapping_mul(2_654_435_761) >> 7) % dims;
    let value = format!(
        "{{\"id\":{id},\"d1\":{d1},\"d2\":{d2},\"qty\":{},\"amount\":{},\"ts\":{t}}}",
        1 + i % 9,
        (i * 37) % 10_000
    );
    (format!("{{\"id\":{id}}}"), value, t)
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
