//! The broker-outage tier: the one test that stops the broker every other test uses
//! (`kafka_broker_restart`), so it has a binary of its own — cargo runs test binaries one at a
//! time, never beside the broker tier. Built only with the `broker-tests` feature.

#[path = "../common/mod.rs"]
mod common;

mod kafka_broker_restart;
