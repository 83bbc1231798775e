//! Output-topic measurements for the Kafka benchmark (`scripts/bench-kafka.sh`), the same for
//! sidejoin and its Flink peer:
//!
//!     topic_span span BOOTSTRAP TOPIC
//!         Reads every partition of TOPIC from the beginning to its end and prints
//!         `records=N tombstones=D first_ms=T0 last_ms=T1 timestamp_type=LogAppendTime` (min and
//!         max record timestamp; with `message.timestamp.type=LogAppendTime` these are the
//!         broker's append times, so the client's clock and start-up drop out).
//!
//!     topic_span watch BOOTSTRAP TOPIC QUIET_MS TIMEOUT_S PID [GATE_FILE]
//!         Polls the end offsets of TOPIC every 50 ms until they are > 0, GATE_FILE exists (the
//!         caller creates it once PID has consumed all its input) and the offsets have not changed
//!         for QUIET_MS (quiescence); then prints
//!         `end=N cpu_s_first_output=C first_output_s=F last_growth_s=S`: C is the CPU seconds
//!         (utime+stime, children included) of PID when the first output record was seen, F and S
//!         the seconds from the start of the watch to the first output and to the last growth.
//!         Exits 1 if PID dies or TIMEOUT_S passes first.
//!
//!     topic_span compare BOOTSTRAP TOPIC_A TOPIC_B
//!         Folds each topic as an upsert table (key -> last value, a null value deletes the key;
//!         partitions are independent and a key lives in one) and compares the two final tables,
//!         rows as JSON objects with a null field the same as a missing one. Prints
//!         `agree rows=N` or `differ rows_a=.. rows_b=.. only_a=.. only_b=.. different=..` and up
//!         to 3 examples; exits 0 either way (3 on a difference, so callers can tell).

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, Timestamp};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientConfig;
use serde_json::Value;

const TIMEOUT: Duration = Duration::from_secs(10);

fn consumer(bootstrap: &str) -> BaseConsumer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "sidejoin-topic-span")
        .set("enable.auto.commit", "false")
        .set("enable.partition.eof", "true")
        .set("fetch.max.bytes", "52428800")
        .create()
        .expect("consumer")
}

fn partitions(c: &BaseConsumer, topic: &str) -> Vec<i32> {
    let md = c
        .fetch_metadata(Some(topic), TIMEOUT)
        .expect("topic metadata");
    let t = md
        .topics()
        .iter()
        .find(|t| t.name() == topic)
        .expect("topic in metadata");
    assert!(t.error().is_none(), "topic {topic}: {:?}", t.error());
    t.partitions().iter().map(|p| p.id()).collect()
}

/// Calls `f` with every record of every partition of `topic`, from the beginning to the end
/// offsets at the time of the call.
fn read_all(bootstrap: &str, topic: &str, mut f: impl FnMut(&rdkafka::message::BorrowedMessage)) {
    let c = consumer(bootstrap);
    let parts = partitions(&c, topic);
    let mut tpl = TopicPartitionList::new();
    let mut open = 0;
    for &p in &parts {
        let (low, high) = c.fetch_watermarks(topic, p, TIMEOUT).expect("watermarks");
        if high > low {
            tpl.add_partition_offset(topic, p, Offset::Beginning)
                .expect("partition");
            open += 1;
        }
    }
    if open == 0 {
        return;
    }
    c.assign(&tpl).expect("assign");
    let mut last_progress = Instant::now();
    while open > 0 {
        match c.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                f(&m);
                last_progress = Instant::now();
            }
            Some(Err(KafkaError::PartitionEOF(_))) => open -= 1,
            Some(Err(e)) => panic!("reading {topic}: {e}"),
            None => assert!(
                last_progress.elapsed() < Duration::from_secs(60),
                "reading {topic}: no progress for 60 s"
            ),
        }
    }
}

fn span(bootstrap: &str, topic: &str) {
    let (mut n, mut tombstones, mut first, mut last) = (0u64, 0u64, i64::MAX, i64::MIN);
    let mut kinds = BTreeMap::new();
    read_all(bootstrap, topic, |m| {
        n += 1;
        tombstones += m.payload().is_none() as u64;
        let (kind, ts) = match m.timestamp() {
            Timestamp::LogAppendTime(t) => ("LogAppendTime", t),
            Timestamp::CreateTime(t) => ("CreateTime", t),
            Timestamp::NotAvailable => ("none", 0),
        };
        *kinds.entry(kind).or_insert(0u64) += 1;
        first = first.min(ts);
        last = last.max(ts);
    });
    if n == 0 {
        (first, last) = (0, 0);
    }
    let kinds: Vec<String> = kinds.keys().map(|k| k.to_string()).collect();
    println!(
        "records={n} tombstones={tombstones} first_ms={first} last_ms={last} timestamp_type={}",
        if kinds.is_empty() {
            "none".to_string()
        } else {
            kinds.join("+")
        }
    );
}

/// utime + stime + cutime + cstime of `pid` in seconds, or None once it is gone.
fn cpu_seconds(pid: &str, ticks: f64) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // f[0] is field 3 (state); utime..cstime are fields 14..17.
    if f.first() == Some(&"Z") {
        return None;
    }
    let sum: f64 = f[11..15]
        .iter()
        .map(|v| v.parse::<f64>().unwrap_or(0.0))
        .sum();
    Some(sum / ticks)
}

