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
//! | `LOCAL` | partition | name | 8 bytes (kept by durable stores beside the state, never mirrored) |
//! | `LOOKUP` | partition, dimension, lookup key | the parent input's join key (sized) and row item | empty (star joins: the rows of the input a dimension is looked up on, by their lookup key, when that input is not stored under it) |
//!
//! Join keys, primary keys and rows use the self-delimiting encodings of `canonical`, so a TTL
//! item can be split back into its parts. In a group, a join or primary key is preceded by its
//! length (4 bytes, big-endian), so `group_len` finds where any stored key's group ends without
//! knowing the configuration: durable stores use it for prefix bloom filters.

use crate::change::{Partition, Side};

use super::canonical::encoded_len;

pub const ROWS: u8 = 1;
pub const PK: u8 = 2;
pub const TTL: u8 = 3;
pub const META: u8 = 4;
pub const INTERVAL_ROWS: u8 = 5;
pub const INTERVAL_TIME: u8 = 6;
/// Local-only numbers of a partition (never mirrored to the changelog): see `local_group`.
pub const LOCAL: u8 = 7;
/// A star join's lookup index (SPEC §14): see `lookup_group`.
pub const LOOKUP: u8 = 8;

/// Meta item holding the interval join's last arrival sequence number of the partition.
pub const INTERVAL_SEQ: &[u8] = b"interval_seq";

/// Meta item holding a partition's row counts (left, right), for the `state_rows` gauge.
pub const ROW_COUNTS: &[u8] = b"row_counts";

/// Meta item holding the largest row time seen on a side of the partition (interval join).
pub fn max_time_item(side: Side) -> &'static [u8] {
    if side == Side::Left {
        b"max_time/left"
    } else {
        b"max_time/right"
    }
}

/// Meta item holding the next input offset of `topic` already reflected in the partition's
/// state (written with the state, atomically, by durable stores).
pub fn offset_item(topic: &str) -> Vec<u8> {
    [b"offset/".as_slice(), topic.as_bytes()].concat()
}

/// Meta item holding a partition's stream time (SPEC §3.5).
pub const STREAM_TIME: &[u8] = b"stream_time";

/// `L`, `R`, then `2`, `3`… for a star join's further dimensions.
fn side_byte(side: Side) -> u8 {
    match side.index() {
        0 => b'L',
        1 => b'R',
        n => b'0' + n as u8,
    }
}

/// Writes the common group head: partition, tag, side.
pub fn head(buf: &mut Vec<u8>, partition: Partition, tag: u8, side: Option<Side>) {
    buf.clear();
    buf.extend_from_slice(&partition.to_be_bytes());
    buf.push(tag);
    buf.push(side.map(side_byte).unwrap_or(0));
}

/// Length of the common group head: partition, tag, side.
const HEAD_LEN: usize = 6;

/// Appends a key with its length, so the group's end can be found from its bytes.
fn push_sized(buf: &mut Vec<u8>, key: &[u8]) {
    buf.extend_from_slice(&(key.len() as u32).to_be_bytes());
    buf.extend_from_slice(key);
}

/// Where the group of a stored key (group followed by item) ends. Keys that are not the
/// engine's (shorter than a head, unknown tag, truncated) are their own group.
pub fn group_len(key: &[u8]) -> usize {
    if key.len() < HEAD_LEN {
        return key.len();
    }
    match key[4] {
        ROWS | PK | INTERVAL_ROWS | LOOKUP => key
            .get(HEAD_LEN..HEAD_LEN + 4)
            .and_then(|b| b.try_into().ok())
            .map(|b: [u8; 4]| HEAD_LEN + 4 + u32::from_be_bytes(b) as usize)
            .filter(|&end| end <= key.len())
            .unwrap_or(key.len()),
        TTL | META | INTERVAL_TIME | LOCAL => HEAD_LEN,
        _ => key.len(),
    }
}

pub fn rows_group(buf: &mut Vec<u8>, partition: Partition, side: Side, join_key: &[u8]) {
    head(buf, partition, ROWS, Some(side));
    push_sized(buf, join_key);
}

