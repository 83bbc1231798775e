//! A validating JSON scanner that builds nothing: it checks that bytes are one JSON value (RFC
//! 8259, with serde_json's limits: nesting depth 128, finite numbers, no lone surrogates) and, for
//! an object, reports where each top-level member's name and value are. It also says whether the
//! text is already compact (no whitespace between tokens, no escapes in top-level names), so the
//! caller can keep the bytes as they are.
//!
//! `skip_value` and `compact_into` work on text already validated (by `scan`, or written by
//! sidejoin itself): they find a value's end and copy it without whitespace.

use smallvec::SmallVec;

/// Nesting deeper than this is refused, as serde_json does.
const MAX_DEPTH: u32 = 128;

/// Where one top-level member is: byte ranges of its name (inside the quotes) and its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub name: (usize, usize),
    pub name_escaped: bool,
    pub value: (usize, usize),
}

/// What `scan` found: the top-level value's kind, its members when it is an object, and whether
/// the text is compact.
#[derive(Debug, Clone)]
pub struct Scanned {
    pub kind: Kind,
    pub members: SmallVec<[Member; 16]>,
    pub compact: bool,
}

/// The type of a JSON value, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Null,
    Bool,
    Number,
    String,
    Array,
    Object,
}

impl Kind {
    /// The kind of the valid JSON value starting with `first`.
    pub fn of(first: u8) -> Kind {
        match first {
            b'n' => Kind::Null,
            b't' | b'f' => Kind::Bool,
            b'"' => Kind::String,
            b'[' => Kind::Array,
            b'{' => Kind::Object,
            _ => Kind::Number,
        }
    }

