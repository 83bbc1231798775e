//! How the engine lays its state out in the blind `(group, item)` map.
//!
//! Every group starts with the input partition (4 bytes, big-endian), so one partition's state is
//! one key range: it can be dropped, restored or moved on its own (SPEC §7). Then a tag byte and a
//! side byte, then the tag's own fields:
//!
//! | tag | group | item | value |
//! |---|---|---|---|
//! | `ROWS` | partition, side, join key | primary key, or the whole row on multiset sides | `Row` |
//! | `PK` | partition, side, primary key | empty | join key bytes (only when the join key is not part of the primary key) |
//! | `TTL` | partition, side | write stamp, join key, row item | empty |
//! | `META` | partition | name | bytes |
//! | `INTERVAL_ROWS` | partition, side, join key | row time, arrival sequence | `Timed` row |
//! | `INTERVAL_TIME` | partition, side | row time, arrival sequence | join key bytes |
//!
//! Join keys, primary keys and rows use the self-delimiting encodings of `canonical`, so a TTL
//! item can be split back into its parts.

use crate::changelog::Side;

use super::canonical::encoded_len;

pub const ROWS: u8 = 1;
pub const PK: u8 = 2;
pub const TTL: u8 = 3;
pub const META: u8 = 4;
pub const INTERVAL_ROWS: u8 = 5;
pub const INTERVAL_TIME: u8 = 6;

/// Meta item (partition 0) holding the interval join's last arrival sequence number.
pub const INTERVAL_SEQ: &[u8] = b"interval_seq";

/// Meta item holding a partition's row counts (left, right), for the `state_rows` gauge.
pub const ROW_COUNTS: &[u8] = b"row_counts";

/// Meta item holding the largest row time seen on a side of the partition (interval join).
pub fn max_time_item(side: Side) -> &'static [u8] {
    match side {
        Side::Left => b"max_time/left",
        Side::Right => b"max_time/right",
    }
}

/// Meta item holding the next input offset of `topic` already reflected in the partition's
/// state (written with the state, atomically, by durable stores).
pub fn offset_item(topic: &str) -> Vec<u8> {
    [b"offset/".as_slice(), topic.as_bytes()].concat()
}

/// Meta item holding a partition's stream time (SPEC §3.5).
pub const STREAM_TIME: &[u8] = b"stream_time";

fn side_byte(side: Side) -> u8 {
    match side {
        Side::Left => b'L',
        Side::Right => b'R',
    }
}

/// Writes the common group head: partition, tag, side.
pub fn head(buf: &mut Vec<u8>, partition: u32, tag: u8, side: Option<Side>) {
    buf.clear();
    buf.extend_from_slice(&partition.to_be_bytes());
    buf.push(tag);
    buf.push(side.map(side_byte).unwrap_or(0));
}

pub fn rows_group(buf: &mut Vec<u8>, partition: u32, side: Side, join_key: &[u8]) {
    head(buf, partition, ROWS, Some(side));
    buf.extend_from_slice(join_key);
}

pub fn pk_group(buf: &mut Vec<u8>, partition: u32, side: Side, primary_key: &[u8]) {
    head(buf, partition, PK, Some(side));
    buf.extend_from_slice(primary_key);
}

pub fn ttl_group(buf: &mut Vec<u8>, partition: u32, side: Side) {
    head(buf, partition, TTL, Some(side));
}

pub fn interval_rows_group(buf: &mut Vec<u8>, partition: u32, side: Side, join_key: &[u8]) {
    head(buf, partition, INTERVAL_ROWS, Some(side));
    buf.extend_from_slice(join_key);
}

pub fn interval_time_group(buf: &mut Vec<u8>, partition: u32, side: Side) {
    head(buf, partition, INTERVAL_TIME, Some(side));
}

/// An interval-join row item: its time, then its arrival sequence number.
pub fn interval_item(time: i64, seq: u64) -> Vec<u8> {
    let mut item = Vec::with_capacity(16);
    item.extend_from_slice(&time_bytes(time));
    item.extend_from_slice(&seq.to_be_bytes());
    item
}

pub fn interval_item_seq(item: &[u8]) -> u64 {
    item.get(8..16)
        .and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

pub fn meta_group(buf: &mut Vec<u8>, partition: u32) {
    head(buf, partition, META, None);
}

/// A time as 8 bytes whose byte order is the numeric order.
pub fn time_bytes(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

pub fn time_from_bytes(b: &[u8]) -> Option<i64> {
    let arr: [u8; 8] = b.get(..8)?.try_into().ok()?;
    Some((u64::from_be_bytes(arr) ^ (1 << 63)) as i64)
}

pub fn ttl_item(buf: &mut Vec<u8>, stamp: i64, join_key: &[u8], item: &[u8]) {
    buf.clear();
    buf.extend_from_slice(&time_bytes(stamp));
    buf.extend_from_slice(join_key);
    buf.extend_from_slice(item);
}

/// Splits a TTL item into stamp, join key (`key_columns` encoded values) and row item.
pub fn split_ttl_item(item: &[u8], key_columns: usize) -> Option<(i64, &[u8], &[u8])> {
    let stamp = time_from_bytes(item)?;
    let rest = &item[8..];
    let mut at = 0;
    for _ in 0..key_columns {
        at += encoded_len(&rest[at..])?;
    }
    Some((stamp, &rest[..at], &rest[at..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::canonical::encode_value;
    use serde_json::json;

    #[test]
    fn time_bytes_keep_order() {
        let ts = [i64::MIN, -5, -1, 0, 1, 1000, i64::MAX];
        for w in ts.windows(2) {
            assert!(time_bytes(w[0]) < time_bytes(w[1]));
            assert_eq!(time_from_bytes(&time_bytes(w[0])), Some(w[0]));
        }
    }

    #[test]
    fn ttl_items_split_back() {
        let mut jk = Vec::new();
        encode_value(&json!("a"), &mut jk);
        encode_value(&json!(7), &mut jk);
        let mut item = Vec::new();
        encode_value(&json!({"x": 1}), &mut item);
        let mut buf = Vec::new();
        ttl_item(&mut buf, -42, &jk, &item);
        assert_eq!(split_ttl_item(&buf, 2), Some((-42, &jk[..], &item[..])));
    }
}
