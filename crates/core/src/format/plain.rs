//! `json` / `avro`: each value object is one `+I`; a tombstone (absent or `null` value) is
//! skipped.

use super::{not_an_object, scan_json, DecodeError};
use crate::change::{Event, Kind, Row};
use crate::row::scan;

pub(super) fn decode(value: Option<&[u8]>) -> Result<Option<Event>, DecodeError> {
    let Some(bytes) = value else {
        return Ok(None);
    };
    let scanned = scan_json(bytes, "the record value")?;
    match scanned.kind {
        scan::JsonKind::Null => Ok(None),
        scan::JsonKind::Object => Ok(Some(Event::Change(
            Kind::Insert,
            Row::from_scanned(bytes, &scanned.members, scanned.compact),
        ))),
        other => Err(not_an_object("the record value", other)),
    }
}
