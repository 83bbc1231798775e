//! A star join configured by variables (SPEC §14) whose first dimension is co-partitioned with
//! the fact and whose second, broadcast, is looked up by a column of the first (a chained key):
//! fact `orders` (4 partitions, multiset, debezium-json, keyed by the join key `k`), dimension
//! `right` `customers` (4 partitions, upsert by `k`), dimension `dim2` `regions` (1 partition,
//! broadcast, upsert by `region`, `LEFT` joined on `r.region`). Exactly once, two instances, one
//! killed -9 in the middle of more input and restarted: the `read_committed` changelog
//! materialises to the naive chained join of the final inputs, with no change twice.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::kafka::{self, Sidejoin};
use crate::common::kills::{self, WAIT};
use crate::common::upsert;

/// The final inputs: orders (a multiset of `(id, k, qty)`), customers (k → region) and regions
/// (region → name).
#[derive(Default)]
struct Tables {
    orders: Vec<(u64, u64, u64)>,
    customers: BTreeMap<u64, u64>,
    regions: BTreeMap<u64, String>,
}

type Record = (String, Option<String>, Option<String>, i64);

/// `n` changes over the three topics, applied to `t` as they are made; `seq` numbers them.
fn changes(topics: &[String; 3], t: &mut Tables, seq: &mut u64, n: u64, t0: i64) -> Vec<Record> {
    let [orders, customers, regions] = topics;
    let mut out = Vec::new();
    for _ in 0..n {
        *seq += 1;
        let i = *seq;
        let ts = t0 + i as i64;
        let record = match i % 10 {
            // A new customer or a move to another region; every 13th is deleted.
            0 | 1 => {
                let k = i * 7 % 400;
                if i % 13 == 0 {
                    t.customers.remove(&k);
                    (customers, json!({ "k": k }), None)
                } else {
                    let region = i % 30;
                    t.customers.insert(k, region);
                    let v = json!({"k": k, "region": region});
                    (customers, json!({ "k": k }), Some(v))
                }
            }
            // Region names (25 of the 30 regions exist: the rest null-pad, LEFT JOIN).
            2 => {
                let region = i % 25;
                let name = format!("region-{region}-{}", i % 3);
                t.regions.insert(region, name.clone());
                let v = json!({"region": region, "name": name});
                (regions, json!({ "region": region }), Some(v))
            }
            // An order's quantity changes, or it is deleted (debezium-json, by its before image).
            3 if !t.orders.is_empty() => {
                let at = (i as usize * 31) % t.orders.len();
                let (id, k, qty) = t.orders[at];
                let before = json!({"id": id, "k": k, "qty": qty});
                let v = if i % 3 == 0 {
                    t.orders.swap_remove(at);
                    json!({"before": before, "after": null, "op": "d"})
                } else {
                    t.orders[at].2 = qty + 1;
                    let after = json!({"id": id, "k": k, "qty": qty + 1});
                    json!({"before": before, "after": after, "op": "u"})
                };
                (orders, json!({ "k": k }), Some(v))
            }
            _ => {
                let k = i * 11 % 500;
                t.orders.push((i, k, 1));
                let row = json!({"id": i, "k": k, "qty": 1});
                let v = json!({"before": null, "after": row, "op": "c"});
                (orders, json!({ "k": k }), Some(v))
            }
        };
        let (topic, key, value) = record;
        out.push((
            topic.clone(),
            Some(key.to_string()),
            value.map(|v| v.to_string()),
            ts,
        ));
    }
    out
}

/// The naive chained join `orders JOIN customers ON k LEFT JOIN regions ON region`, as rows of
/// the SELECT list below, counted.
fn naive(t: &Tables) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for (id, k, qty) in &t.orders {
        let Some(region) = t.customers.get(k) else {
            continue;
        };
        let name = t.regions.get(region).map_or(Value::Null, |n| json!(n));
        let row = json!({"id": id, "k": k, "qty": qty, "region": region, "name": name});
        *out.entry(row.to_string()).or_default() += 1;
    }
    out
}

