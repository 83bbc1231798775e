//! sidejoin's pure core: rows and their JSON text (`row`), the shared vocabulary (`change`), input
//! formats (`format`, `avro` datum codecs), the join engine (`engine`), output modes (`sink`), one
//! record through all of them (`pipeline`), and `replay`, which drives the pipeline from a file.
//!
//! Nothing here does I/O besides replay's reader and writer: no Kafka, no RocksDB, no async
//! runtime, no clock, no randomness. The Kafka runtime (the `sidejoin` binary) and the RocksDB
//! store (`sidejoin-store`) are edges around it.

/// The settings this core is configured by (the `sidejoin-config` crate).
pub use sidejoin_config as config;

pub mod avro;
pub mod change;
pub mod copartition;
pub mod engine;
pub mod format;
pub mod partitioner;
pub mod pipeline;
pub mod replay;
pub mod routing;
pub mod row;
pub mod sink;
pub mod stats;

#[cfg(test)]
mod test_time;
