//! The registry tier: Avro end to end against a real broker and a real schema registry
//! (Apicurio, `scripts/registry.sh with-registry`, named in `TEST_REGISTRY_URL`). Built only
//! with the `registry-tests` feature (`scripts/test.sh` enables it).

#[path = "../common/mod.rs"]
mod common;

mod avro_e2e;
mod avro_errors;
mod avro_output;
mod avro_registry_faults;
mod registry_security;
