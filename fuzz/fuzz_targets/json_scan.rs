//! The JSON scanner against serde_json: the same inputs accepted, and for objects the same
//! values (a row's compact text reads back as what serde_json read from the input).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sidejoin_core::row::{scan, JsonKind, Row};

fuzz_target!(|data: &[u8]| {
    let ours = scan::scan(data);
    let theirs = serde_json::from_slice::<serde_json::Value>(data);
    // Where the scanner is stricter than serde_json with `arbitrary_precision` (which keeps a
    // number's text instead of reading it as a double), by design
    // (docs/src/operations/hostile-input.md#bounds): it refuses an object whose first member is
    // named `$serde_json::private::Number` (serde_json reads it as a number or refuses it), and a
    // number no finite double holds (`4e999999`; serde_json without the feature refuses it too).
    if ours.as_ref().is_err_and(|e| {
        e.message.contains("$serde_json::private::Number") || e.message == "number out of range"
    }) {
        return;
    }
    assert_eq!(
        ours.is_ok(),
        theirs.is_ok(),
        "scan: {ours:?}, serde_json: {theirs:?}"
    );
    let (Ok(scanned), Ok(value)) = (ours, theirs) else {
        return;
    };
    if scanned.kind != JsonKind::Object {
        return;
    }
    let row = Row::parse(data).expect("scan accepted an object");
    let back: serde_json::Value = serde_json::from_slice(row.json()).expect("a row's text is JSON");
    assert_eq!(back, value);
    assert_eq!(row.width(), value.as_object().map_or(0, |o| o.len()));
});