    /// "a string", "an object", …: for error messages.
    pub fn described(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

/// Invalid JSON: what was wrong and where (1-based line and column, as serde_json reports).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at line {line} column {column}")]
pub struct SyntaxError {
    pub message: &'static str,
    pub line: usize,
    pub column: usize,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
    compact: bool,
}

type Res<T> = Result<T, (usize, &'static str)>;

/// Scans `input` as one JSON value.
pub fn scan(input: &[u8]) -> Result<Scanned, SyntaxError> {
    let mut s = Scanner {
        b: input,
        i: 0,
        depth: 0,
        compact: true,
    };
    let mut members = SmallVec::new();
    let result = s.top(&mut members);
    match result {
        Ok(kind) => Ok(Scanned {
            kind,
            members,
            compact: s.compact,
        }),
        Err((at, message)) => Err(located(input, at, message)),
    }
}

fn located(input: &[u8], at: usize, message: &'static str) -> SyntaxError {
    let at = at.min(input.len());
    let before = &input[..at];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let column = at
        - before
            .iter()
            .rposition(|&c| c == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    SyntaxError {
        message,
        line,
        column,
    }
}

impl Scanner<'_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            self.i += 1;
            self.compact = false;
        }
    }

    fn top(&mut self, members: &mut SmallVec<[Member; 16]>) -> Res<Kind> {
        self.ws();
        let kind = match self.peek() {
            Some(b'{') => {
                self.object(Some(members))?;
                Kind::Object
            }
            Some(c) => {
                self.value()?;
                Kind::of(c)
            }
            None => return Err((self.i, "EOF while parsing a value")),
        };
        self.ws();
        if self.i != self.b.len() {
            return Err((self.i, "trailing characters"));
        }
        Ok(kind)
    }

    fn value(&mut self) -> Res<()> {
        match self.peek() {
            Some(b'"') => self.string().map(|_| ()),
            Some(b'{') => self.object(None),
            Some(b'[') => self.array(),
            Some(b't') => self.literal(b"true"),
            Some(b'f') => self.literal(b"false"),
            Some(b'n') => self.literal(b"null"),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err((self.i, "expected value")),
            None => Err((self.i, "EOF while parsing a value")),
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Res<()> {
        let end = self.i + word.len();
        if self.b.get(self.i..end) == Some(word) {
            self.i = end;
            Ok(())
        } else {
            Err((self.i, "expected ident"))
        }
    }

    fn enter(&mut self) -> Res<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err((self.i, "recursion limit exceeded"));
        }
        Ok(())
    }

    fn object(&mut self, mut members: Option<&mut SmallVec<[Member; 16]>>) -> Res<()> {
        self.enter()?;
        self.i += 1; // `{`
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            match self.peek() {
                Some(b'"') => {}
                Some(_) => return Err((self.i, "key must be a string")),
                None => return Err((self.i, "EOF while parsing an object")),
            }
            let name_start = self.i + 1;
            let name_escaped = self.string()?;
            let name = (name_start, self.i - 1);
            self.ws();
            match self.peek() {
                Some(b':') => self.i += 1,
                Some(_) => return Err((self.i, "expected `:`")),
                None => return Err((self.i, "EOF while parsing an object")),
            }
            self.ws();
            let value_start = self.i;
            self.value()?;
            if let Some(m) = members.as_deref_mut() {
                // Escaped names are rewritten into their shortest form by the row builder.
                if name_escaped {
                    self.compact = false;
                }
                m.push(Member {
                    name,
                    name_escaped,
                    value: (value_start, self.i),
                });
            }
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b'}') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                Some(_) => return Err((self.i, "expected `,` or `}`")),
                None => return Err((self.i, "EOF while parsing an object")),
            }
        }
    }

    fn array(&mut self) -> Res<()> {
        self.enter()?;
        self.i += 1; // `[`
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.value()?;
            self.ws();
            match self.peek() {
                Some(b',') => {
                    self.i += 1;
                    self.ws();
                }
                Some(b']') => {
                    self.i += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                Some(_) => return Err((self.i, "expected `,` or `]`")),
                None => return Err((self.i, "EOF while parsing a list")),
            }
        }
    }

    /// A string starting at the opening quote; returns whether it holds escapes. Non-ASCII
    /// text is checked to be UTF-8 (outside strings it is a syntax error anyway).
    fn string(&mut self) -> Res<bool> {
        self.i += 1;
        let start = self.i;
        let mut escaped = false;
        let mut ascii = true;
        let b = self.b;
        loop {
            // Plain characters in a tight loop; the match below sees only the special ones.
            let mut i = self.i;
            while i < b.len() && b[i] >= 0x20 && b[i] != b'"' && b[i] != b'\\' && b[i] < 0x80 {
                i += 1;
            }
            self.i = i;
            let Some(&c) = b.get(i) else {
                return Err((i, "EOF while parsing a string"));
            };
            match c {
                b'"' => {
                    if !ascii {
                        if let Err(e) = std::str::from_utf8(&b[start..i]) {
                            return Err((start + e.valid_up_to(), "invalid UTF-8"));
                        }
                    }
                    self.i += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.escape()?;
                }
                0x80.. => {
                    ascii = false;
                    self.i += 1;
                }
                _ => {
                    return Err((
                        i,
                        "control character (\\u0000-\\u001F) found while parsing a string",
                    ))
                }
            }
        }
    }

    fn hex4(&self, at: usize) -> Res<u16> {
        let digits = self
            .b
            .get(at..at + 4)
            .ok_or((at, "EOF while parsing a string"))?;
        let mut v: u16 = 0;
        for (k, d) in digits.iter().enumerate() {
            let n = (*d as char)
                .to_digit(16)
                .ok_or((at + k, "invalid escape"))?;
            v = v << 4 | n as u16;
        }
        Ok(v)
    }

    /// One escape sequence at a backslash.
    fn escape(&mut self) -> Res<()> {
        let Some(&c) = self.b.get(self.i + 1) else {
            return Err((self.i + 1, "EOF while parsing a string"));
        };
        match c {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {
                self.i += 2;
                Ok(())
            }
            b'u' => {
                let v = self.hex4(self.i + 2)?;
                self.i += 6;
                match v {
                    0xDC00..=0xDFFF => Err((self.i, "lone leading surrogate in hex escape")),
                    0xD800..=0xDBFF => {
                        if self.b.get(self.i..self.i + 2) != Some(b"\\u") {
                            return Err((self.i, "unexpected end of hex escape"));
                        }
                        let low = self.hex4(self.i + 2)?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err((self.i, "lone leading surrogate in hex escape"));
                        }
                        self.i += 6;
                        Ok(())
                    }
                    _ => Ok(()),
                }
            }
            _ => Err((self.i + 1, "invalid escape")),
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.peek() {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> Res<()> {
        let start = self.i;
        if self.peek() == Some(b'-') {
            self.i += 1;
        }
        let int_digits = match self.peek() {
            Some(b'0') => {
                self.i += 1;
                1
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err((self.i, "invalid number")),
        };
        let mut float = false;
        if self.peek() == Some(b'.') {
            self.i += 1;
            float = true;
            if self.digits() == 0 {
                return Err((self.i, "invalid number"));
            }
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.i += 1;
            float = true;
            if let Some(b'+' | b'-') = self.peek() {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err((self.i, "invalid number"));
            }
        }
        // Beyond what fits an integer, the value is read as a double: it must be finite.
        if float || int_digits > 18 {
            let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or("x");
            if !text.parse::<f64>().is_ok_and(f64::is_finite) {
                return Err((start, "number out of range"));
            }
        }
        Ok(())
    }
}

/// The end of the valid JSON value starting at `at` in `b` (no whitespace inside when `b` is
/// compact; whitespace is skipped otherwise).
pub fn skip_value(b: &[u8], at: usize) -> usize {
    match b.get(at) {
        Some(b'"') => skip_string(b, at),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = skip_string(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                i += 1;
            }
            i
        }
    }
}

/// The members of the valid JSON object text `b` (already checked by `scan`, possibly with
/// whitespace), and whether it is compact in the sense of `Scanned::compact`.
pub fn members(b: &[u8]) -> (SmallVec<[Member; 16]>, bool) {
    let mut out = SmallVec::new();
    let mut compact = true;
    let ws = |i: &mut usize, compact: &mut bool| {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(*i) {
            *i += 1;
            *compact = false;
        }
    };
    let mut i = 0;
    ws(&mut i, &mut compact);
    i += 1; // `{`
    loop {
        ws(&mut i, &mut compact);
        if b.get(i) != Some(&b'"') {
            break;
        }
        let name_end = skip_string(b, i);
        let name = (i + 1, name_end - 1);
        let name_escaped = b[name.0..name.1].contains(&b'\\');
        compact &= !name_escaped;
        i = name_end;
        ws(&mut i, &mut compact);
        i += 1; // `:`
        ws(&mut i, &mut compact);
        let end = skip_value(b, i);
        if matches!(b[i], b'[' | b'{') && has_whitespace(&b[i..end]) {
            compact = false;
        }
        out.push(Member {
            name,
            name_escaped,
            value: (i, end),
        });
        i = end;
        ws(&mut i, &mut compact);
        if b.get(i) == Some(&b',') {
            i += 1;
        }
    }
    (out, compact)
}

/// Whether valid JSON text has whitespace between tokens.
fn has_whitespace(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(b, i),
            b' ' | b'\n' | b'\r' | b'\t' => return true,
            _ => i += 1,
        }
    }
    false
}

/// The end of the valid string whose opening quote is at `at`.
pub fn skip_string(b: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

/// Copies the valid JSON `value` to `out` without whitespace between tokens.
pub fn compact_into(value: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < value.len() {
        match value[i] {
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            b'"' => {
                let end = skip_string(value, i);
                out.extend_from_slice(&value[i..end]);
                i = end;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(s.kind, Kind::Object);
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
            ("null", Kind::Null),
            (" true ", Kind::Bool),
            ("-0.5e+3", Kind::Number),
            (r#""é\n\ud83d\ude00""#, Kind::String),
            ("[1,[2,{}]]", Kind::Array),
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
}
