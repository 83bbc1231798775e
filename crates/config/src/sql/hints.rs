//! MRS/Flink hints: `/*+ NAME(args), NAME(args) */` comments. sqlparser keeps comments as
//! whitespace tokens with their positions, so hints are found among the statement's tokens
//! (with the words before and after them, which say what a hint is attached to) and their text
//! is tokenized again with sqlparser's tokenizer; no SQL is scanned by hand.

use std::iter::Peekable;
use std::slice;

use sqlparser::dialect::GenericDialect;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Whitespace};

use super::error::{At, Result, SqlError};

/// One argument of a hint: `name` / `'name'`, or `'key' = 'value'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum HintArg {
    Name(String),
    Pair(String, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Hint {
    /// Upper-cased: `OPTIONS`, `BROADCAST`, `HASH_BY_KEY`, `STATE_TTL`, …
    pub name: String,
    pub args: Vec<(HintArg, At)>,
    pub at: At,
    /// The significant words right before and after the comment (lower-cased keywords are kept
    /// as written), which tell a table hint's table.
    pub before: Option<String>,
    pub after: Option<String>,
}

impl Hint {
    /// The hint as written, for error messages.
    pub(super) fn text(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|(a, _)| match a {
                HintArg::Name(n) => n.clone(),
                HintArg::Pair(k, v) => format!("'{k}'='{v}'"),
            })
            .collect();
        format!("{}({})", self.name, args.join(", "))
    }
}

fn significant(t: &Token) -> bool {
    !matches!(t, Token::Whitespace(_))
}

fn word_of(t: &TokenWithSpan) -> Option<String> {
    match &t.token {
        Token::Word(w) => Some(w.value.clone()),
        Token::Comma => Some(",".to_owned()),
        _ => None,
    }
}

/// Every hint comment among `tokens`, in order.
pub(super) fn find(tokens: &[TokenWithSpan]) -> Result<Vec<Hint>> {
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let Token::Whitespace(Whitespace::MultiLineComment(text)) = &t.token else {
            continue;
        };
        let Some(body) = text.strip_prefix('+') else {
            continue;
        };
        let before = tokens[..i]
            .iter()
            .rev()
            .find(|t| significant(&t.token))
            .and_then(word_of);
        let after = tokens[i + 1..]
            .iter()
            .find(|t| significant(&t.token))
            .and_then(word_of);
        let origin = At::of(t.span);
        for mut hint in parse_body(body, origin)? {
            hint.before = before.clone();
            hint.after = after.clone();
            out.push(hint);
        }
    }
    Ok(out)
}

/// Maps a position inside the hint's text to the script: the text starts 3 columns after the
/// comment's `/` (past `/*+`).
fn shift(origin: At, t: &TokenWithSpan) -> At {
    let (l, c) = (t.span.start.line, t.span.start.column);
    if l <= 1 {
        At {
            line: origin.line,
            column: origin.column + 3 + c.saturating_sub(1),
        }
    } else {
        At {
            line: origin.line + l - 1,
            column: c,
        }
    }
}

fn text_of(t: &Token) -> Option<String> {
    match t {
        Token::Word(w) => Some(w.value.clone()),
        Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Some(s.clone()),
        Token::Number(n, _) => Some(n.clone()),
        _ => None,
    }
}

/// The significant tokens of a hint's text (`body`, after `/*+`).
fn body_tokens(body: &str, origin: At) -> Result<Vec<TokenWithSpan>> {
    let dialect = GenericDialect {};
    Ok(Tokenizer::new(&dialect, body)
        .tokenize_with_location()
        .map_err(|e| {
            SqlError::new(
                origin,
                format!("/*+{body}*/"),
                format!("cannot read the hint: {e}"),
            )
        })?
        .into_iter()
        .filter(|t| significant(&t.token))
        .collect())
}

/// A hint comment's text (after `/*+`) and where the comment starts, for the errors.
struct Body<'a> {
    text: &'a str,
    origin: At,
}

impl Body<'_> {
    /// The comment cannot be read: `what` was expected at `t` (at the comment when its text
    /// ended).
    fn bad(&self, t: Option<&TokenWithSpan>, what: &str) -> SqlError {
        let at = t.map(|t| shift(self.origin, t)).unwrap_or(self.origin);
        SqlError::new(
            at,
            format!("/*+{}*/", self.text),
            format!("cannot read the hint: expected {what}"),
        )
    }
}