fn watch(
    bootstrap: &str,
    topic: &str,
    quiet_ms: u64,
    timeout_s: u64,
    pid: &str,
    gate: Option<&str>,
) {
    let ticks: f64 = std::env::var("CLK_TCK")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100.0);
    let c = consumer(bootstrap);
    let parts = partitions(&c, topic);
    let started = Instant::now();
    let (mut end, mut changed, mut cpu_first) = (0i64, Instant::now(), None::<f64>);
    let mut first_output = Duration::ZERO;
    loop {
        let mut total = 0;
        for &p in &parts {
            match c.fetch_watermarks(topic, p, TIMEOUT) {
                Ok((_, high)) => total += high,
                Err(KafkaError::MetadataFetch(RDKafkaErrorCode::OperationTimedOut)) => {
                    total = end; // a slow broker under load: no news
                    break;
                }
                Err(e) => panic!("watermarks of {topic}/{p}: {e}"),
            }
        }
        let cpu = cpu_seconds(pid, ticks);
        if total != end {
            if end == 0 && cpu_first.is_none() {
                cpu_first = cpu;
                first_output = started.elapsed();
            }
            end = total;
            changed = Instant::now();
        }
        let open = gate.is_none_or(|g| std::path::Path::new(g).exists());
        if end > 0 && open && changed.elapsed() >= Duration::from_millis(quiet_ms) {
            println!(
                "end={end} cpu_s_first_output={:.2} first_output_s={:.1} last_growth_s={:.1}",
                cpu_first.unwrap_or(0.0),
                first_output.as_secs_f64(),
                (changed - started).as_secs_f64()
            );
            return;
        }
        if cpu.is_none() {
            eprintln!("topic_span watch: process {pid} is gone (output end offset {end})");
            std::process::exit(1);
        }
        if started.elapsed() > Duration::from_secs(timeout_s) {
            eprintln!("topic_span watch: no quiescence of {topic} within {timeout_s} s (end offset {end})");
            std::process::exit(1);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Objects with sorted keys and without null fields (a missing field and a null one are the
/// same row), recursively.
fn normalize(v: Value) -> Value {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<String, Value> = m
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, normalize(v)))
                .collect();
            Value::Object(sorted.into_iter().collect())
        }
        Value::Array(a) => Value::Array(a.into_iter().map(normalize).collect()),
        other => other,
    }
}

fn parse(bytes: Option<&[u8]>) -> Option<Value> {
    let b = bytes?;
    Some(normalize(serde_json::from_slice(b).unwrap_or_else(|_| {
        Value::String(String::from_utf8_lossy(b).into_owned())
    })))
}

fn fold(bootstrap: &str, topic: &str) -> (HashMap<String, Value>, u64) {
    let mut table = HashMap::new();
    let mut n = 0;
    read_all(bootstrap, topic, |m| {
        n += 1;
        let key = parse(m.key()).map_or("null".to_string(), |k| k.to_string());
        match parse(m.payload()) {
            Some(v) => {
                table.insert(key, v);
            }
            None => {
                table.remove(&key);
            }
        }
    });
    (table, n)
}

fn compare(bootstrap: &str, a: &str, b: &str) -> bool {
    let (ta, _) = fold(bootstrap, a);
    let (tb, _) = fold(bootstrap, b);
    let mut examples = Vec::new();
    let (mut only_a, mut only_b, mut different) = (0, 0, 0);
    for (k, va) in &ta {
        match tb.get(k) {
            None => {
                only_a += 1;
                if examples.len() < 3 {
                    examples.push(format!("  key {k}: {a} has {va}, {b} has none"));
                }
            }
            Some(vb) if vb != va => {
                different += 1;
                if examples.len() < 3 {
                    examples.push(format!("  key {k}: {a} has {va}, {b} has {vb}"));
                }
            }
            Some(_) => {}
        }
    }
    for (k, vb) in &tb {
        if !ta.contains_key(k) {
            only_b += 1;
            if examples.len() < 3 {
                examples.push(format!("  key {k}: {a} has none, {b} has {vb}"));
            }
        }
    }
    if only_a + only_b + different == 0 {
        println!("agree rows={}", ta.len());
        true
    } else {
        println!(
            "differ rows_a={} rows_b={} only_a={only_a} only_b={only_b} different={different}",
            ta.len(),
            tb.len()
        );
        for e in examples {
            println!("{e}");
        }
        false
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a[..] {
        ["span", bootstrap, topic] => span(bootstrap, topic),
        ["watch", bootstrap, topic, quiet_ms, timeout_s, pid, ref gate @ ..] if gate.len() <= 1 => {
            watch(
                bootstrap,
                topic,
                quiet_ms.parse().expect("QUIET_MS"),
                timeout_s.parse().expect("TIMEOUT_S"),
                pid,
                gate.first().copied(),
            )
        }
        ["compare", bootstrap, ta, tb] => {
            if !compare(bootstrap, ta, tb) {
                std::process::exit(3);
            }
        }
        _ => {
            eprintln!(
                "usage: topic_span span BOOTSTRAP TOPIC\n       \
                 topic_span watch BOOTSTRAP TOPIC QUIET_MS TIMEOUT_S PID [GATE_FILE]\n       \
                 topic_span compare BOOTSTRAP TOPIC_A TOPIC_B"
            );
            std::process::exit(2);
        }
    }
}
