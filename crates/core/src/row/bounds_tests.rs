//! Wide and many-shaped rows (issue 22): a 100,000-column record parses, builds and projects
//! in a generous 100 ms; 5,000 records of 100 KB of distinct names leave interning bounded in
//! bytes; stored bytes that are not a row sidejoin wrote are an error, never a panicking row.

use std::io::Write;
use std::time::Duration;

use super::*;
use crate::config::select::SelectItem;
use crate::config::Side;
use crate::engine::project::Projection;

fn within_100ms<T>(what: &str, f: impl FnOnce() -> T) -> T {
    crate::test_time::within(Duration::from_millis(100), what, f)
}

/// `{"c0": 0, "c1": 1, …}` with a space after each colon (not compact: the builder's path).
fn wide(n: usize) -> Vec<u8> {
    let mut text = b"{".to_vec();
    for i in 0..n {
        if i > 0 {
            text.push(b',');
        }
        write!(text, "\"c{i}\": {i}").unwrap();
    }
    text.push(b'}');
    text
}

#[test]
fn a_100000_column_record_parses_and_projects_in_linear_time() {
    let text = wide(100_000);
    let row = within_100ms("parse", || Row::parse(&text).unwrap());
    assert_eq!(row.width(), 100_000);
    assert_eq!(row.get(b"c99999").unwrap().as_bytes(), b"99999");
    let star = Projection::new(vec![
        SelectItem::All(Side::Left),
        SelectItem::All(Side::Right),
    ]);
    let narrow = Row::parse(br#"{"id":2,"c1":true}"#).unwrap();
    let out = within_100ms("l.*, r.*", || star.project(Some(&row), Some(&narrow)));
    assert_eq!(out.width(), 100_002);
    // `c10` … `c19999` are taken.
    assert_eq!(out.column(100_001).0, b"c110000");
    // Both sides wide, every right name taken: each takes its first free suffix, and the
    // search for it resumes where the last one of its base stopped (n log n, not n^2).
    let out = star.project(Some(&row), Some(&row));
    assert_eq!(out.width(), 200_000);
    assert_eq!(out.column(100_000).0, b"c00");
    assert_eq!(out.column(100_001).0, b"c110000");
    assert_eq!(out.column(100_010).0, b"c101000");
    // A record naming one column 100,000 times keeps its first position and last value.
    let mut text = b"{\"id\": 1".to_vec();
    for i in 0..100_000 {
        write!(text, ",\"a\": {i}").unwrap();
    }
    text.push(b'}');
    let row = within_100ms("repeated name", || Row::parse(&text).unwrap());
    assert_eq!(row.json(), b"{\"id\":1,\"a\":99999}");
}

#[test]
fn set_if_absent_and_set_raw_settle_like_one_by_one() {
    let mut b = RowBuilder::new();
    b.set_if_absent(b"a", b"1");
    b.set_raw(b"b", b"2");
    b.set_if_absent(b"a", b"3");
    b.set_raw(b"a", b" [4, 5]");
    b.set_if_absent(b"c", b"6");
    b.set_if_absent(b"b", b"7");
    b.set_raw(b"c", b"8");
    b.set_if_absent(b"d", b"9");
    b.set_if_absent(b"d", b"10");
    assert_eq!(b.finish().json(), b"{\"a\":[4,5],\"b\":2,\"c\":8,\"d\":9}");
}

#[test]
fn interning_is_bounded_in_bytes() {
    let rss = || {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kb = status.lines().find_map(|l| l.strip_prefix("VmRSS:"));
        kb.and_then(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
    };
    let before = rss();
    let start = std::time::Instant::now();
    for r in 0..5_000 {
        // ~100 KB of names no other record has.
        let mut text = b"{".to_vec();
        for i in 0..6_000 {
            if i > 0 {
                text.push(b',');
            }
            write!(text, "\"r{r}_column_{i:05}\":1").unwrap();
        }
        text.push(b'}');
        let row = crate::test_time::within(Duration::from_millis(100), "a record", || {
            Row::parse(&text).unwrap()
        });
        assert_eq!(
            row.shape(),
            shape::UNKNOWN,
            "over MAX_KEY_BYTES: not interned"
        );
    }
    eprintln!(
        "5,000 records in {:?}; RSS {before:?} kB -> {:?} kB",
        start.elapsed(),
        rss()
    );
    assert!(shape::interned_bytes() <= shape::MAX_SHAPE_BYTES);
    // Shapes under the key bound are interned until their bytes would pass the total bound.
    let mut last = 0;
    for r in 0..1_000 {
        let names: Vec<Vec<u8>> = (0..2_000)
            .map(|i| format!("s{r}_{i:012}").into_bytes())
            .collect();
        last = shape::intern(names.iter().map(|n| n.as_slice())).id;
    }
    assert_eq!(
        last,
        shape::UNKNOWN,
        "1,000 shapes of 40 KB are over 16 MiB"
    );
    assert!(shape::interned_bytes() <= shape::MAX_SHAPE_BYTES);
}

#[test]
fn stored_bytes_are_verified() {
    let row = Row::parse(br#"{"id":1,"n":"x\"y","\u0001":[1,{"a":null}]}"#).unwrap();
    assert_eq!(Row::from_stored(row.json()).unwrap(), row);
    for bad in [
        &b"{\"a"[..],
        b"{\"a\":}",
        b"{\"a\":1,}",
        b"{\"a\":\"\xff\"}",
        b"{\"a\": 1}",
        b"[1]",
        b"{}}",
        b"",
        b"{\"a\":1",
    ] {
        assert!(
            Row::from_stored(bad).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}
