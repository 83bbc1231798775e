//! The type of a JSON value, told from its first byte.

/// The type of a JSON value, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonKind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl JsonKind {
    /// The kind of the valid JSON value starting with `first`.
    pub fn of(first: u8) -> JsonKind {
        match first {
            b'n' => JsonKind::Null,
            b't' | b'f' => JsonKind::Bool,
            b'"' => JsonKind::String,
            b'[' => JsonKind::Array,
            b'{' => JsonKind::Object,
            _ => JsonKind::Number,
        }
    }

    /// "a string", "an object", …: for error messages.
    pub fn described(self) -> &'static str {
        match self {
            JsonKind::Null => "null",
            JsonKind::Bool => "a boolean",
            JsonKind::Number => "a number",
            JsonKind::String => "a string",
            JsonKind::Array => "an array",
            JsonKind::Object => "an object",
        }
    }
}
