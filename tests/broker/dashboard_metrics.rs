//! The Grafana dashboard (`helm/sidejoin/dashboards/sidejoin.json`, shipped by the chart and
//! provisioned by docker-compose) queries only metrics a running sidejoin exports: two
//! instances on the real broker (a regular left join and an interval join, so that watermarks
//! exist too) get traffic — matches, padded rows, a dead-lettered record — until every labelled
//! and histogram metric has been observed, then each name in the dashboard's PromQL must be on
//! their `/metrics` (histograms by their `_bucket`/`_sum`/`_count` series), and every label a
//! query groups by must be a label of a metric that query reads.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::kafka::{self, Sidejoin};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(90);

/// What the issue asks the dashboard to show, by the metric that shows it.
const REQUIRED: &[&str] = &[
    "sidejoin_records_in_total",
    "sidejoin_records_out_total",
    "sidejoin_generated_retracts_filtered_total",
    "sidejoin_dedup_dropped_total",
    "sidejoin_matches_total",
    "sidejoin_unmatched_emitted_total",
    "sidejoin_late_records_total",
    "sidejoin_state_rows",
    "sidejoin_consumer_lag",
    "sidejoin_end_to_end_latency_seconds",
    "sidejoin_commit_duration_seconds",
    "sidejoin_rebalances_total",
    "sidejoin_restore_seconds",
    "sidejoin_dlq_records_total",
];

fn dashboard() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("helm/sidejoin/dashboards/sidejoin.json");
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// Every `expr` of every panel target, however deeply nested (rows may hold panels).
fn exprs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("expr", Value::String(s)) => out.push(s.clone()),
                    _ => exprs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| exprs(x, out)),
        _ => {}
    }
}

fn ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The `sidejoin_*` metric names in a PromQL expression.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = expr;
    while let Some(i) = rest.find("sidejoin_") {
        let before = rest[..i].chars().last();
        let name: String = rest[i..].chars().take_while(|c| ident(*c)).collect();
        if !before.is_some_and(ident) {
            names.insert(name.clone());
        }
        rest = &rest[i + name.len()..];
    }
    names
}

/// The labels of every `by (...)` / `without (...)` clause.
fn grouping_labels(expr: &str) -> BTreeSet<String> {
    let mut labels = BTreeSet::new();
    for kw in ["by", "without"] {
        let mut rest = expr;
        while let Some(i) = rest.find(kw) {
            let before = rest[..i].chars().last();
            let after = rest[i + kw.len()..].trim_start();
            if !before.is_some_and(ident) && after.starts_with('(') {
                let inner = &after[1..after.find(')').unwrap_or(after.len())];
                labels.extend(inner.split(',').map(|l| l.trim().to_owned()));
            }
            rest = &rest[i + kw.len()..];
        }
    }
    labels.retain(|l| !l.is_empty());
    labels
}

/// A `/metrics` body as family name → (type, label names of its samples).
fn families(body: &str) -> BTreeMap<String, (String, BTreeSet<String>)> {
    let mut out: BTreeMap<String, (String, BTreeSet<String>)> = BTreeMap::new();
    for line in body.lines() {
        if let Some(t) = line.strip_prefix("# TYPE ") {
            let mut it = t.split_whitespace();
            if let (Some(n), Some(ty)) = (it.next(), it.next()) {
                out.entry(n.to_owned()).or_default().0 = ty.to_owned();
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let name: String = line.chars().take_while(|c| ident(*c)).collect();
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    let base = name.strip_suffix(s)?;
                    (out.get(base).map(|f| f.0.as_str()) == Some("histogram")).then_some(base)
                })
                .unwrap_or(&name)
                .to_owned();
            let labels = line[name.len()..]
                .strip_prefix('{')
                .and_then(|l| l.split_once('}'))
                .map(|(l, _)| l)
                .unwrap_or("");
            let entry = out.entry(family).or_default();
            for pair in labels.split(',').filter(|p| !p.is_empty()) {
                if let Some((k, _)) = pair.split_once('=') {
                    entry.1.insert(k.to_owned());
                }
            }
        }
    }
    out
}

