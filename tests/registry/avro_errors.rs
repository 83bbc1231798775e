//! Bad Avro input on the real broker and registry: 10,000 malformed records (random bytes,
//! truncated bodies, unknown schema ids, wrong magic bytes, huge lengths, deep nesting, bodies
//! that do not match their schema) mixed into valid traffic all land in the DLQ with a reason,
//! nothing panics, and the valid records are joined.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use crate::common::avro::{self, RawRecord, Writer};
use crate::common::kafka::{self, Sidejoin};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(120);
const VALID: i64 = 200;
const BAD: usize = 10_000;

/// xorshift64: reproducible noise without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn row_schema(name: &str, column: &str) -> Value {
    json!({"type": "record", "name": name, "fields": [
        {"name": "k", "type": "int"},
        {"name": column, "type": "string"}
    ]})
}

/// The Avro zigzag varint of `v`.
fn varint(v: i64) -> Vec<u8> {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    let mut out = Vec::new();
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return out;
        }
        out.push(b | 0x80);
    }
}

fn header(id: u32) -> Vec<u8> {
    let mut h = vec![0];
    h.extend_from_slice(&id.to_be_bytes());
    h
}

/// The `i`-th malformed value and the words its DLQ reason must contain.
fn malformed(i: usize, rng: &mut Rng, left: &Writer, node_id: u32) -> (Vec<u8>, &'static str) {
    let valid = left.frame(&json!({"k": 1, "v": "some text"}));
    match i % 7 {
        0 => {
            // Random bytes; a leading 0 would read the next four as an id: keep it non-zero so
            // the reason is known (random ids are kind 2).
            let len = 1 + rng.below(40) as usize;
            let mut b: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            if let Some(first) = b.first_mut() {
                *first |= 1;
            }
            let reason = if len < 5 { "too short" } else { "magic byte" };
            (b, reason)
        }
        1 => {
            let cut = 5 + rng.below((valid.len() - 5) as u64) as usize;
            (valid[..cut].to_vec(), "truncated")
        }
        2 => {
            let mut b = header(7_000_000 + (i % 50) as u32);
            b.extend_from_slice(&valid[5..]);
            (b, "unknown schema id")
        }
        3 => (br#"{"k":1,"v":"json"}"#.to_vec(), "magic byte"),
        4 => {
            // A string claiming 2^40 bytes.
            let mut b = header(left.id);
            b.extend(varint(1));
            b.extend(varint(1 << 40));
            b.extend_from_slice(b"abc");
            (b, "truncated")
        }
        5 => {
            // A linked list 1,000 levels deep (union branch 1 = another node).
            let mut b = header(node_id);
            b.extend(std::iter::repeat_n(2u8, 1000));
            b.push(0);
            (b, "nested deeper")
        }
        _ => {
            let mut b = valid.clone();
            b.extend_from_slice(&[1, 2, 3]);
            (b, "left after the datum")
        }
    }
}

#[test]
fn ten_thousand_malformed_records_go_to_the_dlq_and_the_valid_ones_join() {
    let (left, right, output) = kafka::join_topics("avro-bad", [2, 2, 1]);
    let app = kafka::unique("avro-bad-app");
    let dlq = kafka::unique("avro-bad-dlq");
    let lw = Writer::new(&format!("{left}-value"), &row_schema("L", "v"));
    let rw = Writer::new(&format!("{right}-value"), &row_schema("R", "w"));
    let node = Writer::new(
        &kafka::unique("node-value"),
        &json!({"type": "record", "name": "Node", "fields": [
            {"name": "next", "type": ["null", "Node"], "default": null}
        ]}),
    );
    let env = dlq_env(&app, &left, &right, &output, &dlq);
    let (records, reasons) = valid_and_malformed(&left, &right, &lw, &rw, node.id);
    avro::produce_bytes(&kafka::producer(), &records);

    let mut sj = Sidejoin::start("run", &env);
    sj.wait_records_in(records.len() as u64, WAIT);
    let dead = kafka::read_all(&dlq, BAD, WAIT);
    assert_eq!(dead.len(), BAD, "logs:\n{}", sj.logs());
    for r in &dead {
        assert_dead_letter(r, &reasons);
    }
    let joined = kafka::read_all(&output, VALID as usize, WAIT);
    let rows: BTreeSet<String> = joined
        .iter()
        .map(|r| r.value_json()["after"].to_string())
        .collect();
    let expected: BTreeSet<String> = (0..VALID)
        .map(|k| json!({"k": k, "v": format!("l{k}"), "w": format!("r{k}")}).to_string())
        .collect();
    assert_eq!(rows, expected);
    assert_eq!(sj.metric("sidejoin_decode_errors_total", ""), BAD as f64);
    assert_eq!(sj.metric("sidejoin_dlq_records_total", ""), BAD as f64);
    let logs = sj.logs();
    assert!(!logs.contains("panicked"), "{logs}");
    // Still alive and serving.
    assert_eq!(sj.get("/healthz").0, 200);
}

/// The variables of an Avro join on k of both sides, dead-lettering to `dlq`.
fn dlq_env(app: &str, left: &str, right: &str, output: &str, dlq: &str) -> Vec<(String, String)> {
    let mut env = kafka::base_env(app, left, right, output);
    for (k, v) in [
        ("SIDEJOIN_LEFT_FORMAT", "avro"),
        ("SIDEJOIN_RIGHT_FORMAT", "avro"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_SELECT", "l.k AS k, l.v AS v, r.w AS w"),
        ("SIDEJOIN_DLQ_TOPIC", dlq),
    ] {
        env.push((k.to_owned(), v.to_owned()));
    }
    env.push(("SIDEJOIN_SCHEMA_REGISTRY_URL".into(), avro::registry_url()));
    env
}

/// `VALID` valid pairs (written by `lw` and `rw`), each followed by its share of the `BAD`
/// malformed records; and the reason each malformed one must be dead-lettered with, by its key.
fn valid_and_malformed(
    left: &str,
    right: &str,
    lw: &Writer,
    rw: &Writer,
    node_id: u32,
) -> (Vec<RawRecord>, HashMap<Vec<u8>, &'static str>) {
    let mut rng = Rng(0x5eed_1234_abcd_ef01);
    let ts = kafka::now_ms();
    let mut records: Vec<RawRecord> = Vec::new();
    let mut reasons: HashMap<Vec<u8>, &str> = HashMap::new();
    let mut bad = 0;
    for k in 0..VALID {
        // Keyed by the join key, so that both sides of a key share a partition.
        let key = Some(k.to_string().into_bytes());
        records.push((
            left.to_owned(),
            key.clone(),
            Some(lw.frame(&json!({"k": k, "v": format!("l{k}")}))),
            ts,
        ));
        records.push((
            right.to_owned(),
            key.clone(),
            Some(rw.frame(&json!({"k": k, "w": format!("r{k}")}))),
            ts,
        ));
        // 50 bad records after each valid pair, alternating topics.
        for _ in 0..BAD / VALID as usize {
            let (value, reason) = malformed(bad, &mut rng, lw, node_id);
            let topic = if bad % 2 == 0 { left } else { right };
            // The DLQ keeps the original key: it identifies the record.
            let key = format!("bad-{bad}").into_bytes();
            reasons.insert(key.clone(), reason);
            records.push((topic.to_owned(), Some(key), Some(value), ts));
            bad += 1;
        }
    }
    assert_eq!(bad, BAD);
    (records, reasons)
}

/// A dead letter keeps its original key, carries its source offset, and its reason has the
/// words `reasons` expects for that key.
fn assert_dead_letter(r: &kafka::Record, reasons: &HashMap<Vec<u8>, &str>) {
    let key = r.key.clone().expect("the original key");
    let want = reasons[&key];
    let error = r.headers.get("sidejoin.error").expect("a reason header");
    assert!(
        error.contains(want),
        "{}: expected a reason with {want:?}, got {error:?}",
        String::from_utf8_lossy(&key)
    );
    assert!(r.headers.contains_key("sidejoin.source.offset"));
}
