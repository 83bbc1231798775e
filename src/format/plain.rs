//! `json` / `avro`: each value object is one `+I`; a tombstone is skipped.

use serde_json::Value;

use super::{as_row, DecodeError};
use crate::changelog::{Event, Kind};

pub fn decode(value: Option<Value>) -> Result<Option<Event>, DecodeError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => Ok(Some(Event::Change(
            Kind::Insert,
            as_row(v, "the record value")?,
        ))),
    }
}