fn env(app: &str, topics: &[String; 3], out: &str) -> Vec<(String, String)> {
    let [orders, customers, regions] = topics;
    let mut env: Vec<(String, String)> = kafka::base_env(app, orders, customers, out);
    let vars = [
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_FORMAT", "upsert-json"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "k"),
        ("SIDEJOIN_JOIN_TYPE", "inner"),
        ("SIDEJOIN_DIM2_TOPIC", regions),
        ("SIDEJOIN_DIM2_FORMAT", "upsert-json"),
        ("SIDEJOIN_DIM2_KEY", "region"),
        ("SIDEJOIN_DIM2_PRIMARY_KEY", "region"),
        ("SIDEJOIN_DIM2_ON", "r.region"),
        ("SIDEJOIN_DIM2_JOIN_TYPE", "left"),
        ("SIDEJOIN_BROADCAST", "dim2"),
        (
            "SIDEJOIN_SELECT",
            "l.id AS id, l.k AS k, l.qty AS qty, r.region AS region, dim2.name AS name",
        ),
        ("SIDEJOIN_OUTPUT_MODE", "changelog"),
        ("SIDEJOIN_PROCESSING_GUARANTEE", "exactly_once"),
        ("SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", "6000"),
        // One worker each: both instances own tasks, so the killed one is working.
        ("SIDEJOIN_WORKERS", "1"),
    ];
    env.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    env
}

#[test]
fn a_co_partitioned_and_a_chained_broadcast_dimension_exactly_once_with_a_kill() {
    let topics = [
        kafka::unique("star-placed-orders"),
        kafka::unique("star-placed-customers"),
        kafka::unique("star-placed-regions"),
    ];
    let out = kafka::unique("star-placed-out");
    for (t, n) in topics.iter().zip([4, 4, 1]).chain([(&out, 2)]) {
        kafka::create_topic(t, n);
    }
    let app = kafka::unique("star-placed-app");
    let env = env(&app, &topics, &out);
    let (mut tables, mut seq, t0) = (Tables::default(), 0u64, kafka::now_ms());
    let grouped = [topics[0].as_str(), topics[1].as_str()];
    let mut more = |n: u64, tables: &mut Tables| {
        kafka::produce_many(
            &kafka::producer(),
            &changes(&topics, tables, &mut seq, n, t0),
        );
        grouped
            .iter()
            .map(|t| kafka::high_watermarks(t).iter().sum::<i64>())
            .sum::<i64>()
    };
    let total = more(10_000, &mut tables);
    let mut a = Sidejoin::start("run", &kills::instance(&env, 0));
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    a.wait_ready(WAIT);
    b.wait_ready(WAIT);
    kills::wait_consumed(&app, &grouped, total, "two instances", &[&a, &b]);
    more(10_000, &mut tables);
    b.wait_records_in(1, WAIT);
    b.signal("KILL");
    assert_eq!(b.wait(WAIT), -1);
    let mut b = Sidejoin::start("run", &kills::instance(&env, 1));
    b.wait_ready(WAIT);
    let total = more(5_000, &mut tables);
    kills::wait_consumed(&app, &grouped, total, "after the kill", &[&a, &b]);
    let want = naive(&tables);
    assert!(want.len() > 1_000, "the join has rows: {}", want.len());
    assert!(
        want.keys().any(|r| r.contains("\"name\":null")),
        "some chains are null-padded at the left-joined dimension"
    );
    upsert::wait_materialised(
        &out,
        &want,
        Instant::now() + WAIT,
        Duration::from_millis(500),
        |got| {
            format!(
                "the materialised output differs from the naive join: {} rows, {} wanted; logs:\n{}",
                got.len(),
                want.len(),
                [a.logs(), b.logs()].concat()
            )
        },
    );
}