/// The family a dashboard name belongs to: histograms are queried by their series.
fn family_of<'a>(
    name: &'a str,
    exported: &BTreeMap<String, (String, BTreeSet<String>)>,
) -> &'a str {
    for s in ["_bucket", "_sum", "_count"] {
        if let Some(base) = name.strip_suffix(s) {
            if exported.get(base).is_some_and(|f| f.0 == "histogram") {
                return base;
            }
        }
    }
    name
}

fn wait_until(sj: &mut Sidejoin, what: &str, ok: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let (_, body) = sj.get("/metrics");
        if ok(&body) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what} never appeared on /metrics:\n{body}\nlogs:\n{}",
            sj.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A positive sample of `name` (any labels).
fn has_positive(body: &str, name: &str) -> bool {
    body.lines().any(|l| {
        l.starts_with(name)
            && l[name.len()..].starts_with(['{', ' '])
            && l.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) > Some(0.0)
    })
}

fn start(name: &str, extra: &[(&str, &str)]) -> (Sidejoin, String, String) {
    let (left, right, out) = kafka::join_topics(name, [2, 2, 1]);
    let app = kafka::unique(&format!("{name}-app"));
    let mut env = kafka::base_env(&app, &left, &right, &out);
    for (k, v) in [("SIDEJOIN_LEFT_KEY", "id"), ("SIDEJOIN_RIGHT_KEY", "id")]
        .iter()
        .chain(extra)
    {
        env.push((k.to_string(), v.to_string()));
    }
    let mut sj = Sidejoin::start("run", &env);
    sj.wait_ready(WAIT);
    (sj, left, right)
}

/// A regular left join without generated retractions: unmatched, then matched, rows, a dedup
/// drop, an identical update and an undecodable record (to the dead-letter topic).
fn regular_join() -> Sidejoin {
    let (mut sj, left, right) = start(
        "dash",
        &[
            ("SIDEJOIN_JOIN_TYPE", "left"),
            ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", "false"),
            ("SIDEJOIN_RIGHT_PRIMARY_KEY", "id"),
            ("SIDEJOIN_DEDUP_RIGHT", "true"),
            ("SIDEJOIN_SELECT", "l.id AS id, l.v AS v, r.w AS w"),
        ],
    );
    let p = kafka::producer();
    let t = kafka::now_ms();
    let key = |i: u32| format!("{{\"id\":{i}}}");
    let mut records = Vec::new();
    for i in 0..6u32 {
        records.push((
            left.clone(),
            Some(key(i)),
            Some(format!("{{\"id\":{i},\"v\":\"l{i}\"}}")),
            t,
        ));
    }
    kafka::produce_many(&p, &records);
    sj.wait_records_in(6, WAIT);
    records.clear();
    for i in 0..4u32 {
        let v = format!("{{\"id\":{i},\"w\":{i}}}");
        records.push((right.clone(), Some(key(i)), Some(v.clone()), t + 1));
        // The same row again: dropped (identical update / dedup).
        records.push((right.clone(), Some(key(i)), Some(v), t + 2));
    }
    records.push((
        left.clone(),
        Some(key(9)),
        Some("{not json".to_owned()),
        t + 3,
    ));
    kafka::produce_many(&p, &records);
    sj.wait_records_in(15, WAIT);
    wait_until(&mut sj, "consumer lag, latency and commits", |b| {
        b.contains("sidejoin_consumer_lag{")
            && has_positive(b, "sidejoin_end_to_end_latency_seconds_count")
            && has_positive(b, "sidejoin_commit_duration_seconds_count")
            && has_positive(b, "sidejoin_dlq_records_total")
    });
    sj
}

