//! Avro input (`avro`, `upsert-avro`, `debezium-avro`): a record's Confluent-framed key and value
//! become the JSON text the JSON decoders take, so the envelopes, the rows and everything after
//! them are the JSON formats' code. Replay, which gets records as JSON already, skips this.
//!
//! Wire format: magic byte 0, the writer schema id (4 bytes, big-endian), the Avro binary datum.
//! Only the upsert shape reads the key (its primary key): Avro when it starts with the magic
//! byte, else as the JSON formats read keys (JSON, or text); the others ignore it, as the JSON
//! formats do.

use super::schemas::SchemaCache;
use crate::config::Envelope;
use crate::format::DecodeError;
use sidejoin_core::avro::json::datum_to_json;

/// The schema id and body of a framed record, or why it is not one.
pub(crate) fn unframe<'a>(bytes: &'a [u8], what: &str) -> Result<(u32, &'a [u8]), DecodeError> {
    if bytes.len() < 5 {
        return Err(DecodeError::new(format!(
            "{what} is {} byte(s): too short for the Confluent Avro wire format (magic byte 0, 4-byte schema id, body)",
            bytes.len()
        )));
    }
    if bytes[0] != 0 {
        return Err(DecodeError::new(format!(
            "{what} starts with byte 0x{:02x}, not the Confluent Avro magic byte 0{}",
            bytes[0],
            if bytes[0] == b'{' {
                " (it looks like JSON)"
            } else {
                ""
            }
        )));
    }
    let id = u32::from_be_bytes(bytes[1..5].try_into().expect("4 bytes"));
    Ok((id, &bytes[5..]))
}

/// Decodes the framed `bytes` into `out` (cleared first) as JSON.
pub(crate) fn to_json(
    schemas: &mut SchemaCache,
    bytes: &[u8],
    what: &str,
    out: &mut Vec<u8>,
) -> Result<(), DecodeError> {
    let (id, body) = unframe(bytes, what)?;
    let schema = schemas
        .get(id)
        .map_err(|e| DecodeError::new(format!("{what}: {e}")))?;
    out.clear();
    datum_to_json(&schema.root, &schema.names, body, out)
        .map_err(|e| DecodeError::new(format!("{what} does not decode with schema id {id}: {e}")))
}

/// A record's key and value as JSON (absent stays absent).
pub(crate) type JsonRecord<'a> = (Option<&'a [u8]>, Option<&'a [u8]>);

/// Scratch buffers for one record's JSON.
#[derive(Default)]
pub(crate) struct Decoded {
    key: Vec<u8>,
    value: Vec<u8>,
}

impl Decoded {
    /// The JSON key and value of an Avro record of a side with `envelope` (absent stays absent).
    pub(crate) fn decode<'s>(
        &'s mut self,
        schemas: &mut SchemaCache,
        envelope: Envelope,
        key: Option<&'s [u8]>,
        value: Option<&[u8]>,
    ) -> Result<JsonRecord<'s>, DecodeError> {
        let key = match (envelope, key) {
            // A framed key is Avro; any other key (a `StringSerializer` one, JSON) goes to the
            // JSON key decoder as it is, which reads non-JSON keys as text.
            (Envelope::Upsert, Some(k)) if k.first() == Some(&0) => {
                to_json(schemas, k, "the record key", &mut self.key)?;
                Some(&self.key[..])
            }
            (Envelope::Upsert, Some(k)) => Some(k),
            _ => None,
        };
        let value = match value {
            Some(v) => {
                to_json(schemas, v, "the record value", &mut self.value)?;
                Some(&self.value[..])
            }
            None => None,
        };
        Ok((key, value))
    }
}
