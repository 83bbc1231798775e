//! Input formats (SPEC §2): a record's key and value bytes become one engine `Event` (or
//! nothing, for a skipped tombstone). JSON is validated once and its rows are kept as compact
//! text (`row::Row`); envelopes (Debezium, upsert keys) are read without building a tree.
//! Replay hands records over as bytes too, so it runs exactly this code.
//!
//! Decoders never look at state; primary-key normalisation happens in the engine.

pub mod changes;
mod csv;
mod debezium;
mod plain;
mod time;
mod upsert;

pub use time::parse_time;

use crate::change::Event;
use crate::config::{CsvSpec, Envelope, SideSpec};
use crate::engine::column::Column;
use crate::row::scan::{self, JsonKind, Member, Scanned};
use crate::row::{escape_name, Json};

/// Why a record could not be decoded; the message names what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

impl DecodeError {
    pub fn new(msg: impl Into<String>) -> Self {
        DecodeError(msg.into())
    }
}

/// How a side's records are read: in the side's own format, or as the changes sidejoin's
/// repartition step wrote (`changes`), when the side is read from its repartition topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    Own,
    Changes,
}

/// The decoder of one side's format.
#[derive(Debug, Clone)]
pub struct Decoder {
    /// `None`: the records are a repartition topic's changes.
    envelope: Option<Envelope>,
    primary_key: Option<Vec<Column>>,
    csv: Option<CsvSpec>,
}

impl Decoder {
    /// The decoder of `side`'s own format.
    pub fn new(side: &SideSpec) -> Self {
        Self::reading(side, Reading::Own)
    }

    /// The decoder of `side`'s records read as `reading` says.
    pub fn reading(side: &SideSpec, reading: Reading) -> Self {
        match reading {
            Reading::Own => Decoder {
                envelope: Some(side.format.envelope()),
                primary_key: side.primary_key.as_deref().map(Column::list),
                csv: side.csv.clone(),
            },
            Reading::Changes => Decoder {
                envelope: None,
                primary_key: None,
                csv: None,
            },
        }
    }

    /// Whether an undecodable record is dropped and counted rather than a decode error
    /// (`csv.ignore-parse-errors`).
    pub fn skips_parse_errors(&self) -> bool {
        self.csv.as_ref().is_some_and(|c| c.ignore_parse_errors)
    }

    /// Whether record values are text lines (`csv`) rather than JSON; replay takes them as
    /// JSON strings.
    pub fn reads_text(&self) -> bool {
        self.csv.is_some()
    }

    /// Turns a record into an event; `Ok(None)` is a tombstone to skip (and count). `None`
    /// bytes are an absent key or value.
    pub fn decode(
        &self,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<Option<Event>, DecodeError> {
        if let Some(spec) = &self.csv {
            return csv::decode(spec, value);
        }
        match self.envelope {
            Some(Envelope::Plain) => plain::decode(value),
            Some(Envelope::Upsert) => {
                upsert::decode(self.primary_key.as_deref().unwrap_or_default(), key, value)
            }
            Some(Envelope::Debezium) => debezium::decode(self.primary_key.is_some(), value),
            None => changes::decode(value),
        }
    }
}

/// Validates `bytes` (`what`: "the record value") as one JSON value.
fn scan_json(bytes: &[u8], what: &str) -> Result<Scanned, DecodeError> {
    scan::scan(bytes).map_err(|e| DecodeError::new(format!("{what} is not valid JSON: {e}")))
}

/// The value of the member `name` of an object (the last one, if repeated).
fn member<'a>(text: &'a [u8], members: &[Member], name: &str) -> Option<Json<'a>> {
    let mut escaped = Vec::with_capacity(name.len());
    escape_name(name, &mut escaped);
    members
        .iter()
        .rev()
        .find(|m| {
            let raw = &text[m.name.0..m.name.1];
            if m.name_escaped {
                serde_json::from_slice::<String>(&text[m.name.0 - 1..m.name.1 + 1])
                    .is_ok_and(|n| n == name)
            } else {
                raw == escaped.as_slice()
            }
        })
        .map(|m| Json::new_unchecked(&text[m.value.0..m.value.1]))
}

/// "a string", "an object", … for the value `v`.
fn described(v: Json<'_>) -> &'static str {
    v.kind().described()
}

/// The error for a value that should be an object.
fn not_an_object(what: &str, kind: JsonKind) -> DecodeError {
    DecodeError::new(format!(
        "{what} is not a JSON object (found {})",
        kind.described()
    ))
}
