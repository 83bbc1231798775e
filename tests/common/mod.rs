//! Shared test helpers: golden replay fixtures, output comparison in the sense of SPEC §10
//! ("the same changes per cause as multisets, rows compared as JSON objects"), and the engine
//! property suite. Every suite is generic over a `JoinState` factory so any store can run it.
#![allow(dead_code)]

pub mod avro;
pub mod bin;
pub mod compare;
pub mod fixtures;
pub mod interval_props;
pub mod kafka;
pub mod kills;
pub mod process;
pub mod props;
pub mod props_cases;
pub mod reference;
pub mod rocks;
pub mod upsert;
