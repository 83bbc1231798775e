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
