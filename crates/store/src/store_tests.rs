use super::*;
use crate::change::Row;
use crate::engine::state::{JoinState, RowEntry};

fn get(s: &mut RocksState, group: &[u8], item: &[u8]) -> Option<StateValue> {
    s.get(group, item).expect("a readable state")
}

#[test]
fn successor_bounds_exactly_the_keys_with_the_prefix() {
    assert_eq!(successor(&[1, 2, 3]), Some(vec![1, 2, 4]));
    assert_eq!(successor(&[1, 2, 255]), Some(vec![1, 3]));
    assert_eq!(successor(&[255, 255]), None);
    assert_eq!(successor(&[]), None);
}

fn row(n: i64) -> StateValue {
    StateValue::Row(RowEntry {
        row: Row::parse(format!("{{\"n\":{n}}}").as_bytes()).unwrap(),
        copies: 1,
        matches: 0,
        stamp: 0,
    })
}

fn items(s: &mut RocksState, group: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    s.scan(group, &mut |k, _| {
        out.push(k.to_vec());
        true
    })
    .expect("a readable state");
    out
}

#[test]
fn layers_shadow_older_ones_until_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions::default();
    let mut s = RocksState::open(dir.path(), &opts).unwrap();
    let mut group = Vec::new();
    crate::engine::layout::rows_group(&mut group, 1, crate::change::Side::Left, b"k");
    let g = &group[..];
    s.put(g, b"a", row(1));
    s.put(g, b"b", row(2));
    let first = s.seal().unwrap();
    s.delete(g, b"a");
    s.put(g, b"c", row(3));
    assert_eq!(items(&mut s, g), [b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(
        get(&mut s, g, b"a"),
        None,
        "the open delete shadows the sealed put"
    );
    s.persist(first).unwrap();
    let second = s.seal().unwrap();
    assert_eq!(items(&mut s, g), [b"b".to_vec(), b"c".to_vec()]);
    s.persist(second).unwrap();
    assert_eq!(s.pending(), 0);
    drop(s);
    // Reopened: everything persisted is there, read through a cold cache.
    let mut s = RocksState::open(dir.path(), &opts).unwrap();
    assert_eq!(items(&mut s, g), [b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(get(&mut s, g, b"c"), Some(row(3)));
    assert_eq!(get(&mut s, g, b"a"), None);
}

/// An item read (and cached) before a restore loads a newer value of it reads the newer
/// value after: a restore that continues a local copy from the changelog once left the
/// offsets it had looked at stale (the state then reflected more input than it said, and
/// that input was applied twice).
#[test]
fn what_a_restore_loads_replaces_what_was_read_before() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = RocksState::open(dir.path(), &StoreOptions::default()).unwrap();
    let mut meta = Vec::new();
    crate::engine::layout::meta_group(&mut meta, 0);
    let item = crate::engine::layout::offset_item("left");
    s.put(
        &meta,
        &item,
        StateValue::Bytes(571i64.to_be_bytes().to_vec()),
    );
    let c = s.seal().unwrap();
    s.persist(c).unwrap();
    assert!(get(&mut s, &meta, &item).is_some(), "read, and cached");
    let mut key = meta.clone();
    key.extend_from_slice(&item);
    let newer = codec::encode(&StateValue::Bytes(5731i64.to_be_bytes().to_vec()));
    s.load(&key, Some(&newer)).unwrap();
    s.loaded().unwrap();
    assert_eq!(
        get(&mut s, &meta, &item),
        Some(StateValue::Bytes(5731i64.to_be_bytes().to_vec()))
    );
}

#[test]
fn a_sealed_checkpoint_is_not_on_disk_until_persisted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = StoreOptions::default();
    let mut s = RocksState::open(dir.path(), &opts).unwrap();
    s.put(b"\0\0\0\x01g", b"a", row(1));
    s.seal().unwrap();
    drop(s);
    let mut s = RocksState::open(dir.path(), &opts).unwrap();
    assert_eq!(get(&mut s, b"\0\0\0\x01g", b"a"), None);
}

#[test]
fn older_state_directories_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = DB::open_default(dir.path()).unwrap();
        db.put(b"\0\0\0\x01old", b"x").unwrap();
    }
    let err = RocksState::open(dir.path(), &StoreOptions::default())
        .err()
        .expect("refused");
    assert!(err.0.contains("older sidejoin"), "{}", err.0);
}

/// Issue 22: a value corrupted on disk is a typed error naming the input partition and the fix
/// (the runtime ends the run with it), and a changelog record that is no state value is refused
/// while restoring; neither panics.
#[test]
fn corrupt_stored_values_and_changelog_records_are_named_errors() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = RocksState::open(dir.path(), &StoreOptions::default()).unwrap();
    let group = 7i32.to_be_bytes().to_vec();
    let mut key = group.clone();
    key.extend_from_slice(b"item");
    // `{"n":"2345}`: a string that never closes, so its span would run past the text.
    let mut bad = codec::encode(&row(12345));
    let at = bad.len() - 6;
    bad[at] = b'"';
    s.db.put(&key, &bad).unwrap();
    let e = s.get(&group, b"item").unwrap_err().to_string();
    assert!(
        e.contains("input partition 7") && e.contains("SIDEJOIN_STATE_DIR"),
        "{e}"
    );
    let e = s.load(&key, Some(b"\x01garbage")).unwrap_err().to_string();
    assert!(e.contains("does not hold a state value"), "{e}");
}
