//! Topic, produce and consume for the local broker (`scripts/kafka.sh topic|produce|consume` and
//! `scripts/demo.sh`), with rdkafka instead of Kafka's Java console tools (no JVM start per
//! call).
//!
//!     kafka_tool topic BOOTSTRAP NAME PARTITIONS [key=value ...]
//!         Creates the topic (replication factor 1) with optional topic configs, e.g.
//!         cleanup.policy=compact. Succeeds if it already exists (left as it is).
//!     kafka_tool produce BOOTSTRAP TOPIC < lines
//!         One record per stdin line "KEY<TAB>VALUE" (acks=all): an empty KEY gives a null key,
//!         an empty VALUE a null value (a tombstone), a line without a TAB a null-key record
//!         whose value is the line; everything after the first TAB is the value. Exits 1 if any
//!         record failed.
//!     kafka_tool consume BOOTSTRAP TOPIC MAX [TIMEOUT_MS]
//!         Prints up to MAX records of every partition from the beginning, "KEY<TAB>VALUE" each
//!         ("null" for a null key or value); stops after TIMEOUT_MS (default 10000) without a
//!         new record. Isolation read_committed (LOCAL_KAFKA_ISOLATION=read_uncommitted to
//!         change). No consumer group: nothing is committed.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};

const USAGE: &str = "usage: kafka_tool topic BOOTSTRAP NAME PARTITIONS [key=value ...]
       kafka_tool produce BOOTSTRAP TOPIC < lines
       kafka_tool consume BOOTSTRAP TOPIC MAX [TIMEOUT_MS]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match argv.as_slice() {
        ["topic", bootstrap, name, partitions, configs @ ..] => {
            topic(bootstrap, name, partitions, configs)
        }
        ["produce", bootstrap, topic] => produce(bootstrap, topic),
        ["consume", bootstrap, topic, max] => consume(bootstrap, topic, max, "10000"),
        ["consume", bootstrap, topic, max, timeout] => consume(bootstrap, topic, max, timeout),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kafka_tool: {e}");
            ExitCode::FAILURE
        }
    }
}

fn topic(bootstrap: &str, name: &str, partitions: &str, configs: &[&str]) -> Result<(), String> {
    let partitions: i32 = partitions
        .parse()
        .ok()
        .filter(|p| *p > 0)
        .ok_or_else(|| format!("PARTITIONS must be a positive integer: {partitions}"))?;
    let mut new = NewTopic::new(name, partitions, TopicReplication::Fixed(1));
    for kv in configs {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| format!("topic config must be key=value: {kv}"))?;
        new = new.set(k, v);
    }
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .map_err(|e| e.to_string())?;
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(15)));
    let results = futures::executor::block_on(admin.create_topics([&new], &opts))
        .map_err(|e| format!("create topic {name}: {e}"))?;
    for r in results {
        match r {
            Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((t, e)) => return Err(format!("create topic {t}: {e}")),
        }
    }
    println!("topic {name}: {partitions} partitions");
    Ok(())
}

fn produce(bootstrap: &str, topic: &str) -> Result<(), String> {
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("message.timeout.ms", "30000")
        .create()
        .map_err(|e| e.to_string())?;
    let mut pending = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let (key, value) = match line.split_once('\t') {
            Some((k, v)) => (k.to_owned(), v.to_owned()),
            None => (String::new(), line),
        };
        let mut record: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic);
        if !key.is_empty() {
            record = record.key(key.as_bytes());
        }
        if !value.is_empty() {
            record = record.payload(value.as_bytes());
        }
        // Acknowledgements are awaited in bulk below; a full local queue is waited out here.
        let delivery = loop {
            match producer.send_result(record) {
                Ok(f) => break f,
                Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                    record = r;
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err((e, _)) => return Err(format!("produce to {topic}: {e}")),
            }
        };
        pending.push(delivery);
        if pending.len() >= 10_000 {
            await_all(std::mem::take(&mut pending), topic)?;
        }
    }
    await_all(pending, topic)
}

fn await_all(pending: Vec<rdkafka::producer::DeliveryFuture>, topic: &str) -> Result<(), String> {
    let mut failed = 0;
    for f in futures::executor::block_on(futures::future::join_all(pending)) {
        match f {
            Ok(Ok(_)) => {}
            Ok(Err((e, _))) => {
                failed += 1;
                eprintln!("kafka_tool: produce to {topic}: {e}");
            }
            Err(_) => failed += 1,
        }
    }
    if failed > 0 {
        return Err(format!("{failed} record(s) to {topic} failed"));
    }
    Ok(())
}

fn consume(bootstrap: &str, topic: &str, max: &str, timeout: &str) -> Result<(), String> {
    let max: usize = max
        .parse()
        .map_err(|_| format!("MAX must be a number: {max}"))?;
    let timeout = Duration::from_millis(
        timeout
            .parse()
            .map_err(|_| format!("TIMEOUT_MS must be a number: {timeout}"))?,
    );
    let isolation =
        std::env::var("LOCAL_KAFKA_ISOLATION").unwrap_or_else(|_| "read_committed".into());
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "kafka-tool-unused")
        .set("enable.auto.commit", "false")
        .set("isolation.level", &isolation)
        .create()
        .map_err(|e| e.to_string())?;
    let md = consumer
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .map_err(|e| format!("metadata of {topic}: {e}"))?;
    let partitions = md.topics().first().map_or(0, |t| t.partitions().len());
    if partitions == 0 {
        return Err(format!("topic {topic} does not exist"));
    }
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions as i32 {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .map_err(|e| e.to_string())?;
    }
    consumer.assign(&tpl).map_err(|e| e.to_string())?;
    let out = std::io::stdout();
    let mut out = out.lock();
    let (mut count, mut last) = (0, Instant::now());
    while count < max && last.elapsed() < timeout {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                let show = |b: Option<&[u8]>| {
                    b.map_or_else(
                        || "null".into(),
                        |b| String::from_utf8_lossy(b).into_owned(),
                    )
                };
                writeln!(out, "{}\t{}", show(m.key()), show(m.payload()))
                    .map_err(|e| e.to_string())?;
                count += 1;
                last = Instant::now();
            }
            Some(Err(e)) => return Err(format!("consume {topic}: {e}")),
            None => {}
        }
    }
    Ok(())
}
