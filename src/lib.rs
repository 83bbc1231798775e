//! sidejoin: joins two Kafka topics with Flink SQL stream-join semantics, without the retraction
//! flood. The engine (`engine`) is pure; formats, output modes, replay, Kafka (`runtime`, `kafka`),
//! metrics and HTTP are edges around it.

pub mod avro;
pub mod changelog;
pub mod check;
pub mod config;
pub mod copartition;
pub mod engine;
pub mod format;
pub mod http;
pub mod kafka;
pub mod metrics;
pub mod pipeline;
pub mod repartition;
pub mod replay;
pub mod row;
pub mod runtime;
pub mod sink;
pub mod sql;
pub mod stats;
pub mod store;
