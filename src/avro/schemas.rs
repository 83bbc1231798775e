//! Writer schemas by id, fetched from the registry once and cached for the life of the process
//! (a registered id never changes its schema). Unknown ids are remembered for a while so that a
//! stream of records with forged ids does not turn into a stream of registry requests; an
//! unreachable registry (or a 5xx for one id) is retried with backoff, blocking the caller, for
//! `SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT` at most: then the lookup fails and the record follows
//! `SIDEJOIN_ON_ERROR` like any record whose schema cannot be had (dead-lettered by default,
//! with the reason), and the id is answered from memory for `UNKNOWN_TTL`. Retrying forever
//! would hang the processing thread unseen, deaf to SIGTERM; a bound keeps the worker moving
//! and the failure visible.

use std::sync::Arc;
use std::time::{Duration, Instant};

use apache_avro::Schema;
use rustc_hash::FxHashMap;

use super::registry::{Registry, RegistryError};
pub(crate) use sidejoin_core::avro::schema::WriterSchema;

/// How long an id the registry does not know is answered from memory.
const UNKNOWN_TTL: Duration = Duration::from_secs(30);
/// At most this many unknown ids are remembered (forged ids are unbounded).
const UNKNOWN_MAX: usize = 10_000;
const BACKOFF_MIN: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Why a record's writer schema cannot be had: an id the registry does not know, or a schema that
/// is not valid Avro (the message names the id).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub(crate) struct SchemaUnavailable(String);

pub(crate) struct SchemaCache {
    registry: Registry,
    known: FxHashMap<u32, Arc<WriterSchema>>,
    unknown: FxHashMap<u32, (Instant, SchemaUnavailable)>,
}

impl SchemaCache {
    pub(crate) fn new(registry: Registry) -> Self {
        SchemaCache {
            registry,
            known: FxHashMap::default(),
            unknown: FxHashMap::default(),
        }
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The schema `id`, or why there is none (unknown id, not a valid Avro schema).
    pub(crate) fn get(&mut self, id: u32) -> Result<Arc<WriterSchema>, SchemaUnavailable> {
        if let Some(s) = self.known.get(&id) {
            return Ok(s.clone());
        }
        if let Some((at, why)) = self.unknown.get(&id) {
            if at.elapsed() < UNKNOWN_TTL {
                return Err(why.clone());
            }
        }
        match self.fetch(id) {
            Ok(s) => {
                self.unknown.remove(&id);
                self.known.insert(id, s.clone());
                Ok(s)
            }
            Err(why) => {
                if self.unknown.len() >= UNKNOWN_MAX {
                    self.unknown.clear();
                }
                self.unknown.insert(id, (Instant::now(), why.clone()));
                Err(why)
            }
        }
    }

    fn fetch(&self, id: u32) -> Result<Arc<WriterSchema>, SchemaUnavailable> {
        let budget = Some(self.registry.retry_budget());
        let text = retry(&format!("fetching schema id {id}"), budget, || {
            self.registry.schema_by_id(id)
        })
        .map_err(|e| {
            SchemaUnavailable(match e {
                RegistryError::NotFound(m) => format!("unknown schema id {id} (registry: {m})"),
                other => format!("schema id {id}: {other}"),
            })
        })?;
        let schema = Schema::parse_str(&text).map_err(|e| {
            SchemaUnavailable(format!("schema id {id} is not a valid Avro schema: {e}"))
        })?;
        WriterSchema::new(schema)
            .map(Arc::new)
            .map_err(|e| SchemaUnavailable(format!("schema id {id} {e}")))
    }
}

/// Runs `request` until it succeeds or fails for a reason retrying will not change, waiting
/// with exponential backoff (capped) and logging while the registry is unavailable; with a
/// `budget`, gives up (the last error, saying so) once the next wait would end past it.
pub(crate) fn retry<T>(
    what: &str,
    budget: Option<Duration>,
    mut request: impl FnMut() -> Result<T, RegistryError>,
) -> Result<T, RegistryError> {
    let started = Instant::now();
    let mut wait = BACKOFF_MIN;
    let mut attempts = 0u32;
    loop {
        match request() {
            Err(RegistryError::Unavailable(e))
                if budget.is_some_and(|b| started.elapsed() + wait > b) =>
            {
                let secs = started.elapsed().as_secs_f64();
                tracing::warn!("{what}: {e}; giving up after {attempts} retries in {secs:.1} s (SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT)");
                return Err(RegistryError::Unavailable(format!(
                    "{e} (gave up after {attempts} retries in {secs:.1} s: SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT)"
                )));
            }
            Err(e) if e.is_retryable() => {
                attempts += 1;
                if attempts == 1 || attempts.is_power_of_two() {
                    tracing::warn!("{what}: {e}; retrying (attempt {attempts}, next in {wait:?})");
                }
                std::thread::sleep(wait);
                wait = (wait * 2).min(BACKOFF_MAX);
            }
            other => {
                if attempts > 0 && other.is_ok() {
                    tracing::info!("{what}: the schema registry answered after {attempts} retries");
                }
                return other;
            }
        }
    }
}
