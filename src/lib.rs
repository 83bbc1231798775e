//! sidejoin: joins two Kafka topics with Flink SQL stream-join semantics, without the retraction
//! flood. The engine (`engine`) is pure; formats, output modes, replay and (later) Kafka, RocksDB
//! and HTTP are edges around it.

pub mod changelog;
pub mod config;
pub mod engine;
pub mod format;
pub mod pipeline;
pub mod replay;
pub mod sink;
pub mod stats;
