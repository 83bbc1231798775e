use super::*;

fn ok(s: &str) -> Scanned {
    scan(s.as_bytes()).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn err(s: &str) -> String {
    match scan(s.as_bytes()) {
        Ok(_) => panic!("{s} was accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn objects_report_their_members() {
    let s = ok(r#"{"a":1,"b":"x","c":{"d":[1,2]}}"#);
    assert_eq!(s.kind, JsonKind::Object);
    assert!(s.compact);
    let text = br#"{"a":1,"b":"x","c":{"d":[1,2]}}"#;
    let names: Vec<&[u8]> = s
        .members
        .iter()
        .map(|m| &text[m.name.0..m.name.1])
        .collect();
    assert_eq!(names, [&b"a"[..], b"b", b"c"]);
    let values: Vec<&[u8]> = s
        .members
        .iter()
        .map(|m| &text[m.value.0..m.value.1])
        .collect();
    assert_eq!(values, [&b"1"[..], b"\"x\"", br#"{"d":[1,2]}"#]);
    assert!(!ok(r#"{ "a": 1 }"#).compact);
    assert!(!ok(r#"{"\u0061":1}"#).compact);
    assert!(
        ok(r#"{"a":"x y"}"#).compact,
        "spaces inside strings are content"
    );
}

#[test]
fn other_values_are_valid_too() {
    for (s, kind) in [
        ("null", JsonKind::Null),
        (" true ", JsonKind::Bool),
        ("-0.5e+3", JsonKind::Number),
        (r#""é\n\ud83d\ude00""#, JsonKind::String),
        ("[1,[2,{}]]", JsonKind::Array),
    ] {
        assert_eq!(ok(s).kind, kind, "{s}");
    }
}

#[test]
fn invalid_json_is_located() {
    assert_eq!(err(""), "EOF while parsing a value at line 1 column 1");
    assert_eq!(err("{\n\"a\" 1}"), "expected `:` at line 2 column 5");
    for s in [
        "{\"a\":1,}",
        "[1,]",
        "01",
        "1.",
        ".5",
        "+1",
        "1e",
        "nul",
        "\"a",
        "\"\\x\"",
        "\"\u{1}\"",
        "\"\\udc00\"",
        "\"\\ud800\"",
        "{1:2}",
        "1 2",
        "1e400",
    ] {
        err(s);
    }
    assert!(scan(b"\"\xff\"").is_err());
    let deep = "[".repeat(129) + &"]".repeat(129);
    assert!(err(&deep).contains("recursion limit"));
    let ok_deep = "[".repeat(128) + &"]".repeat(128);
    ok(&ok_deep);
}

#[test]
fn members_of_valid_objects() {
    let text = br#" { "a" : [1, 2], "b":{"c":1}, "\u0064": 3 } "#;
    let (m, compact) = members(text);
    assert!(!compact);
    assert_eq!(m.len(), 3);
    assert_eq!(&text[m[0].value.0..m[0].value.1], b"[1, 2]");
    assert!(m[2].name_escaped);
    let (m, compact) = members(br#"{"a":[1,2],"b":"x y"}"#);
    assert!(compact);
    assert_eq!(m, scan(br#"{"a":[1,2],"b":"x y"}"#).unwrap().members);
    assert!(!members(br#"{"a":[1, 2]}"#).1);
    assert!(members(b"{}").0.is_empty());
}

#[test]
fn values_are_skipped_and_compacted() {
    let text = br#"{"a": [1, {"b": "x, }"}], "c": 2}"#;
    assert_eq!(skip_value(text, 6), 24);
    let mut out = Vec::new();
    compact_into(text, &mut out);
    assert_eq!(out, br#"{"a":[1,{"b":"x, }"}],"c":2}"#);
    assert_eq!(skip_value(br#""a\"b",1"#, 0), 6);
    assert_eq!(skip_value(b"-1.5e3,", 0), 6);
}

/// Fuzzing found it (stored_row): `{"$serde_json::private::Number":0}` is valid JSON that
/// serde_json, with `arbitrary_precision`, refuses to read as a value, and it reads
/// `{"$serde_json::private::Number":"5"}` as the number 5 — an object that would change or
/// vanish wherever sidejoin parses a row into a `Value`. The scanner refuses an object whose
/// first member has that name, at any depth and however it is escaped.
#[test]
fn serde_jsons_reserved_number_name_is_refused_as_serde_json_refuses_it() {
    for text in [
        r#"{"$serde_json::private::Number":0}"#,
        r#"{"$serde_json::private::Number":"5"}"#,
        r#"{"a":[{"$serde_json::private::Number":"5","b":1}]}"#,
        r#"{"\u0024serde_json::private::Number":"5"}"#,
    ] {
        assert!(err(text).contains("reserved by the JSON parser"), "{text}");
        let theirs = serde_json::from_str::<serde_json::Value>(text);
        assert!(theirs.is_err() || !text.starts_with("{\"a\"") && theirs.unwrap().is_number());
    }
    // Not as a later member: serde_json reads those as names like any other.
    let later = r#"{"a":1,"$serde_json::private::Number":"5"}"#;
    ok(later);
    assert!(serde_json::from_str::<serde_json::Value>(later).is_ok());
}
