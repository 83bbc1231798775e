//! The records of a repartition topic (`SIDEJOIN_<SIDE>_HASH_BY`, `runtime::repartition`):
//! events the side's own decoder already produced, re-keyed, written back as one tag byte and
//! the row texts. Only sidejoin writes them and only sidejoin reads them, so the form is as
//! small as it can be: no envelope to parse again, no schema.
//!
//! `I`/`D`/`b`/`a` `<row>`: a change `+I`/`-D`/`-U`/`+U` of one row (`b`/`a`: one half of an
//! update that moved between partitions); `U` `<len: u32 LE>` `<before>` `<after>`: an update
//! that stayed (len 0: no `before`); `P` `<row>`: an upsert; `K` `<key row>`: a delete by key.

use super::DecodeError;
use crate::change::{Event, Kind, Row};

/// Appends the encoding of `event` to `out`.
pub fn encode(event: &Event, out: &mut Vec<u8>) {
    let (tag, row) = match event {
        Event::Change(kind, row) => (
            match kind {
                Kind::Insert => b'I',
                Kind::Delete => b'D',
                Kind::UpdateBefore => b'b',
                Kind::UpdateAfter => b'a',
            },
            row,
        ),
        Event::Upsert(row) => (b'P', row),
        Event::DeleteKey(row) => (b'K', row),
        Event::Update { before, after } => {
            out.push(b'U');
            let before = before.as_ref().map_or(&[][..], Row::json);
            out.extend_from_slice(&(before.len() as u32).to_le_bytes());
            out.extend_from_slice(before);
            out.extend_from_slice(after.json());
            return;
        }
    };
    out.push(tag);
    out.extend_from_slice(row.json());
}

fn row(bytes: &[u8]) -> Result<Row, DecodeError> {
    Row::parse(bytes).map_err(|e| {
        DecodeError::new(format!(
            "a repartitioned record's row {e} (not written by sidejoin?)"
        ))
    })
}

/// The event `value` encodes.
pub fn decode(value: Option<&[u8]>) -> Result<Option<Event>, DecodeError> {
    let Some((&tag, rest)) = value.and_then(|v| v.split_first()) else {
        return Err(DecodeError::new(
            "a repartitioned record has no value (not written by sidejoin?)",
        ));
    };
    let change = |kind| Ok(Some(Event::Change(kind, row(rest)?)));
    match tag {
        b'I' => change(Kind::Insert),
        b'D' => change(Kind::Delete),
        b'b' => change(Kind::UpdateBefore),
        b'a' => change(Kind::UpdateAfter),
        b'P' => Ok(Some(Event::Upsert(row(rest)?))),
        b'K' => Ok(Some(Event::DeleteKey(row(rest)?))),
        b'U' if rest.len() >= 4 => {
            let len = u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            let (before, after) = rest[4..].split_at_checked(len).ok_or_else(|| {
                DecodeError::new("a repartitioned update is cut short (not written by sidejoin?)")
            })?;
            Ok(Some(Event::Update {
                before: (len > 0).then(|| row(before)).transpose()?,
                after: row(after)?,
            }))
        }
        t => Err(DecodeError::new(format!(
            "a repartitioned record starts with {t:#04x}, which is no change sidejoin writes (not written by sidejoin?)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(json: &str) -> Row {
        Row::parse(json.as_bytes()).unwrap()
    }

    #[test]
    fn every_event_reads_back_as_written() {
        let events = [
            Event::Change(Kind::Insert, r(r#"{"id":1,"v":"a"}"#)),
            Event::Change(Kind::Delete, r(r#"{"id":1}"#)),
            Event::Change(Kind::UpdateBefore, r(r#"{"id":1,"k":2}"#)),
            Event::Change(Kind::UpdateAfter, r(r#"{"id":1,"k":3}"#)),
            Event::Upsert(r(r#"{"id":2}"#)),
            Event::DeleteKey(r(r#"{"id":2}"#)),
            Event::Update {
                before: Some(r(r#"{"id":1,"v":1.50}"#)),
                after: r(r#"{"id":1,"v":2}"#),
            },
            Event::Update {
                before: None,
                after: r(r#"{"id":1,"v":2}"#),
            },
        ];
        for e in events {
            let mut bytes = Vec::new();
            encode(&e, &mut bytes);
            assert_eq!(decode(Some(&bytes)).unwrap(), Some(e));
        }
    }

    #[test]
    fn foreign_bytes_are_named_errors() {
        for bad in [&b""[..], b"X{}", b"I{", b"U\x09\0\0\0{}"] {
            let e = decode(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("not written by sidejoin"), "{e}");
        }
        assert!(decode(None).is_err());
    }
}
