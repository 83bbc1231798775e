//! The input subjects' row schemas (`<topic>-value`, the `after` record of a Debezium
//! envelope): what the Avro output schema is derived from and what a repartitioned Avro side's
//! hashed columns are checked against. Waits while a subject is not registered yet.

use std::time::Duration;

use apache_avro::schema::{RecordSchema, Schema};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::registry::{Registry, RegistryError};
use super::AvroSetupError;
use crate::backoff::Backoff;
use crate::change::Side;
use crate::config::{Config, Envelope};

/// The latest schema of `subject`, waiting (not ready, with backoff and a log line) while the
/// registry is unreachable or the subject is not registered yet — a producer that has not
/// written its first record; `None` when `shutdown` came first.
fn latest_when_there(
    registry: &Registry,
    subject: &str,
    shutdown: &CancellationToken,
) -> Result<Option<String>, AvroSetupError> {
    let mut backoff = Backoff::new(Duration::from_millis(200), Duration::from_secs(5));
    loop {
        match registry.latest(subject) {
            Ok(text) => return Ok(Some(text)),
            Err(e @ (RegistryError::NotFound(_) | RegistryError::Unavailable(_))) => {
                tracing::warn!(
                    "waiting for the input subject {subject} (the output Avro schema is derived from it, and a \
                     repartitioned side's columns checked against it): {e}; not ready, retrying in {:?}",
                    backoff.next()
                );
            }
            Err(e) => {
                return Err(AvroSetupError::Schema(format!(
                    "reading the input subject {subject}: {e}"
                )))
            }
        }
        if !backoff.wait(shutdown) {
            return Ok(None);
        }
    }
}

/// The record schema of `side`'s rows in the latest schema of its subject (the `after` record
/// of a Debezium envelope); `None` when `shutdown` came first.
pub(super) fn row_record(
    config: &Config,
    registry: &Registry,
    side: Side,
    shutdown: &CancellationToken,
) -> Result<Option<RecordSchema>, AvroSetupError> {
    let spec = config.join.side(side);
    let subject = format!("{}-value", spec.topic.as_deref().unwrap_or_default());
    let Some(text) = latest_when_there(registry, &subject, shutdown)? else {
        return Ok(None);
    };
    let parsed =
        Schema::parse_str(&text).map_err(|e| AvroSetupError::Schema(format!("{subject}: {e}")))?;
    Ok(Some(match spec.format.envelope() {
        Envelope::Debezium => debezium_row(&parsed, &subject)?,
        _ => match parsed {
            Schema::Record(r) => r,
            _ => {
                return Err(AvroSetupError::Schema(format!(
                    "{subject} is not a record schema"
                )))
            }
        },
    }))
}

/// The top-level columns of `side`'s rows as the latest schema of its subject declares them;
/// `None` when `shutdown` came first.
pub(crate) fn row_fields(
    config: &Config,
    registry: &Registry,
    side: Side,
    shutdown: &CancellationToken,
) -> Result<Option<Vec<String>>, AvroSetupError> {
    let record = row_record(config, registry, side, shutdown)?;
    Ok(record.map(|r| r.fields.iter().map(|f| f.name.clone()).collect()))
}

/// The row record of a Debezium envelope schema: `after`'s record branch.
fn debezium_row(schema: &Schema, subject: &str) -> Result<RecordSchema, AvroSetupError> {
    let Schema::Record(envelope) = schema else {
        return Err(AvroSetupError::Schema(format!(
            "{subject} is not a Debezium envelope record"
        )));
    };
    let after = envelope
        .fields
        .iter()
        .find(|f| f.name == "after" || f.name == "before")
        .ok_or_else(|| AvroSetupError::Schema(format!("{subject} has no before/after field")))?;
    let branches: Vec<&Schema> = match &after.schema {
        Schema::Union(u) => u.variants().iter().collect(),
        s => vec![s],
    };
    // `after` usually refers to the record `before` defined: resolve it by name.
    let before = envelope.fields.iter().find(|f| f.name == "before");
    for b in branches.into_iter().chain(before.map(|f| &f.schema)) {
        match b {
            Schema::Record(r) => return Ok(r.clone()),
            Schema::Union(u) => {
                if let Some(Schema::Record(r)) =
                    u.variants().iter().find(|v| matches!(v, Schema::Record(_)))
                {
                    return Ok(r.clone());
                }
            }
            _ => {}
        }
    }
    Err(AvroSetupError::Schema(format!(
        "{subject}: no record in before/after"
    )))
}

/// A record's fields as Avro JSON.
pub(super) fn fields_json(record: &RecordSchema) -> Result<Value, AvroSetupError> {
    let v = serde_json::to_value(Schema::Record(record.clone()))
        .map_err(|e| AvroSetupError::Schema(e.to_string()))?;
    Ok(v["fields"].clone())
}
