//! Registering a metric and describing it for the reference (`reference`): every metric is made
//! through these helpers, so the reference cannot miss one.

use std::cell::RefCell;

use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// One metric as the reference describes it: its name, type, labels and help text.
#[derive(Debug, Clone)]
pub struct Described {
    pub name: String,
    /// `counter`, `gauge` or `histogram`.
    pub kind: &'static str,
    pub labels: Vec<String>,
    pub help: String,
}

/// The registry being filled, and what was registered in it.
pub(super) struct Catalog {
    pub(super) registry: Registry,
    pub(super) described: RefCell<Vec<Described>>,
}

pub(super) fn counter_vec(r: &Catalog, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    registered(r, IntCounterVec::new(Opts::new(name, help), labels))
}

pub(super) fn counter(r: &Catalog, name: &str, help: &str) -> IntCounter {
    registered(r, IntCounter::new(name, help))
}

pub(super) fn gauge_vec(r: &Catalog, name: &str, help: &str, labels: &[&str]) -> IntGaugeVec {
    registered(r, IntGaugeVec::new(Opts::new(name, help), labels))
}

/// A metric made (its name and help are constants, so valid), registered in `r` and described.
pub(super) fn registered<M: prometheus::core::Collector + Clone + 'static>(
    r: &Catalog,
    metric: prometheus::Result<M>,
) -> M {
    use prometheus::proto::MetricType;
    let m = metric.expect("valid metric");
    let kind = match m.collect().first().map(|f| f.get_field_type()) {
        Some(MetricType::COUNTER) => "counter",
        Some(MetricType::GAUGE) => "gauge",
        Some(MetricType::HISTOGRAM) => "histogram",
        _ => "untyped",
    };
    for d in m.desc() {
        r.described.borrow_mut().push(Described {
            name: d.fq_name.clone(),
            kind,
            labels: d.variable_labels.clone(),
            help: d.help.clone(),
        });
    }
    r.registry
        .register(Box::new(m.clone()))
        .expect("metric registered once");
    m
}

pub(super) fn histogram(r: &Catalog, name: &str, help: &str, buckets: Vec<f64>) -> Histogram {
    registered(
        r,
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets)),
    )
}

pub(super) fn histogram_vec(
    r: &Catalog,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: Vec<f64>,
) -> HistogramVec {
    registered(
        r,
        HistogramVec::new(HistogramOpts::new(name, help).buckets(buckets), labels),
    )
}
