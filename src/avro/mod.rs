//! Avro in the Confluent wire format, with a Confluent-compatible schema registry (SPEC §2, §5).
//!
//! Input: `input` turns framed Avro keys and values into the JSON text the JSON decoders read,
//! with writer schemas fetched by id (`schemas`, `registry`) and mapped to JSON as `json` says.
//! Nothing past the decoders knows a record was Avro. Replay takes Avro records as JSON already
//! and never comes here.
//!
//! Output: `output` registers the output schemas at start and re-encodes the JSON records the
//! output modes build (`encode`); replay prints JSON whatever the output format.

pub(crate) mod input;
pub(crate) mod output;
pub(crate) mod registry;
pub(crate) mod schemas;
pub(crate) mod subjects;

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::backoff::Backoff;

use crate::change::Side;
use crate::config::{Config, Envelope};
use crate::format::DecodeError;
use registry::{Registry, RegistryError};
use schemas::SchemaCache;

/// Why Avro could not be set up at start (its messages are the user's to act on).
#[derive(Debug, Clone, thiserror::Error)]
pub enum AvroSetupError {
    /// A setting is missing or unusable (the registry's URL or CA file, the output schema).
    #[error("{0}")]
    Setting(String),
    /// The registry refused a request (credentials, an incompatible schema).
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A schema the registry holds, or the one sidejoin derived, cannot be used.
    #[error("{0}")]
    Schema(String),
}

/// The Avro decoding of the sides whose format is Avro.
pub(crate) struct AvroInput {
    schemas: SchemaCache,
    /// The envelope of each Avro input, in input order; `None` for a JSON one.
    envelopes: Vec<Option<Envelope>>,
    scratch: input::Decoded,
}

impl AvroInput {
    /// `None` when neither side is Avro. Fails when the registry cannot be set up (its CA file).
    pub(crate) fn new(config: &Config) -> Result<Option<Self>, AvroSetupError> {
        let envelope = |side: Side| {
            let s = config.join.side(side);
            s.format.is_avro().then(|| s.format.envelope())
        };
        let envelopes: Vec<Option<Envelope>> = config.join.inputs().map(envelope).collect();
        if envelopes.iter().all(Option::is_none) {
            return Ok(None);
        }
        let spec = config.kafka.registry.as_ref().ok_or_else(|| {
            AvroSetupError::Setting("Avro input needs SIDEJOIN_SCHEMA_REGISTRY_URL".into())
        })?;
        Ok(Some(AvroInput {
            schemas: SchemaCache::new(Registry::new(spec)?),
            envelopes,
            scratch: input::Decoded::default(),
        }))
    }

    /// Is `side` Avro?
    pub(crate) fn is_avro(&self, side: Side) -> bool {
        self.envelopes
            .get(side.index())
            .is_some_and(Option::is_some)
    }

    /// The JSON key and value of an Avro record of `side` (which must be Avro).
    pub(crate) fn decode<'s>(
        &'s mut self,
        side: Side,
        key: Option<&'s [u8]>,
        value: Option<&[u8]>,
    ) -> Result<input::JsonRecord<'s>, DecodeError> {
        let envelope = self.envelopes[side.index()].expect("an Avro side");
        self.scratch.decode(&mut self.schemas, envelope, key, value)
    }

    /// Waits until the registry answers (SPEC §8: unreachable → retry with backoff, not ready,
    /// log clearly); `false` when `shutdown` came first.
    pub(crate) fn wait_for_registry(
        &self,
        shutdown: &CancellationToken,
    ) -> Result<bool, AvroSetupError> {
        wait_for(self.schemas.registry(), shutdown)
    }
}

/// Pings `registry` until it answers, with backoff; `Ok(false)` when cancelled, `Err` when it
/// refuses (e.g. bad credentials).
pub(crate) fn wait_for(
    registry: &Registry,
    shutdown: &CancellationToken,
) -> Result<bool, AvroSetupError> {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    let mut attempts = 0u32;
    loop {
        match registry.ping() {
            Ok(()) => {
                if attempts > 0 {
                    tracing::info!("schema registry {} is reachable", registry.url());
                }
                return Ok(true);
            }
            Err(e @ RegistryError::Unavailable(_)) => {
                attempts += 1;
                tracing::warn!(
                    "{e}; not ready, retrying in {:?} (attempt {attempts}; SIDEJOIN_SCHEMA_REGISTRY_URL)",
                    backoff.next()
                );
            }
            Err(e) => return Err(e.into()),
        }
        if !backoff.wait(shutdown) {
            return Ok(false);
        }
    }
}
