//! A star join on the real broker (SPEC §14), configured by the seed's own query:
//! `SELECT /*+ BROADCAST(A, C) */ … FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1` with `CREATE
//! TABLE`s over Kafka topics, pasted into `SIDEJOIN_SQL`. B, the fact, has 4 partitions; A and C,
//! broadcast, one each. Three instances run it (tasks move with their state, both broadcast
//! dimensions included), one is killed -9 in the middle of more input and restarted, then all
//! input is consumed. Every input gets updates and deletes. The output, folded as an upsert table
//! (or, exactly once, materialised as a changelog read with `read_committed`), equals the naive
//! chained join of the final inputs, computed here.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert;

/// The final rows of A (a1 → a2), B (b0 → (b1, b2)) and C (c1 → c2).
#[derive(Default)]
struct Tables {
    a: BTreeMap<String, String>,
    b: BTreeMap<String, (String, String)>,
    c: BTreeMap<String, String>,
}

/// A small deterministic generator.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// The records of one round: `(topic, key, value, timestamp)`; applied to `tables` as made.
fn round(
    topics: &[String; 3],
    tables: &mut Tables,
    rng: &mut Lcg,
    n: usize,
    t0: i64,
) -> Vec<(String, Option<String>, Option<String>, i64)> {
    let [a, b, c] = topics;
    let mut out = Vec::new();
    for i in 0..n {
        let ts = t0 + i as i64;
        let roll = rng.below(100);
        let (topic, key, value) = if roll < 10 {
            // A: 250 customers, updated; a few deleted.
            let k = format!("k{}", rng.below(250));
            let value = if rng.below(20) == 0 {
                tables.a.remove(&k);
                None
            } else {
                let a2 = format!("cust{}", rng.below(1_000));
                tables.a.insert(k.clone(), a2.clone());
                Some(json!({"a1": k, "a2": a2}).to_string())
            };
            (a, json!({ "a1": k }), value)
        } else if roll < 18 {
            // C: stores for 200 of the keys, updated; a few deleted.
            let k = format!("k{}", rng.below(200));
            let value = if rng.below(20) == 0 {
                tables.c.remove(&k);
                None
            } else {
                let c2 = format!("store{}", rng.below(1_000));
                tables.c.insert(k.clone(), c2.clone());
                Some(json!({"c1": k, "c2": c2}).to_string())
            };
            (c, json!({ "c1": k }), value)
        } else {
            // B: 4,000 orders over 300 keys (some without a customer), moved between keys,
            // updated, a few deleted.
            let id = format!("o{}", rng.below(4_000));
            let value = if rng.below(25) == 0 {
                tables.b.remove(&id);
                None
            } else {
                let b1 = format!("k{}", rng.below(300));
                let b2 = format!("order{}", rng.below(1_000));
                tables.b.insert(id.clone(), (b1.clone(), b2.clone()));
                Some(json!({"b0": id, "b1": b1, "b2": b2}).to_string())
            };
            (b, json!({ "b0": id }), value)
        };
        out.push((topic.clone(), Some(key.to_string()), value, ts));
    }
    out
}

/// The naive join of the final inputs: `B JOIN A ON b1 = a1 JOIN C ON a1 = c1`, as the query's
/// upsert table (key `{"b0"}` → row).
fn naive(t: &Tables) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (b0, (b1, b2)) in &t.b {
        let (Some(a2), Some(c2)) = (t.a.get(b1), t.c.get(b1)) else {
            continue;
        };
        out.insert(
            json!({ "b0": b0 }).to_string(),
            json!({"b0": b0, "a2": a2, "b2": b2, "c2": c2}),
        );
    }
    out
}

/// The seed's query over `topics` (A, B, C) into `out`: an upsert table, or, `changelog`, a
/// Debezium changelog written exactly once.
fn script(topics: &[String; 3], out: &str, changelog: bool) -> String {
    let [a, b, c] = topics;
    let upsert = |topic: &str| {
        format!("WITH ('connector'='upsert-kafka', 'topic'='{topic}', 'key.format'='json', 'value.format'='json')")
    };
    format!(
        "CREATE TABLE A (a1 STRING, a2 STRING, PRIMARY KEY (a1) NOT ENFORCED) {};
         CREATE TABLE B (b0 STRING, b1 STRING, b2 STRING, PRIMARY KEY (b0) NOT ENFORCED) {};
         CREATE TABLE C (c1 STRING, c2 STRING, PRIMARY KEY (c1) NOT ENFORCED) {};
         CREATE TABLE O (b0 STRING, a2 STRING, b2 STRING, c2 STRING{}) {};
         INSERT INTO O SELECT /*+ BROADCAST(A, C) */ b0, a2, b2, c2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1;",
        upsert(a),
        upsert(b),
        upsert(c),
        if changelog { "" } else { ", PRIMARY KEY (b0) NOT ENFORCED" },
        if changelog {
            format!("WITH ('connector'='kafka', 'topic'='{out}', 'format'='debezium-json', 'sink.delivery-guarantee'='exactly-once')")
        } else {
            upsert(out)
        }
    )
}

