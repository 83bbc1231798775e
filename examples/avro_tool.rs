//! Produce and consume Confluent Avro for `scripts/demo.sh --avro` and the Avro bench, with the
//! `apache-avro` crate's own writer and reader (not sidejoin's code) and a schema registry.
//!
//!     avro_tool produce BOOTSTRAP REGISTRY TOPIC SCHEMA_JSON < lines
//!         Registers SCHEMA_JSON under TOPIC-value, then writes one record per stdin line
//!         "KEY<TAB>VALUE": VALUE is JSON (unions as plain values) encoded with the schema, KEY
//!         plain text (empty: no key); an empty VALUE is a tombstone.
//!     avro_tool gen BOOTSTRAP REGISTRY TOPIC N info|score [json]
//!         N generated records (bench): `info` {user_id, user_name}, `score` {user_id, score},
//!         user ids 0..N, keyed by the user id; with `json` the same rows as JSON text.
//!     avro_tool consume BOOTSTRAP REGISTRY TOPIC MAX [TIMEOUT_MS]
//!         Prints up to MAX records from the beginning, "KEY<TAB>VALUE", each decoded with the
//!         schema its id names (JSON; "null" when absent); stops after TIMEOUT_MS (default
//!         10000) without a new record.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use apache_avro::types::Value as Avro;
use apache_avro::Schema;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{ClientConfig, Offset, TopicPartitionList};
use serde_json::Value;

const USAGE: &str = "usage: avro_tool produce BOOTSTRAP REGISTRY TOPIC SCHEMA_JSON < lines
       avro_tool gen BOOTSTRAP REGISTRY TOPIC N info|score [json]
       avro_tool consume BOOTSTRAP REGISTRY TOPIC MAX [TIMEOUT_MS]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match argv.as_slice() {
        ["produce", b, r, t, schema] => produce(b, r, t, schema),
        ["gen", b, r, t, n, kind] => generate(b, r, t, n, kind, false),
        ["gen", b, r, t, n, kind, "json"] => generate(b, r, t, n, kind, true),
        ["consume", b, r, t, max] => consume(b, r, t, max, "10000"),
        ["consume", b, r, t, max, timeout] => consume(b, r, t, max, timeout),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("avro_tool: {e}");
            ExitCode::from(1)
        }
    }
}

