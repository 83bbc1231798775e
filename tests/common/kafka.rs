//! Helpers for tests against the real Kafka broker that `scripts/test.sh` starts
//! (`TEST_KAFKA_BOOTSTRAP`): unique topics, producing and reading records, committed offsets,
//! and a `sidejoin` process under test with its logs and `/metrics`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

// Where the tests have always found them; not every tier uses each.
#[allow(unused_imports)]
pub(crate) use super::join_env::{base_env, undeclared, with};

pub(crate) use super::process::Sidejoin;

/// Now, in epoch milliseconds. Test records carry recent timestamps: the broker's time-based
/// retention would delete records stamped decades ago.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The broker of this test run.
pub(crate) fn bootstrap() -> String {
    std::env::var("TEST_KAFKA_BOOTSTRAP").expect(
        "TEST_KAFKA_BOOTSTRAP is not set: run the Kafka tests through scripts/test.sh, which starts a local broker",
    )
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A name no other test (or earlier run) uses.
pub(crate) fn unique(prefix: &str) -> String {
    let n = COUNTER.fetch_add(1, Ordering::SeqCst);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    format!("{prefix}-{}-{t}-{n}", std::process::id())
}

pub(crate) fn create_topic(name: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .create()
        .unwrap();
    let topic = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    let res =
        futures::executor::block_on(admin.create_topics([&topic], &AdminOptions::new())).unwrap();
    for r in res {
        r.unwrap_or_else(|(t, e)| panic!("create topic {t}: {e}"));
    }
    // The broker answers before every metadata request sees the topic; a test that starts
    // sidejoin next must find it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while partition_count(name) != partitions {
        assert!(Instant::now() < deadline, "topic {name} not visible");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The tests' producer: idempotent, so a retry (a broker just restarted answers `NotLeader`
/// for a while) neither reorders nor repeats records — replay compares against their order.
pub(crate) fn producer() -> FutureProducer {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("linger.ms", "0")
        .set("enable.idempotence", "true")
        .create()
        .unwrap()
}

/// Produces one record and waits for it; returns (partition, offset).
pub(crate) fn produce(
    p: &FutureProducer,
    topic: &str,
    key: Option<&str>,
    value: Option<&str>,
    timestamp: i64,
) -> (i32, i64) {
    let mut r: FutureRecord<'_, str, str> = FutureRecord::to(topic).timestamp(timestamp);
    if let Some(k) = key {
        r = r.key(k);
    }
    if let Some(v) = value {
        r = r.payload(v);
    }
    let d = futures::executor::block_on(p.send(r, Duration::from_secs(10)))
        .unwrap_or_else(|(e, _)| panic!("produce to {topic} at timestamp {timestamp}: {e}"));
    (d.partition, d.offset)
}

/// Produces many records at once, then waits for all of them: `(topic, key, value, timestamp)`,
/// key and value as text or raw bytes.
pub(crate) fn produce_many<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    p: &FutureProducer,
    records: &[(String, Option<K>, Option<V>, i64)],
) {
    // In chunks the producer's queue holds, each waited for before the next (no runtime is
    // needed to wait out a full queue).
    for chunk in records.chunks(50_000) {
        let futures: Vec<_> = chunk
            .iter()
            .map(|(topic, key, value, ts)| {
                let mut r: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic).timestamp(*ts);
                if let Some(k) = key {
                    r = r.key(k.as_ref());
                }
                if let Some(v) = value {
                    r = r.payload(v.as_ref());
                }
                p.send_result(r)
                    .unwrap_or_else(|(e, _)| panic!("produce: {e}"))
            })
            .collect();
        for f in futures::executor::block_on(futures::future::join_all(futures)) {
            f.expect("the producer stays alive")
                .unwrap_or_else(|(e, _)| panic!("produce: {e}"));
        }
    }
}

/// Produces `steps` one at a time, each consumed by `sj` (within `wait`) before the next is
/// produced: one order, as in replay. A step is a record `(topic, key, value, timestamp)` and
/// the line replay reads for it, made (like the record) just before it is produced; returns the
/// lines.
pub(crate) fn produce_one_by_one<K: AsRef<[u8]>, V: AsRef<[u8]>>(
    sj: &mut Sidejoin,
    steps: impl IntoIterator<Item = ((String, Option<K>, Option<V>, i64), String)>,
    wait: Duration,
) -> Vec<String> {
    let p = producer();
    let mut lines = Vec::new();
    for (i, (record, line)) in steps.into_iter().enumerate() {
        produce_many(&p, &[record]);
        sj.wait_records_in(i as u64 + 1, wait);
        lines.push(line);
    }
    lines
}

/// A record read back from a topic.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: HashMap<String, String>,
}

impl Record {
    pub(crate) fn key_json(&self) -> serde_json::Value {
        self.key.as_ref().map_or(serde_json::Value::Null, |k| {
            serde_json::from_slice(k).unwrap()
        })
    }

    pub(crate) fn value_json(&self) -> serde_json::Value {
        self.value.as_ref().map_or(serde_json::Value::Null, |v| {
            serde_json::from_slice(v).unwrap()
        })
    }
}

pub(crate) fn partition_count(topic: &str) -> i32 {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .create()
        .unwrap();
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .unwrap();
    // A topic the broker does not know (yet) comes back with an error and no partitions.
    md.topics()
        .first()
        .map_or(0, |t| t.partitions().len() as i32)
}

