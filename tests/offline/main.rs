//! The offline tier: tests that need neither Kafka nor a schema registry (replay fixtures, the
//! engine's property suites on memory and RocksDB state, configuration and SQL errors through
//! the binary). `cargo test` runs it.

#[path = "../common/mod.rs"]
mod common;

mod config_errors;
mod decoder_hardening;
mod engine_props;
mod golden;
mod interval;
mod interval_csv_registry_errors;
mod rocksdb_state;
mod secrets;
mod sql_check;
mod sql_errors;
mod sql_placement;
mod star_errors;
mod star_props;
mod star_replay;
