//! sidejoin: joins two Kafka topics with Flink SQL stream-join semantics, without the retraction
//! flood. This crate is the binary's edge around the pure core (`sidejoin-core`) and the RocksDB
//! store (`sidejoin-store`): the Kafka runtime (`runtime`, `kafka`), the schema registry
//! (`avro`), metrics and HTTP, and `sidejoin check`.

pub use sidejoin_config as config;
pub use sidejoin_config::sql;
pub use sidejoin_core::{
    change, copartition, engine, format, partitioner, pipeline, replay, routing, row, sink, stats,
};
pub use sidejoin_store as store;

mod avro;
mod backoff;
pub mod check;
mod check_star;
mod http;
mod kafka;
pub mod metrics;
mod plan;
pub mod runtime;
