//! The metrics reference, `docs/src/reference/metrics.md`, rendered from the metrics `Metrics`
//! registers (name, type, labels and help text, as `/metrics` shows them) under a hand-written
//! introduction: the label values and how several workers add up.
//!
//! A test fails when the page on disk is not what is rendered here, so a metric added, renamed or
//! re-described without the page regenerated (`UPDATE_DOCS=1 cargo test --release -p sidejoin
//! --lib metrics::reference`) fails the tests.

use super::Metrics;

/// The page's path in the repository.
pub const PAGE: &str = "docs/src/reference/metrics.md";

const INTRO: &str = "\
# Metrics

<!-- Generated from the metrics src/metrics.rs registers, by src/metrics/reference.rs: do not
     edit; run UPDATE_DOCS=1 cargo test --release -p sidejoin --lib metrics::reference -->

sidejoin serves Prometheus metrics at `GET /metrics` on `SIDEJOIN_HTTP_ADDR` (default
`0.0.0.0:9464`), beside `/healthz` (the process is alive) and `/readyz` (200 once the assigned
partitions are restored, a broker is reachable and no checkpoint has waited on Kafka for over
5 s). The table below is generated from the metrics the binary registers — their names, types,
labels and help texts are the ones `/metrics` shows — and a test fails when it and the code
differ.

Labels stay low-cardinality, never keys or offsets:

| label | values |
|---|---|
| `side` | `left`, `right`; a star join also `dim2` … `dim7` (its further dimensions) |
| `op` | `+I`, `-U`, `+U`, `-D`: changes by kind, counted before the output mode folds them |
| `reason` of `sidejoin_input_dropped_total` | `tombstone`, `unknown_key`, `not_in_state`, `identical_update`, `parse_error` (csv with `csv.ignore-parse-errors`) |
| `reason` of `sidejoin_unmatched_emitted_total` | `watermark`, `late`, `max_wait` |
| `result` of `sidejoin_repartition_records_total` | `in`, `out`, `error` |
| `result` of `sidejoin_transactions_total` | `committed`, `aborted` |
| `phase` of `sidejoin_checkpoint_phase_seconds` | `seal`, `output`, `offsets`, `commit`, `wait`, `persist`: the steps of the [durability protocol](../operations/durability.md), in order (`output`, `offsets` and `commit` run while the next checkpoint is processed; `wait` is how long the worker waited for them) |
| `reason` of `sidejoin_poison_records_total` | `panic` (processing the record panicked), `oversized_output` (it caused an output record over the producer's `message.max.bytes`), `oversized_release` (an output record released by processing time, over that limit: dropped) |
| `topic`, `partition` of `sidejoin_consumer_lag` | each input partition: the topics, the repartition topic of a `SIDEJOIN_<SIDE>_HASH_BY` side (and the router's source topic), the broadcast topic (the task furthest behind) |

With several workers (`SIDEJOIN_WORKERS`) no metric has a worker label: counters add up each
worker's own change, `sidejoin_state_rows` is the sum over the workers, `sidejoin_watermark_ms`
the lowest watermark any worker reported, `sidejoin_brokers_up` the fewest brokers any worker's
consumer reaches, and `sidejoin_ready` is 1 when every worker is ready. Alert on any increase of
`sidejoin_copartition_violations_total`: the output is then wrong (see
[Running against Kafka](../operations/kafka.md#co-partitioning)); and of
`sidejoin_poison_records_total`: a record crashed the join or its output did not fit (see
[Poison records](../operations/kafka.md#poison-records)). The Helm chart's Grafana
dashboard (`helm/sidejoin/dashboards/sidejoin.json`) is checked against a live `/metrics` by
`tests/broker/dashboard_metrics.rs`.

| metric | type | labels | meaning |
|---|---|---|---|
";

/// The metrics reference as Markdown: the page `PAGE` holds.
pub fn markdown() -> String {
    let mut page = INTRO.to_owned();
    for m in Metrics::new(1).described() {
        let labels: Vec<String> = m.labels.iter().map(|l| format!("`{l}`")).collect();
        page.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            m.name,
            m.kind,
            labels.join(", "),
            m.help
                .replace('|', "\\|")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        ));
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_page_is_current() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/reference/metrics.md");
        let want = markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).expect("write the metrics reference");
            return;
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        let metrics = Metrics::new(1);
        let missing: Vec<&str> = metrics
            .described()
            .iter()
            .map(|m| m.name.as_str())
            .filter(|name| !have.contains(&format!("| `{name}` |")))
            .collect();
        assert!(
            missing.is_empty(),
            "metrics registered in src/metrics.rs but missing from {PAGE}: {missing:?}; run \
             `UPDATE_DOCS=1 cargo test --release -p sidejoin --lib metrics::reference` to regenerate it"
        );
        assert!(
            have == want,
            "{PAGE} is not what src/metrics/reference.rs renders from the registered metrics; run \
             `UPDATE_DOCS=1 cargo test --release -p sidejoin --lib metrics::reference` to regenerate it"
        );
    }

    #[test]
    fn every_metric_is_described_once() {
        let described = Metrics::new(1).described().to_vec();
        let mut names: Vec<&str> = described.iter().map(|m| m.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), described.len());
        assert!(described
            .iter()
            .all(|m| m.kind != "untyped" && !m.help.is_empty()));
    }
}
