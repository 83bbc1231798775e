use super::*;
use crate::config::{KeyColumn, KeySource};
use crate::engine::output_key::{write_key_value, OutputKey};
use crate::row::Json;
use serde_json::{json, Value};

fn row(v: Value) -> Row {
    Row::from_value(&v).unwrap()
}

fn all() -> Projection {
    Projection::new(vec![
        SelectItem::All(Side::Left),
        SelectItem::All(Side::Right),
    ])
}

#[test]
fn default_select_suffixes_per_row() {
    let l = row(json!({"id": 1, "id0": 2}));
    let r = row(json!({"id": 1, "w": 3}));
    assert_eq!(
        all().project(Some(&l), Some(&r)).to_value(),
        json!({"id": 1, "id0": 2, "id1": 1, "w": 3})
    );
    // A right-padded row keeps the right names.
    assert_eq!(
        all().project(None, Some(&r)).to_value(),
        json!({"id": 1, "w": 3})
    );
    assert_eq!(
        all().project(Some(&l), None).to_value(),
        json!({"id": 1, "id0": 2})
    );
}

#[test]
fn fixed_names_and_padding() {
    let p = Projection::new(vec![
        SelectItem::Column {
            side: Side::Left,
            column: "id".into(),
            alias: None,
        },
        SelectItem::Column {
            side: Side::Right,
            column: "id".into(),
            alias: None,
        },
        SelectItem::Column {
            side: Side::Right,
            column: "x".into(),
            alias: Some("id0".into()),
        },
    ]);
    let out = p.project(Some(&Row::parse(br#"{"id":7.50}"#).unwrap()), None);
    assert_eq!(out.json(), br#"{"id":7.50,"id1":null,"id0":null}"#);
}

#[test]
fn keys_are_compact_json_in_key_order() {
    let p = Projection::new(vec![SelectItem::All(Side::Left)]);
    let l = row(json!({"b": 2.0, "a": "x", "s": "\u{0061}"}));
    let key = OutputKey::new(
        &[
            KeyColumn {
                name: "a".into(),
                source: KeySource::Output,
            },
            KeyColumn {
                name: "b".into(),
                source: KeySource::Output,
            },
            KeyColumn {
                name: "c".into(),
                source: KeySource::Output,
            },
            KeyColumn {
                name: "s".into(),
                source: KeySource::Input(Side::Left, "s".into()),
            },
        ],
        &p,
    );
    let (mut out, mut cols) = (Vec::new(), Vec::new());
    assert!(key.needs_columns());
    p.project_into(Some(&l), None, &mut out, Some(&mut cols));
    let start = out.len();
    key.write(&mut out, &cols, &[Some(&l), None]);
    assert_eq!(&out[start..], br#"{"a":"x","b":2,"c":null,"s":"a"}"#);
    let mut v = Vec::new();
    write_key_value(Json::new_unchecked(br#"{"a":1.0,"b":[2.0,2.5]}"#), &mut v);
    assert_eq!(v, br#"{"a":1,"b":[2,2.5]}"#);
    v.clear();
    write_key_value(Json::new_unchecked(br#""\u0061""#), &mut v);
    assert_eq!(v, br#""a""#);
}
