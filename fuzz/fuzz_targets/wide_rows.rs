//! Wide and repetitive rows through parsing, building and star projection: one column per input
//! byte (distinct names, or names from 256 that repeat; with or without whitespace), checked
//! against serde_json's reading. libFuzzer's per-input timeout exposes quadratic paths.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;
use sidejoin_config::select::SelectItem;
use sidejoin_config::Side;
use sidejoin_core::engine::project::Projection;
use sidejoin_core::row::{Row, RowBuilder};

fuzz_target!(|data: &[u8]| {
    let Some((&flags, columns)) = data.split_first() else {
        return;
    };
    let colon: &[u8] = if flags & 2 == 2 { b": " } else { b":" };
    let mut text = b"{".to_vec();
    for (i, &b) in columns.iter().enumerate() {
        if i > 0 {
            text.push(b',');
        }
        if flags & 1 == 1 {
            write!(text, "\"c{i}\"").unwrap();
        } else {
            write!(text, "\"c{b}\"").unwrap();
        }
        text.extend_from_slice(colon);
        write!(text, "{b}").unwrap();
    }
    text.push(b'}');
    let row = Row::parse(&text).expect("valid object text");
    let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(row.to_value(), value);

    let mut b = RowBuilder::from_row(&row);
    for &c in columns.iter().take(64) {
        b.set_raw(format!("c{c}").as_bytes(), b"true");
    }
    b.set_if_absent(b"extra", b"1");
    let built = b.finish();
    assert!(built.width() >= row.width());

    let star = Projection::new(vec![
        SelectItem::All(Side::Left),
        SelectItem::All(Side::Right),
    ]);
    let out = star.project(Some(&row), Some(&built));
    assert_eq!(out.width(), row.width() + built.width());
    let left_only = Projection::new(vec![
        SelectItem::All(Side::Left),
        SelectItem::Column {
            side: Side::Right,
            column: "c0".into(),
            alias: None,
        },
    ]);
    assert_eq!(left_only.project(Some(&row), None).width(), row.width() + 1);
});