/// The lookup index of star-join dimension `dimension` at lookup key `lookup`: its items are the
/// rows of the input the dimension is looked up on whose lookup columns hold `lookup`.
pub fn lookup_group(buf: &mut Vec<u8>, partition: Partition, dimension: Side, lookup: &[u8]) {
    head(buf, partition, LOOKUP, Some(dimension));
    push_sized(buf, lookup);
}

/// A lookup index item: the indexed row's join key (sized) and its item.
pub fn lookup_item(buf: &mut Vec<u8>, join_key: &[u8], item: &[u8]) {
    buf.clear();
    push_sized(buf, join_key);
    buf.extend_from_slice(item);
}

/// Splits a lookup index item back into the row's join key and item.
pub fn split_lookup_item(item: &[u8]) -> Option<(&[u8], &[u8])> {
    let len = u32::from_be_bytes(item.get(..4)?.try_into().ok()?) as usize;
    let key = item.get(4..4 + len)?;
    Some((key, &item[4 + len..]))
}

pub fn pk_group(buf: &mut Vec<u8>, partition: Partition, side: Side, primary_key: &[u8]) {
    head(buf, partition, PK, Some(side));
    push_sized(buf, primary_key);
}

pub fn ttl_group(buf: &mut Vec<u8>, partition: Partition, side: Side) {
    head(buf, partition, TTL, Some(side));
}

pub fn interval_rows_group(buf: &mut Vec<u8>, partition: Partition, side: Side, join_key: &[u8]) {
    head(buf, partition, INTERVAL_ROWS, Some(side));
    push_sized(buf, join_key);
}

pub fn interval_time_group(buf: &mut Vec<u8>, partition: Partition, side: Side) {
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

pub fn meta_group(buf: &mut Vec<u8>, partition: Partition) {
    head(buf, partition, META, None);
}

pub fn local_group(buf: &mut Vec<u8>, partition: Partition) {
    head(buf, partition, LOCAL, None);
}

/// Whether a stored key is a local-only entry (`LOCAL`), which is never mirrored.
pub fn is_local(key: &[u8]) -> bool {
    key.get(4) == Some(&LOCAL)
}

/// The side whose changelog topic mirrors a stored key: its side byte, and the left topic for
/// entries of no side (the partition's metadata).
pub fn mirror_side(key: &[u8]) -> Side {
    match key.get(5) {
        Some(b'R') => Side::Right,
        Some(&b) if (b'2'..=b'9').contains(&b) => {
            Side::at(usize::from(b - b'0')).unwrap_or(Side::Left)
        }
        _ => Side::Left,
    }
}

/// The input partition a stored key belongs to.
pub fn partition_of(key: &[u8]) -> Option<Partition> {
    key.get(..4)
        .and_then(|b| b.try_into().ok())
        .map(i32::from_be_bytes)
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
    use crate::engine::canonical::encode_tree;
    use serde_json::json;

    #[test]
    fn group_len_finds_the_end_of_every_group() {
        let mut key = Vec::new();
        encode_tree(&json!("k1"), &mut key);
        let mut g = Vec::new();
        for build in [rows_group, pk_group, interval_rows_group] {
            build(&mut g, 7, Side::Right, &key);
            let group_end = g.len();
            g.extend_from_slice(b"item");
            assert_eq!(group_len(&g), group_end);
            assert_eq!(group_len(&g[..group_end]), group_end);
        }
        for build in [ttl_group, interval_time_group] {
            build(&mut g, 7, Side::Left);
            g.extend_from_slice(b"item");
            assert_eq!(group_len(&g), HEAD_LEN);
        }
        meta_group(&mut g, 3);
        g.extend_from_slice(ROW_COUNTS);
        assert_eq!(group_len(&g), HEAD_LEN);
        assert_eq!(group_len(b"abc"), 3);
        assert_eq!(
            group_len(&[0, 0, 0, 1, ROWS, b'L', 0, 0, 0, 99]),
            10,
            "truncated"
        );
    }

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
        encode_tree(&json!("a"), &mut jk);
        encode_tree(&json!(7), &mut jk);
        let mut item = Vec::new();
        encode_tree(&json!({"x": 1}), &mut item);
        let mut buf = Vec::new();
        ttl_item(&mut buf, -42, &jk, &item);
        assert_eq!(split_ttl_item(&buf, 2), Some((-42, &jk[..], &item[..])));
    }
}