/// A registry response's JSON body.
fn json_body(resp: &mut ureq::http::Response<ureq::Body>) -> Result<Value, String> {
    let text = resp
        .body_mut()
        .read_to_string()
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

fn register(registry: &str, subject: &str, schema: &str) -> Result<u32, String> {
    let body = serde_json::json!({ "schema": schema }).to_string();
    let mut resp = ureq::post(format!("{registry}/subjects/{subject}/versions"))
        .header("Content-Type", "application/vnd.schemaregistry.v1+json")
        .send(body.as_str())
        .map_err(|e| format!("registering {subject}: {e}"))?;
    let v = json_body(&mut resp)?;
    v["id"]
        .as_u64()
        .map(|i| i as u32)
        .ok_or(format!("registering {subject}: {v}"))
}

fn frame(id: u32, schema: &Schema, value: Avro) -> Result<Vec<u8>, String> {
    let mut out = vec![0];
    out.extend_from_slice(&id.to_be_bytes());
    #[allow(deprecated)] // the plain datum writer: same bytes as GenericDatumWriter
    out.extend(apache_avro::to_avro_datum(schema, value).map_err(|e| e.to_string())?);
    Ok(out)
}

fn producer(bootstrap: &str) -> Result<FutureProducer, String> {
    ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("acks", "all")
        .set("linger.ms", "5")
        .create()
        .map_err(|e| e.to_string())
}

/// A record's key and value bytes (`None`: absent).
type KeyValue = (Option<Vec<u8>>, Option<Vec<u8>>);

/// Sends `(key, value)` records and waits for all of them.
fn send(p: &FutureProducer, topic: &str, records: &[KeyValue]) -> Result<(), String> {
    for chunk in records.chunks(50_000) {
        let futures: Vec<_> = chunk
            .iter()
            .map(|(k, v)| {
                let mut r: FutureRecord<'_, [u8], [u8]> = FutureRecord::to(topic);
                if let Some(k) = k {
                    r = r.key(k.as_slice());
                }
                if let Some(v) = v {
                    r = r.payload(v.as_slice());
                }
                p.send_result(r).map_err(|(e, _)| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        for f in futures::executor::block_on(futures::future::join_all(futures)) {
            f.map_err(|_| "producer gone".to_owned())?
                .map_err(|(e, _)| e.to_string())?;
        }
    }
    Ok(())
}

fn produce(bootstrap: &str, registry: &str, topic: &str, schema_json: &str) -> Result<(), String> {
    let schema = Schema::parse_str(schema_json).map_err(|e| e.to_string())?;
    let id = register(registry, &format!("{topic}-value"), schema_json)?;
    let mut records = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| e.to_string())?;
        let (key, value) = line.split_once('\t').unwrap_or(("", line.as_str()));
        let key = (!key.is_empty()).then(|| key.as_bytes().to_vec());
        let value = if value.is_empty() {
            None
        } else {
            let json: Value = serde_json::from_str(value).map_err(|e| format!("{value}: {e}"))?;
            let avro = Avro::try_from(json)
                .and_then(|v| v.resolve(&schema))
                .map_err(|e| format!("{value}: {e}"))?;
            Some(frame(id, &schema, avro)?)
        };
        records.push((key, value));
    }
    send(&producer(bootstrap)?, topic, &records)
}

fn generate(
    bootstrap: &str,
    registry: &str,
    topic: &str,
    n: &str,
    kind: &str,
    json: bool,
) -> Result<(), String> {
    let n: u64 = n.parse().map_err(|_| format!("N: {n}"))?;
    let (field, schema_json) = match kind {
        "info" => (
            "user_name",
            r#"{"type":"record","name":"Info","fields":[{"name":"user_id","type":"string"},{"name":"user_name","type":"string"}]}"#,
        ),
        "score" => (
            "score",
            r#"{"type":"record","name":"Score","fields":[{"name":"user_id","type":"string"},{"name":"score","type":"long"}]}"#,
        ),
        _ => return Err(format!("kind {kind}: info or score")),
    };
    let schema = Schema::parse_str(schema_json).map_err(|e| e.to_string())?;
    let id = register(registry, &format!("{topic}-value"), schema_json)?;
    let p = producer(bootstrap)?;
    let mut batch = Vec::new();
    for i in 0..n {
        let user = format!("{i}");
        let other = if field == "score" {
            Avro::Long(i as i64 % 100)
        } else {
            Avro::String(format!("user{i}"))
        };
        let v = Avro::Record(vec![
            ("user_id".into(), Avro::String(user.clone())),
            (field.into(), other),
        ]);
        let bytes = if json {
            Value::try_from(v)
                .map_err(|e| e.to_string())?
                .to_string()
                .into_bytes()
        } else {
            frame(id, &schema, v)?
        };
        batch.push((Some(user.into_bytes()), Some(bytes)));
        if batch.len() == 100_000 {
            send(&p, topic, &batch)?;
            batch.clear();
        }
    }
    send(&p, topic, &batch)
}

fn decoded(bytes: Option<&[u8]>, registry: &str) -> Result<String, String> {
    let Some(b) = bytes else {
        return Ok("null".into());
    };
    if b.len() < 5 || b[0] != 0 {
        return Ok(String::from_utf8_lossy(b).into_owned());
    }
    let id = u32::from_be_bytes(b[1..5].try_into().unwrap());
    let mut resp = ureq::get(format!("{registry}/schemas/ids/{id}"))
        .call()
        .map_err(|e| format!("schema {id}: {e}"))?;
    let v = json_body(&mut resp)?;
    let schema =
        Schema::parse_str(v["schema"].as_str().unwrap_or_default()).map_err(|e| e.to_string())?;
    let mut body = &b[5..];
    #[allow(deprecated)] // the plain datum reader
    let value =
        apache_avro::from_avro_datum(&schema, &mut body, None).map_err(|e| e.to_string())?;
    Ok(Value::try_from(value)
        .map_err(|e| e.to_string())?
        .to_string())
}

fn consume(
    bootstrap: &str,
    registry: &str,
    topic: &str,
    max: &str,
    timeout: &str,
) -> Result<(), String> {
    let max: usize = max.parse().map_err(|_| format!("MAX: {max}"))?;
    let timeout = Duration::from_millis(
        timeout
            .parse()
            .map_err(|_| format!("TIMEOUT_MS: {timeout}"))?,
    );
    let c: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", "avro_tool")
        .set("enable.auto.commit", "false")
        .create()
        .map_err(|e| e.to_string())?;
    let md = c
        .fetch_metadata(Some(topic), Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    let mut tpl = TopicPartitionList::new();
    for p in md.topics().iter().flat_map(|t| t.partitions()) {
        tpl.add_partition_offset(topic, p.id(), Offset::Beginning)
            .map_err(|e| e.to_string())?;
    }
    c.assign(&tpl).map_err(|e| e.to_string())?;
    let mut out = std::io::stdout().lock();
    let (mut n, mut last) = (0, Instant::now());
    while n < max && last.elapsed() < timeout {
        match c.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                writeln!(
                    out,
                    "{}\t{}",
                    decoded(m.key(), registry)?,
                    decoded(m.payload(), registry)?
                )
                .map_err(|e| e.to_string())?;
                n += 1;
                last = Instant::now();
            }
            Some(Err(e)) => return Err(e.to_string()),
            None => {}
        }
    }
    Ok(())
}
