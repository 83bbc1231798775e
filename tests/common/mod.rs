//! Shared test helpers: golden replay fixtures, output comparison in the sense of SPEC §10
//! ("the same changes per cause as multisets, rows compared as JSON objects"), and the engine
//! property suite. Every suite is generic over a `JoinState` factory so any store can run it.
#![allow(dead_code)]

pub(crate) mod avro;
pub(crate) mod bin;
pub(crate) mod compare;
pub(crate) mod fixtures;
pub(crate) mod interval_props;
pub(crate) mod join_env;
pub(crate) mod kafka;
pub(crate) mod kills;
pub(crate) mod process;
pub(crate) mod props;
pub(crate) mod props_cases;
pub(crate) mod reference;
pub(crate) mod rocks;
pub(crate) mod secure;
pub(crate) mod star_cases;
pub(crate) mod star_props;
pub(crate) mod upsert;
