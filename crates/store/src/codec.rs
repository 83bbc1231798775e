//! State values as bytes for RocksDB: a tag byte, fixed-width counters, then the row's compact
//! JSON text exactly as the row holds it (no re-serialisation). Decoding verifies the row text
//! (`Row::from_stored`) and reports corruption instead of panicking.

use crate::change::Row;
use crate::engine::state::{RowEntry, StateValue, TimedRow};

const ROW: u8 = 1;
const TIMED: u8 = 2;
const BYTES: u8 = 3;

pub(crate) fn encode(value: &StateValue) -> Vec<u8> {
    match value {
        StateValue::Row(e) => {
            let mut out = Vec::with_capacity(17 + 96);
            out.push(ROW);
            out.extend_from_slice(&e.copies.to_le_bytes());
            out.extend_from_slice(&e.matches.to_le_bytes());
            out.extend_from_slice(&e.stamp.to_le_bytes());
            out.extend_from_slice(e.row.json());
            out
        }
        StateValue::Timed(t) => {
            let mut out = Vec::with_capacity(2 + 96);
            out.push(TIMED);
            out.push(u8::from(t.matched) | (u8::from(t.padded) << 1));
            out.extend_from_slice(t.row.json());
            out
        }
        StateValue::Bytes(b) => {
            let mut out = Vec::with_capacity(1 + b.len());
            out.push(BYTES);
            out.extend_from_slice(b);
            out
        }
    }
}

fn row(bytes: &[u8]) -> Result<Row, String> {
    // Stored rows are sidejoin's own compact text, but the bytes crossed a disk or a topic:
    // the row's accessors index the text by the spans found here, so verify it all.
    Row::from_stored(bytes).map_err(|e| format!("corrupt stored row ({} bytes): {e}", bytes.len()))
}

pub(crate) fn decode(bytes: &[u8]) -> Result<StateValue, String> {
    let (&tag, rest) = bytes.split_first().ok_or("empty state value")?;
    match tag {
        ROW if rest.len() >= 16 => {
            let u32_at = |i: usize| u32::from_le_bytes(rest[i..i + 4].try_into().expect("4 bytes"));
            Ok(StateValue::Row(RowEntry {
                copies: u32_at(0),
                matches: u32_at(4),
                stamp: i64::from_le_bytes(rest[8..16].try_into().expect("8 bytes")),
                row: row(&rest[16..])?,
            }))
        }
        TIMED if !rest.is_empty() => Ok(StateValue::Timed(TimedRow {
            matched: rest[0] & 1 != 0,
            padded: rest[0] & 2 != 0,
            row: row(&rest[1..])?,
        })),
        BYTES => Ok(StateValue::Bytes(rest.to_vec())),
        _ => Err(format!(
            "corrupt state value (tag {tag}, {} bytes)",
            bytes.len()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trips() {
        let r = Row::from_value(&json!({"b": 1, "a": [1.5, "x"]})).unwrap();
        for v in [
            StateValue::Row(RowEntry {
                row: r.clone(),
                copies: 3,
                matches: 7,
                stamp: -42,
            }),
            StateValue::Timed(TimedRow {
                row: r.clone(),
                matched: true,
                padded: false,
            }),
            StateValue::Timed(TimedRow {
                row: r,
                matched: false,
                padded: true,
            }),
            StateValue::Bytes(vec![0, 1, 255]),
        ] {
            assert_eq!(decode(&encode(&v)).unwrap(), v);
        }
        assert!(decode(&[9]).is_err());
        assert!(decode(&[]).is_err());
        assert!(decode(&[1, 0]).is_err());
    }

    /// A row of exactly `len` bytes of JSON text.
    fn row_of(len: usize) -> Row {
        let pad = "x".repeat(len - r#"{"a":1,"b":""}"#.len());
        Row::parse(format!(r#"{{"a":1,"b":"{pad}"}}"#).as_bytes()).unwrap()
    }

    /// Stored rows whose text crosses the offset widths (1 byte under 256 bytes, 2 under
    /// 64 KiB, 4 above), each corrupted by flipping, dropping or adding a byte anywhere near
    /// the ends: never a panic; what decodes is JSON with every column readable.
    #[test]
    fn corrupt_stored_rows_are_errors_or_whole_rows() {
        for len in [255, 256, 65_535, 65_536] {
            let value = encode(&StateValue::Timed(TimedRow {
                row: row_of(len),
                matched: true,
                padded: false,
            }));
            let near_ends = (0..24).chain(value.len() - 24..value.len());
            for at in near_ends {
                let mut variants = vec![value.clone(), value.clone(), value.clone()];
                variants[0][at] ^= 0x22;
                variants[1].remove(at);
                variants[2].insert(at, b'"');
                for v in variants {
                    let Ok(StateValue::Timed(t)) = decode(&v) else {
                        continue;
                    };
                    serde_json::from_slice::<serde_json::Value>(t.row.json()).unwrap();
                    for (i, (name, value)) in t.row.columns().enumerate() {
                        assert_eq!(t.row.column(i).1.as_bytes(), value.as_bytes());
                        assert!(t.row.get(name).is_some());
                    }
                }
            }
        }
    }
}
