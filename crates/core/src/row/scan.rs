//! A validating JSON scanner that builds nothing: it checks that bytes are one JSON value (RFC
//! 8259, with serde_json's limits: nesting depth 128, finite numbers, no lone surrogates) and, for
//! an object, reports where each top-level member's name and value are. It also says whether the
//! text is already compact (no whitespace between tokens, no escapes in top-level names), so the
//! caller can keep the bytes as they are.
//!
//! `skip_value` and `compact_into` work on text already validated (by `scan`, or written by
//! sidejoin itself): they find a value's end and copy it without whitespace.

use smallvec::SmallVec;

mod kind;
mod reserved;
mod validated;
pub use kind::JsonKind;
pub use validated::{compact_into, members, skip_string, skip_value};

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
    pub kind: JsonKind,
    pub members: SmallVec<[Member; 16]>,
    pub compact: bool,
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

    fn top(&mut self, members: &mut SmallVec<[Member; 16]>) -> Res<JsonKind> {
        self.ws();
        let kind = match self.peek() {
            Some(b'{') => {
                self.object(Some(members))?;
                JsonKind::Object
            }
            Some(c) => {
                self.value()?;
                JsonKind::of(c)
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
        let mut first = true;
        loop {
            match self.peek() {
                Some(b'"') => {}
                Some(_) => return Err((self.i, "key must be a string")),
                None => return Err((self.i, "EOF while parsing an object")),
            }
            let name_start = self.i + 1;
            let name_escaped = self.string()?;
            let name = (name_start, self.i - 1);
            if first && reserved::is_reserved(&self.b[name_start - 1..self.i], name_escaped) {
                return Err((name_start, reserved::RESERVED_NAME));
            }
            first = false;
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

#[cfg(test)]
#[path = "scan_tests.rs"]
mod tests;