/// The tokens of a hint's text still to read.
type Tokens<'t> = Peekable<slice::Iter<'t, TokenWithSpan>>;

/// `NAME(args) [, NAME(args)]…`
fn parse_body(body: &str, origin: At) -> Result<Vec<Hint>> {
    let tokens = body_tokens(body, origin)?;
    let b = Body { text: body, origin };
    let mut it = tokens.iter().peekable();
    let mut hints = Vec::new();
    while let Some(t) = it.next() {
        hints.push(hint(&b, t, &mut it)?);
        if let Some(t) = it.peek() {
            if t.token == Token::Comma {
                it.next();
            }
        }
    }
    Ok(hints)
}

/// One `NAME(args)`, from its name `t` on.
fn hint(b: &Body, t: &TokenWithSpan, it: &mut Tokens) -> Result<Hint> {
    let Token::Word(w) = &t.token else {
        return Err(b.bad(Some(t), "a hint name such as OPTIONS or BROADCAST"));
    };
    match it.next() {
        Some(t) if t.token == Token::LParen => {}
        other => return Err(b.bad(other, "`(` after the hint name")),
    }
    Ok(Hint {
        name: w.value.to_ascii_uppercase(),
        args: args(b, it)?,
        at: shift(b.origin, t),
        before: None,
        after: None,
    })
}

/// The arguments after `(`, up to its `)`.
fn args(b: &Body, it: &mut Tokens) -> Result<Vec<(HintArg, At)>> {
    let mut args = Vec::new();
    loop {
        let Some(t) = it.next() else {
            return Err(b.bad(None, "`)`"));
        };
        if t.token == Token::RParen && args.is_empty() {
            return Ok(args);
        }
        args.push(arg(b, t, it)?);
        match it.next() {
            Some(t) if t.token == Token::Comma => continue,
            Some(t) if t.token == Token::RParen => return Ok(args),
            other => return Err(b.bad(other, "`,` or `)`")),
        }
    }
}

/// One argument, from its first token `t` on: `name`, or `key = value`.
fn arg(b: &Body, t: &TokenWithSpan, it: &mut Tokens) -> Result<(HintArg, At)> {
    let Some(first) = text_of(&t.token) else {
        return Err(b.bad(Some(t), "a name or a 'key'='value' pair"));
    };
    let at = shift(b.origin, t);
    if it.peek().is_some_and(|n| n.token == Token::Eq) {
        it.next();
        let v = it.next();
        let Some(value) = v.and_then(|v| text_of(&v.token)) else {
            return Err(b.bad(v, "a value after `=`"));
        };
        return Ok((HintArg::Pair(first, value), at));
    }
    Ok((HintArg::Name(first), at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(sql: &str) -> Vec<TokenWithSpan> {
        Tokenizer::new(&GenericDialect {}, sql)
            .tokenize_with_location()
            .unwrap()
    }

    #[test]
    fn finds_hints_with_positions_and_neighbours() {
        let sql = "SELECT /*+ BROADCAST(s),HASH_BY_KEY('l'='user_id') */ a\nFROM l JOIN\n  /*+ OPTIONS('allows.generated-retracts'='false') */ r";
        let hints = find(&tokens(sql)).unwrap();
        assert_eq!(hints.len(), 3);
        assert_eq!(hints[0].name, "BROADCAST");
        assert_eq!(
            hints[0].at,
            At {
                line: 1,
                column: 12
            }
        );
        assert_eq!(hints[0].args[0].0, HintArg::Name("s".into()));
        assert_eq!(hints[0].before.as_deref(), Some("SELECT"));
        assert_eq!(hints[1].name, "HASH_BY_KEY");
        assert_eq!(
            hints[1].args[0].0,
            HintArg::Pair("l".into(), "user_id".into())
        );
        assert_eq!(hints[2].at, At { line: 3, column: 7 });
        assert_eq!(hints[2].before.as_deref(), Some("JOIN"));
        assert_eq!(hints[2].after.as_deref(), Some("r"));
    }

    #[test]
    fn bad_hint_names_its_position() {
        let e = find(&tokens("SELECT /*+ OPTIONS('a' 'b') */ 1")).unwrap_err();
        assert_eq!(e.at.line, 1);
        assert!(e.message.contains("`,` or `)`"), "{e}");
    }
}
