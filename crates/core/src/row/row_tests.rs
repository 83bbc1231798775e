use super::*;
use serde_json::json;

fn names(r: &Row) -> Vec<String> {
    r.columns()
        .map(|(n, _)| String::from_utf8(n.to_vec()).unwrap())
        .collect()
}

#[test]
fn compact_objects_are_kept_as_they_are() {
    let text = br#"{"id":1.50,"name":"x y","tags":[1, 2]}"#;
    let r = Row::parse(text).unwrap();
    // Not compact (a space inside the array): rewritten without it.
    assert_eq!(r.json(), br#"{"id":1.50,"name":"x y","tags":[1,2]}"#);
    let r2 = Row::parse(r.json()).unwrap();
    assert_eq!(r2.json(), r.json());
    assert_eq!(r.get(b"id").unwrap().as_bytes(), b"1.50");
    assert_eq!(r.get(b"name").unwrap().as_str().unwrap(), "x y");
    assert_eq!(r.get(b"tags").unwrap().as_bytes(), b"[1,2]");
    assert!(r.get(b"missing").is_none());
    assert_eq!(names(&r), ["id", "name", "tags"]);
    assert_eq!(Row::from_compact(r.json()), r);
}

#[test]
fn whitespace_escapes_and_duplicates_are_normalised() {
    let r = Row::parse(b" { \"a\" : 1 , \"\\u0062\" : \"\\u0063\", \"a\": 2 } ").unwrap();
    assert_eq!(r.json(), br#"{"a":2,"b":"\u0063"}"#);
    assert_eq!(r.get(b"b").unwrap().as_str().unwrap(), "c");
    let r = Row::parse(br#"{"q\"uote":1}"#).unwrap();
    assert_eq!(names(&r), ["q\\\"uote"]);
}

#[test]
fn non_objects_and_bad_json_are_errors() {
    assert_eq!(
        Row::parse(b"\"x\"").unwrap_err().to_string(),
        "is not a JSON object (found a string)"
    );
    assert!(Row::parse(b"{\"a\":}")
        .unwrap_err()
        .to_string()
        .starts_with("is not valid JSON: expected value"));
}

#[test]
fn large_rows_use_wide_offsets() {
    let big = "x".repeat(70_000);
    let r = Row::from_value(&json!({"a": big, "b": 2})).unwrap();
    assert_eq!(r.get(b"b").unwrap().as_bytes(), b"2");
    assert_eq!(r.get(b"a").unwrap().as_bytes().len(), 70_002);
    assert_eq!(Row::from_compact(r.json()), r);
}

#[test]
fn builder_sets_and_replaces_columns() {
    let base = Row::parse(br#"{"v":1}"#).unwrap();
    let mut b = RowBuilder::from_row(&base);
    b.set_if_absent(b"id", b"7");
    b.set_if_absent(b"v", b"9");
    b.set_raw(b"w", b"[1, 2]");
    let r = b.finish();
    assert_eq!(r.json(), br#"{"v":1,"id":7,"w":[1,2]}"#);
    assert_eq!(Row::empty().json(), b"{}");
    assert_eq!(Row::empty().width(), 0);
}