/// A read_committed consumer assigned every partition of `topic` from the beginning, outside
/// any group; with `eof`, it reports reaching the end of each partition.
fn reader(topic: &str, eof: bool) -> BaseConsumer {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", unique("reader"))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .set("enable.partition.eof", if eof { "true" } else { "false" })
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partition_count(topic) {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    c.assign(&tpl).unwrap();
    c
}

fn record(m: &rdkafka::message::BorrowedMessage<'_>) -> Record {
    let headers = m
        .headers()
        .map(|h| {
            h.iter()
                .map(|hd| {
                    (
                        hd.key.to_owned(),
                        String::from_utf8_lossy(hd.value.unwrap_or_default()).into_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    Record {
        partition: m.partition(),
        offset: m.offset(),
        timestamp: m.timestamp().to_millis().unwrap_or(0),
        key: m.key().map(<[u8]>::to_vec),
        value: m.payload().map(<[u8]>::to_vec),
        headers,
    }
}

/// Reads every partition of `topic` from the beginning until `count` records arrived or
/// `timeout` passed (read_committed).
pub(crate) fn read_all(topic: &str, count: usize, timeout: Duration) -> Vec<Record> {
    let c = reader(topic, false);
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    while out.len() < count && Instant::now() < deadline {
        if let Some(m) = c.poll(Duration::from_millis(200)) {
            out.push(record(&m.unwrap()));
        }
    }
    out
}

/// Every committed record of `topic` up to its end offsets as they are now or later (whatever
/// its size), read within `timeout`.
///
/// Reads until every partition reported its end: the consumer starts after this call, so each
/// end it reaches lies at or past the partition's end when the call began. (Counting records
/// against the end offsets instead stops early when one partition grows meanwhile, and never
/// completes on a partition that ends in a transaction marker.)
pub(crate) fn read_to_end(topic: &str, timeout: Duration) -> Vec<Record> {
    let partitions = partition_count(topic) as usize;
    let c = reader(topic, true);
    let deadline = Instant::now() + timeout;
    let mut ended = std::collections::HashSet::new();
    let mut out = Vec::new();
    while ended.len() < partitions && Instant::now() < deadline {
        match c.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => out.push(record(&m)),
            Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                ended.insert(p);
            }
            Some(Err(e)) => panic!("reading `{topic}`: {e}"),
            None => {}
        }
    }
    out
}

/// The offsets `group` committed on `topic`, per partition (-1 when none).
pub(crate) fn committed(group: &str, topic: &str) -> Vec<i64> {
    // read_uncommitted: the last committed offsets even while a transaction that adds offsets
    // is open (a frozen or killed instance's), instead of waiting for it to end.
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .set("group.id", group)
        .set("isolation.level", "read_uncommitted")
        .create()
        .unwrap();
    let mut tpl = TopicPartitionList::new();
    for p in 0..partition_count(topic) {
        tpl.add_partition(topic, p);
    }
    // A broker just started answers NotCoordinator (or "loading") until its offsets topic is
    // ready: asked again for a while.
    let deadline = Instant::now() + Duration::from_secs(60);
    let got = loop {
        match c.committed_offsets(tpl.clone(), Duration::from_secs(10)) {
            Ok(got) => break got,
            Err(e) if Instant::now() < deadline && coordinator_not_ready(&e) => {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the offsets group `{group}` committed on `{topic}`: {e}"),
        }
    };
    got.elements()
        .iter()
        .map(|e| match e.offset() {
            Offset::Offset(o) => o,
            _ => -1,
        })
        .collect()
}

/// The group coordinator is moving or not loaded yet.
fn coordinator_not_ready(e: &rdkafka::error::KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as C;
    matches!(
        e.rdkafka_error_code(),
        Some(
            C::NotCoordinator
                | C::CoordinatorNotAvailable
                | C::CoordinatorLoadInProgress
                | C::RequestTimedOut
                | C::OperationTimedOut
        )
    )
}

/// The end offset of each partition of `topic`.
pub(crate) fn high_watermarks(topic: &str) -> Vec<i64> {
    watermarks(topic)
        .into_iter()
        .map(|(_, high)| high)
        .collect()
}

/// The first offset still held of each partition of `topic` (above 0 once records were deleted).
pub(crate) fn low_watermarks(topic: &str) -> Vec<i64> {
    watermarks(topic).into_iter().map(|(low, _)| low).collect()
}

fn watermarks(topic: &str) -> Vec<(i64, i64)> {
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap())
        .create()
        .unwrap();
    (0..partition_count(topic))
        .map(|p| {
            c.fetch_watermarks(topic, p, Duration::from_secs(10))
                .unwrap()
        })
        .collect()
}

/// Creates unique left, right and output topics named after `name`, with these partition
/// counts, and returns their names.
pub(crate) fn join_topics(name: &str, partitions: [i32; 3]) -> (String, String, String) {
    let names = [
        unique(&format!("{name}-l")),
        unique(&format!("{name}-r")),
        unique(&format!("{name}-o")),
    ];
    for (t, n) in names.iter().zip(partitions) {
        create_topic(t, n);
    }
    let [l, r, o] = names;
    (l, r, o)
}
