//! The broker tier: tests against a real Apache Kafka broker, which `scripts/test.sh` starts
//! (`scripts/kafka.sh with-broker`) and names in `TEST_KAFKA_BOOTSTRAP`. Built only with the
//! `broker-tests` feature (`scripts/test.sh` enables it).

#[path = "../common/mod.rs"]
mod common;

mod dashboard_metrics;
mod kafka_broadcast;
mod kafka_changelog;
mod kafka_copartition;
mod kafka_corrupt_state;
mod kafka_crash;
mod kafka_e2e;
mod kafka_errors;
mod kafka_identity;
mod kafka_instances;
mod kafka_many_matches;
mod kafka_pipelined;
mod kafka_placement;
mod kafka_poison;
mod kafka_repartition;
mod kafka_repartition_kills;
mod kafka_security;
mod kafka_shutdown;
mod kafka_sql;
mod kafka_star;
mod kafka_star_placed;
mod kafka_startup;
mod kafka_static_membership;
mod kafka_watchdog;
mod kafka_workers;
