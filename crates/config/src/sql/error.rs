//! Errors of the SQL front end: each quotes the construct at fault with its line and column
//! (1-based, as the user's editor shows them) and says what sidejoin accepts instead.

use std::fmt;

use sqlparser::tokenizer::{Location, Span};

/// A position in the script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct At {
    pub line: u64,
    pub column: u64,
}

impl At {
    pub fn of(span: Span) -> At {
        At::from(span.start)
    }
}

impl From<Location> for At {
    fn from(l: Location) -> At {
        At {
            line: l.line,
            column: l.column,
        }
    }
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}", self.line, self.column)
    }
}

/// One construct sidejoin cannot run, or a script it cannot read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SqlError {
    pub at: At,
    /// The construct as written (or as sqlparser prints it), shortened.
    pub construct: String,
    pub message: String,
}

/// Shortens a quoted construct to one readable line.
fn short(text: &str) -> String {
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &one_line[..i]),
        None => one_line,
    }
}

impl SqlError {
    pub fn new(at: At, construct: impl AsRef<str>, message: impl Into<String>) -> SqlError {
        SqlError {
            at,
            construct: short(construct.as_ref()),
            message: message.into(),
        }
    }
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.construct.is_empty() {
            write!(f, "{}: {}", self.at, self.message)
        } else {
            write!(f, "{}: `{}`: {}", self.at, self.construct, self.message)
        }
    }
}

pub(super) type Result<T> = std::result::Result<T, SqlError>;

/// A sqlparser error, which already names its line and column, as a `SqlError`.
pub(super) fn parser_error(at: At, e: sqlparser::parser::ParserError) -> SqlError {
    let text = e.to_string();
    let text = text.strip_prefix("sql parser error: ").unwrap_or(&text);
    // sqlparser ends its messages with " at Line: L, Column: C"; that position is more precise.
    let (message, at) = match text.rsplit_once(" at Line: ") {
        Some((msg, pos)) => {
            let mut nums = pos.split(", Column: ").map(|n| n.trim().parse::<u64>());
            match (nums.next(), nums.next()) {
                (Some(Ok(line)), Some(Ok(column))) => (msg, At { line, column }),
                _ => (text, at),
            }
        }
        None => (text, at),
    };
    SqlError {
        at,
        construct: String::new(),
        message: format!("cannot parse: {message}"),
    }
}
