//! The one object member name the scanner refuses though it is valid JSON.

/// The name serde_json (with `arbitrary_precision`, which the workspace enables so numbers keep
/// their text) reads as "this object is a number" when an object's first member has it: such an
/// object would read back as another value, or not at all, wherever sidejoin parses JSON into a
/// `serde_json::Value` (Avro output, nested equality). It is refused instead.
const NUMBER_TOKEN: &[u8] = b"$serde_json::private::Number";
pub(super) const RESERVED_NAME: &str =
    "an object whose first member is named `$serde_json::private::Number` (reserved by the JSON parser)";

/// Whether `quoted` (a scanned string with its quotes, `escaped` if it holds escapes) is the
/// name serde_json reserves.
pub(super) fn is_reserved(quoted: &[u8], escaped: bool) -> bool {
    if escaped {
        serde_json::from_slice::<String>(quoted).is_ok_and(|n| n.as_bytes() == NUMBER_TOKEN)
    } else {
        &quoted[1..quoted.len() - 1] == NUMBER_TOKEN
    }
}
