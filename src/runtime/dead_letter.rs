//! Dead letters (SPEC §8): the original record with headers naming why and where it came from,
//! written whatever its size. The reason is abbreviated to at most `MAX_REASON` bytes (error
//! texts quote record content: a CSV field, an upsert key); a dead letter over the producer's
//! `message.max.bytes` is written again without the original value, then without the original
//! key and headers too (`Kept`), its `sidejoin.source.*` headers still naming the record.
//!
//! Not here: deciding that a record is dead (`SIDEJOIN_ON_ERROR`, the worker and the router).

use std::any::Any;
use std::borrow::Cow;

use rdkafka::error::KafkaError;
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseProducer, BaseRecord};
use rdkafka::types::RDKafkaErrorCode;

use crate::kafka::deliveries::Deliveries;

use super::input::Record;
use super::output::send_when_room;

/// The longest `sidejoin.error` header value, in bytes.
pub(crate) const MAX_REASON: usize = 1024;

/// What is kept of the record past its head when a reason is abbreviated.
const TAIL: usize = 256;

/// `text` if it fits `MAX_REASON` bytes, else its head and tail around a note of how many bytes
/// were elided (the tail keeps the end of the message, which often says what was expected).
pub(crate) fn abbreviate(text: &str) -> Cow<'_, str> {
    if text.len() <= MAX_REASON {
        return Cow::Borrowed(text);
    }
    // The note is at most 40 bytes (a 20-digit count); head and tail share the rest.
    let head_end = floor_char_boundary(text, MAX_REASON - TAIL - 40);
    let tail_start = ceil_char_boundary(text, text.len() - TAIL);
    let elided = tail_start - head_end;
    Cow::Owned(format!(
        "{} … [{elided} bytes elided] … {}",
        &text[..head_end],
        &text[tail_start..]
    ))
}

/// The largest char boundary of `s` not above `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// The smallest char boundary of `s` not below `i`.
fn ceil_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// The message of a caught panic.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => (*s).to_owned(),
        (None, Some(s)) => s.clone(),
        (None, None) => "a panic without a message".to_owned(),
    }
}

/// What a written dead letter kept of the original record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// Its key, value and headers.
    All,
    /// Its key and headers: the value made it too large.
    NoValue,
    /// Only the `sidejoin.*` headers: even without the value it was too large.
    Nothing,
}

impl Kept {
    /// What a dead letter leaves out, for its `sidejoin.omitted` header.
    fn omitted(self) -> Option<&'static str> {
        match self {
            Kept::All => None,
            Kept::NoValue => Some("value"),
            Kept::Nothing => Some("key, value, headers"),
        }
    }
}

/// Where a dead record came from and why it is dead.
pub(crate) struct Dead<'a> {
    pub msg: &'a Record,
    /// The topic it was read from.
    pub topic: &'a str,
    /// Why it is dead (abbreviated here).
    pub reason: &'a str,
}

/// Sends the dead letter of `dead` to `dlq_topic` with the delivery opaque `opaque`: whole if
/// the producer takes it, else with less of the original (`Kept`).
pub(crate) fn send(
    producer: &BaseProducer<Deliveries>,
    dlq_topic: &str,
    dead: &Dead<'_>,
    opaque: usize,
) -> Result<Kept, KafkaError> {
    let mut kept = Kept::All;
    loop {
        let record = record(dlq_topic, dead, kept, opaque);
        match send_when_room(producer, record, "dead letters") {
            Ok(()) => return Ok(kept),
            Err(KafkaError::MessageProduction(RDKafkaErrorCode::MessageSizeTooLarge)) => {
                kept = match kept {
                    Kept::All => Kept::NoValue,
                    Kept::NoValue => Kept::Nothing,
                    // The `sidejoin.*` headers alone (about 1.5 KB) are over the limit.
                    Kept::Nothing => {
                        return Err(KafkaError::MessageProduction(
                            RDKafkaErrorCode::MessageSizeTooLarge,
                        ))
                    }
                };
                tracing::warn!(
                    "the dead letter of `{}` partition {} offset {} is over the producer's message.max.bytes: written without its {}",
                    dead.topic,
                    dead.msg.source,
                    dead.msg.offset,
                    kept.omitted().unwrap_or_default()
                );
            }
            Err(e) => return Err(e),
        }
    }
}

/// The dead letter of `dead` for `dlq_topic` keeping `kept` of the original: its timestamp,
/// key, value and headers, and headers naming the reason and the source.
fn record<'a>(
    dlq_topic: &'a str,
    dead: &Dead<'a>,
    kept: Kept,
    opaque: usize,
) -> BaseRecord<'a, [u8], [u8], usize> {
    let msg = dead.msg;
    let mut record = BaseRecord::with_opaque_to(dlq_topic, opaque)
        .timestamp(msg.timestamp)
        .headers(headers(dead, kept));
    if let (Some(k), Kept::All | Kept::NoValue) = (&msg.key, kept) {
        record = record.key(k.as_slice());
    }
    if let (Some(v), Kept::All) = (&msg.value, kept) {
        record = record.payload(v.as_slice());
    }
    record
}

/// A dead letter's headers: the original record's (unless `Kept::Nothing`), then ones naming
/// the reason, where the record came from (topic, partition, offset, side) and what was left
/// out.
fn headers(dead: &Dead<'_>, kept: Kept) -> OwnedHeaders {
    let msg = dead.msg;
    let mut headers = OwnedHeaders::new();
    if kept != Kept::Nothing {
        for (key, value) in &msg.headers {
            headers = headers.insert(Header {
                key,
                value: value.as_deref(),
            });
        }
    }
    let mut info = vec![
        ("sidejoin.error", abbreviate(dead.reason).into_owned()),
        ("sidejoin.source.topic", dead.topic.to_owned()),
        ("sidejoin.source.partition", msg.source.to_string()),
        ("sidejoin.source.offset", msg.offset.to_string()),
        ("sidejoin.source.side", msg.side.name().to_owned()),
    ];
    if let Some(omitted) = kept.omitted() {
        info.push(("sidejoin.omitted", omitted.to_owned()));
    }
    for (key, value) in &info {
        headers = headers.insert(Header {
            key,
            value: Some(value.as_bytes()),
        });
    }
    headers
}

#[cfg(test)]
#[path = "dead_letter_tests.rs"]
mod tests;
