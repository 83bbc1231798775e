//! Input formats (SPEC §2): a record's key and value, already parsed to JSON, become one engine
//! `Event` (or nothing, for a skipped tombstone). Byte-level parsing (JSON text, and later Avro)
//! happens before this, so replay, which reads records as JSON, runs the same code as `run`.
//!
//! Decoders never look at state; primary-key normalisation happens in the engine.

mod debezium;
mod plain;
mod time;
mod upsert;

pub use time::parse_time;

use serde_json::Value;

use crate::changelog::{Event, Row};
use crate::config::{Envelope, SideSpec};

/// Why a record could not be decoded; the message names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

impl DecodeError {
    pub fn new(msg: impl Into<String>) -> Self {
        DecodeError(msg.into())
    }
}

/// Turns a record into an event of `side`; `Ok(None)` is a tombstone to skip (and count).
pub fn decode(
    side: &SideSpec,
    key: Option<Value>,
    value: Option<Value>,
) -> Result<Option<Event>, DecodeError> {
    match side.format.envelope() {
        Envelope::Plain => plain::decode(value),
        Envelope::Upsert => {
            upsert::decode(side.primary_key.as_deref().unwrap_or_default(), key, value)
        }
        Envelope::Debezium => debezium::decode(side.primary_key.is_some(), value),
    }
}

/// Parses a Kafka record's bytes the way `side`'s format reads them: the value as JSON (absent =
/// tombstone); the key only where the format uses it (upsert formats), as JSON or, when it is
/// not JSON, as a plain string (a `StringSerializer` key of a one-column primary key).
pub fn parse_record(
    side: &SideSpec,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<(Option<Value>, Option<Value>), DecodeError> {
    let value = value
        .map(|v| parse_json(v, "the record value"))
        .transpose()?;
    let key = match (side.format.envelope(), key) {
        (Envelope::Upsert, Some(k)) => Some(serde_json::from_slice(k).or_else(|_| {
            std::str::from_utf8(k)
                .map(|s| Value::String(s.to_owned()))
                .map_err(|_| DecodeError::new("the record key is neither JSON nor UTF-8 text"))
        })?),
        _ => None,
    };
    Ok((key, value))
}

/// Parses JSON bytes (a Kafka key or value); empty bytes are an error, like any invalid JSON.
pub fn parse_json(bytes: &[u8], what: &str) -> Result<Value, DecodeError> {
    serde_json::from_slice(bytes)
        .map_err(|e| DecodeError::new(format!("{what} is not valid JSON: {e}")))
}

/// The value as a row, or an error naming `what` and the JSON type found.
fn as_row(v: Value, what: &str) -> Result<Row, DecodeError> {
    match v {
        Value::Object(m) => Ok(m),
        other => Err(DecodeError::new(format!(
            "{what} is not a JSON object (found {})",
            json_type(&other)
        ))),
    }
}

pub fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