/// An interval left join: matched rows, a row padded once the watermark passes it, a late one.
fn interval_join() -> Sidejoin {
    let (mut sj, left, right) = start(
        "dashiv",
        &[
            ("SIDEJOIN_JOIN_TYPE", "left"),
            ("SIDEJOIN_INTERVAL_LOWER", "-1s"),
            ("SIDEJOIN_INTERVAL_UPPER", "1s"),
            ("SIDEJOIN_IDLE_TIMEOUT", "1s"),
            ("SIDEJOIN_OUTPUT_MODE", "append"),
        ],
    );
    let p = kafka::producer();
    let t = kafka::now_ms() - 60_000;
    let rec = |topic: &str, id: u32, ts: i64| {
        (
            topic.to_owned(),
            Some(format!("{{\"id\":{id}}}")),
            Some(format!("{{\"id\":{id}}}")),
            ts,
        )
    };
    kafka::produce_many(
        &p,
        &[
            rec(&left, 1, t),
            rec(&right, 1, t + 500),
            rec(&left, 2, t + 1000),
            rec(&left, 3, t + 30_000),
            rec(&right, 3, t + 30_000),
            // Long past the watermark: late.
            rec(&left, 4, t),
        ],
    );
    sj.wait_records_in(6, WAIT);
    wait_until(&mut sj, "watermarks", |b| {
        b.contains("sidejoin_watermark_ms{")
    });
    sj
}

#[test]
fn dashboard_queries_only_exported_metrics() {
    let mut queries = Vec::new();
    exprs(&dashboard(), &mut queries);
    assert!(
        queries.len() > 10,
        "the dashboard has {} queries",
        queries.len()
    );

    let mut regular = regular_join();
    let mut interval = interval_join();
    let mut exported = families(&regular.get("/metrics").1);
    for (name, (ty, labels)) in families(&interval.get("/metrics").1) {
        let e = exported.entry(name).or_default();
        e.0 = ty;
        e.1.extend(labels);
    }

    let mut referenced = BTreeSet::new();
    let mut problems = Vec::new();
    for q in &queries {
        let names = metric_names(q);
        assert!(
            !names.is_empty(),
            "a dashboard query reads no sidejoin metric: {q}"
        );
        let mut labels_here: BTreeSet<String> = ["instance", "job", "le"].map(String::from).into();
        for n in &names {
            let family = family_of(n, &exported);
            referenced.insert(family.to_owned());
            match exported.get(family) {
                Some((_, labels)) => labels_here.extend(labels.iter().cloned()),
                None => problems.push(format!("{n} is not on /metrics (query: {q})")),
            }
        }
        for l in grouping_labels(q) {
            if !labels_here.contains(&l) {
                problems.push(format!("label {l:?} is on none of {names:?} (query: {q})"));
            }
        }
    }
    for r in REQUIRED {
        if !referenced.contains(*r) {
            problems.push(format!("the dashboard shows no {r}"));
        }
    }
    assert!(
        problems.is_empty(),
        "dashboard problems:\n  {}\nexported: {:?}",
        problems.join("\n  "),
        exported.keys().collect::<Vec<_>>()
    );
    println!(
        "dashboard: {} queries over {} metrics, all exported",
        queries.len(),
        referenced.len()
    );
    for sj in [&mut regular, &mut interval] {
        sj.signal("TERM");
        assert_eq!(sj.wait(WAIT), 0, "{}", sj.logs());
    }
}

#[test]
fn metric_names_and_labels_are_read_from_promql() {
    let q = "histogram_quantile(0.99, sum by (le) (rate(sidejoin_commit_duration_seconds_bucket{job=~\"$job\"}[5m]))) / sum without (side,reason) (xsidejoin_no)";
    assert_eq!(
        metric_names(q),
        ["sidejoin_commit_duration_seconds_bucket".to_owned()].into()
    );
    assert_eq!(
        grouping_labels(q),
        ["le", "reason", "side"].map(String::from).into()
    );
}