/// Runs three instances over the input, one killed -9 and restarted in the middle; returns the
/// output topic and the final input tables, the instances still running.
fn scenario(name: &str, changelog: bool) -> (String, Tables, Vec<Sidejoin>) {
    let topics = [
        kafka::unique(&format!("{name}-a")),
        kafka::unique(&format!("{name}-b")),
        kafka::unique(&format!("{name}-c")),
    ];
    let out = kafka::unique(&format!("{name}-out"));
    for (t, n) in topics.iter().zip([1, 4, 1]).chain([(&out, 3)]) {
        kafka::create_topic(t, n);
    }
    let app = kafka::unique(&format!("{name}-app"));
    let mut env: Vec<(String, String)> = kafka::base_env(&app, "-", "-", "-")
        .into_iter()
        .filter(|(k, _)| !k.ends_with("_TOPIC") && !k.ends_with("_HASH_BY"))
        .collect();
    env.push(("SIDEJOIN_SQL".into(), script(&topics, &out, changelog)));
    env.push((
        "SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS".into(),
        "6000".into(),
    ));
    let (mut tables, mut rng, t0) = (Tables::default(), Lcg(7), kafka::now_ms());
    let mut produced = 0usize;
    let mut more = |n: usize, tables: &mut Tables| {
        let records = round(&topics, tables, &mut rng, n, t0 + produced as i64);
        produced += n;
        kafka::produce_many(&kafka::producer(), &records);
        // The group's offsets are the fact's only (the dimensions are broadcast).
        kafka::high_watermarks(&topics[1]).iter().sum::<i64>()
    };
    let facts = more(8_000, &mut tables);
    let fact = [topics[1].as_str()];
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    a.wait_ready(WAIT);
    kills::wait_consumed(&app, &fact, facts, "one instance", &[&a]);
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    let mut c = Sidejoin::start("run", &kills::instance(&env, 2));
    b.wait_ready(WAIT);
    c.wait_ready(WAIT);
    let facts = more(8_000, &mut tables);
    kills::wait_consumed(&app, &fact, facts, "three instances", &[&a, &b, &c]);
    // One killed in the middle of more input, then back.
    more(8_000, &mut tables);
    c.wait_records_in(1, WAIT);
    c.signal("KILL");
    assert_eq!(c.wait(WAIT), -1);
    let mut c = Sidejoin::start("run", &kills::instance(&env, 2));
    c.wait_ready(WAIT);
    let facts = more(4_000, &mut tables);
    kills::wait_consumed(&app, &fact, facts, "after the kill", &[&a, &b, &c]);
    let logs = [a.logs(), b.logs(), c.logs()].concat();
    assert!(
        logs.contains("star join"),
        "the topology is logged:\n{logs}"
    );
    (out, tables, vec![a, b, c])
}

#[test]
fn the_seeds_broadcast_star_join_with_three_instances_and_a_kill_folds_to_the_naive_join() {
    let (out, tables, _running) = scenario("star-alo", false);
    let want = naive(&tables);
    assert!(want.len() > 1_000, "the join has rows: {}", want.len());
    upsert::wait_for_table(&out, &want, Instant::now() + WAIT);
}

#[test]
fn the_seeds_star_join_exactly_once_materialises_to_the_naive_join_with_no_change_twice() {
    let (out, tables, _running) = scenario("star-eos", true);
    let mut want: HashMap<String, i64> = HashMap::new();
    for row in naive(&tables).into_values() {
        *want.entry(row.to_string()).or_default() += 1;
    }
    // The last broadcast records may still be on their way: read until the output is complete.
    upsert::wait_materialised(
        &out,
        &want,
        Instant::now() + WAIT,
        Duration::from_millis(500),
        |got| {
            format!(
                "the materialised output differs from the naive join: {} rows, {} wanted",
                got.len(),
                want.len()
            )
        },
    );
}
