//! A script's statements, read one at a time: `SET` becomes settings, `CREATE TABLE` and
//! `CREATE VIEW` are collected, and so is the one query (`INSERT INTO sink SELECT …` or a bare
//! `SELECT …`) with the hints written inside it. What the query means is `mod.rs`'s job.

use sqlparser::ast::{Insert, Query, Statement, TableObject};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use super::ddl::{self, Table};
use super::error::{parser_error, At, Result, SqlError};
use super::hints::{self, Hint};
use super::settings::Settings;
use super::time;

/// The query of the script, with the hints written inside its statement.
pub(super) struct QueryStmt {
    pub query: Box<Query>,
    /// `INSERT INTO` a sink: its name, where the statement starts and the columns it lists.
    pub sink: Option<(String, At, Vec<String>)>,
    pub hints: Vec<Hint>,
}

/// A `CREATE VIEW`: its name, its query, the hints written inside it and where it starts.
pub(super) type View = (String, Box<Query>, Vec<Hint>, At);

/// Collected statements of the script.
#[derive(Default)]
pub(super) struct Script {
    pub tables: Vec<Table>,
    pub views: Vec<View>,
    pub query: Option<(QueryStmt, At)>,
}

/// Tokenizes `sql` and reads its statements (split at `;`) in order, `SET`s into `s`.
pub(super) fn read(sql: &str, s: &mut Settings) -> Result<Script> {
    let dialect = GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize_with_location()
        .map_err(|e| {
            SqlError::new(
                At::from(e.location),
                "",
                format!("cannot read the script: {}", e.message),
            )
        })?;
    let mut script = Script::default();
    let mut current = Vec::new();
    for t in tokens {
        if t.token == Token::SemiColon {
            read_statement(&mut script, s, std::mem::take(&mut current))?;
        } else {
            current.push(t);
        }
    }
    read_statement(&mut script, s, current)?;
    Ok(script)
}

fn significant(t: &TokenWithSpan) -> bool {
    !matches!(t.token, Token::Whitespace(_))
}

fn first_words(tokens: &[TokenWithSpan], n: usize) -> Vec<String> {
    tokens
        .iter()
        .filter(|t| significant(t))
        .take(n)
        .map(|t| match &t.token {
            Token::Word(w) => w.value.to_ascii_uppercase(),
            other => other.to_string(),
        })
        .collect()
}

fn statement_text(tokens: &[TokenWithSpan]) -> String {
    tokens.iter().map(|t| t.token.to_string()).collect()
}

fn parse_statement(tokens: Vec<TokenWithSpan>, at: At) -> Result<Statement> {
    let dialect = GenericDialect {};
    let mut p = Parser::new(&dialect).with_tokens_with_locations(tokens);
    p.parse_statement().map_err(|e| parser_error(at, e))
}

/// `SET 'key' = 'value'` (or unquoted): the Flink settings sidejoin has an equivalent for.
fn set_statement(s: &mut Settings, tokens: &[TokenWithSpan], at: At) -> Result<()> {
    let sig: Vec<&TokenWithSpan> = tokens.iter().filter(|t| significant(t)).skip(1).collect();
    let text = statement_text(tokens);
    let Some(eq) = sig.iter().position(|t| t.token == Token::Eq) else {
        return Err(SqlError::new(at, &text, "expected SET 'key' = 'value'"));
    };
    let unquote = |t: &Token| match t {
        Token::SingleQuotedString(v) | Token::DoubleQuotedString(v) => v.clone(),
        other => other.to_string(),
    };
    let key: String = match &sig[..eq] {
        [one] => unquote(&one.token),
        many => many.iter().map(|t| t.token.to_string()).collect(),
    };
    let value: String = match &sig[eq + 1..] {
        [one] => unquote(&one.token),
        _ => return Err(SqlError::new(at, &text, "expected one value after `=`")),
    };
    let dur = |v: &str| {
        time::flink_duration_ms(v)
            .map(time::env_duration)
            .ok_or_else(|| {
                SqlError::new(
                    at,
                    &text,
                    "expected a duration such as '1 h', '30 min', '7 d' or milliseconds",
                )
            })
    };
    match key.as_str() {
        "table.exec.state.ttl" => s.set("STATE_TTL", dur(&value)?, at, &text),
        "table.exec.source.idle-timeout" => s.set("IDLE_TIMEOUT", dur(&value)?, at, &text),
        _ => Err(SqlError::new(
            at,
            &text,
            "unsupported setting (supported: table.exec.state.ttl, table.exec.source.idle-timeout)",
        )),
    }
}

/// Refuses a hint in a statement other than a query or view (hints say how to run a query).
fn no_hints(tokens: &[TokenWithSpan]) -> Result<()> {
    match hints::find(tokens)?.first() {
        Some(h) => Err(SqlError::new(
            h.at,
            h.text(),
            "hints belong in the query (after SELECT or a table name)",
        )),
        None => Ok(()),
    }
}

/// One statement, told by its first words; one of only whitespace and comments (as after the
/// last `;`) is skipped.
fn read_statement(script: &mut Script, s: &mut Settings, tokens: Vec<TokenWithSpan>) -> Result<()> {
    let Some(first) = tokens.iter().find(|t| significant(t)) else {
        return Ok(());
    };
    let at = At::of(first.span);
    let words = first_words(&tokens, 3);
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["SET", ..] => {
            no_hints(&tokens)?;
            set_statement(s, &tokens, at)
        }
        ["CREATE", "TABLE", ..] | ["CREATE", "TEMPORARY", "TABLE"] => {
            no_hints(&tokens)?;
            create_table(script, tokens)
        }
        ["CREATE", "VIEW", ..] | ["CREATE", "TEMPORARY", "VIEW"] => create_view(script, tokens, at),
        ["INSERT", ..] | ["SELECT", ..] => query(script, tokens, at),
        _ => Err(SqlError::new(
            at,
            statement_text(&tokens),
            "unsupported statement (supported: SET, CREATE TABLE, CREATE VIEW, INSERT INTO … SELECT, SELECT)",
        )),
    }
}

/// `CREATE TABLE`: a table of the script, declared once.
fn create_table(script: &mut Script, tokens: Vec<TokenWithSpan>) -> Result<()> {
    let t = ddl::parse_create_table(tokens)?;
    if script.tables.iter().any(|o| o.name == t.name) {
        return Err(SqlError::new(t.at, &t.name, "table declared twice"));
    }
    script.tables.push(t);
    Ok(())
}

/// `CREATE VIEW name AS SELECT …`, with the hints written inside it.
fn create_view(script: &mut Script, tokens: Vec<TokenWithSpan>, at: At) -> Result<()> {
    let hints = hints::find(&tokens)?;
    let Statement::CreateView(v) = parse_statement(tokens, at)? else {
        return Err(SqlError::new(
            at,
            "CREATE VIEW",
            "expected CREATE VIEW name AS SELECT …",
        ));
    };
    script
        .views
        .push((v.name.to_string().replace('`', ""), v.query, hints, at));
    Ok(())
}

/// The script's one query: `INSERT INTO sink SELECT …` or `SELECT …`.
fn query(script: &mut Script, tokens: Vec<TokenWithSpan>, at: At) -> Result<()> {
    if let Some((_, prev)) = &script.query {
        return Err(SqlError::new(
            at,
            statement_text(&tokens),
            format!("a second query: sidejoin runs one join (the first query is at {prev})"),
        ));
    }
    let hints = hints::find(&tokens)?;
    let text = statement_text(&tokens);
    let q = match parse_statement(tokens, at)? {
        Statement::Query(query) => QueryStmt {
            query,
            sink: None,
            hints,
        },
        Statement::Insert(ins) => insert_into(&ins, hints, at, &text)?,
        _ => {
            return Err(SqlError::new(
                at,
                &text,
                "expected INSERT INTO sink SELECT … or SELECT …",
            ))
        }
    };
    script.query = Some((q, at));
    Ok(())
}

/// `INSERT INTO sink [(columns)] SELECT …`; OVERWRITE, PARTITION, ON CONFLICT and RETURNING
/// are refused. `text` is the statement, for the errors.
fn insert_into(ins: &Insert, hints: Vec<Hint>, at: At, text: &str) -> Result<QueryStmt> {
    let TableObject::TableName(name) = &ins.table else {
        return Err(SqlError::new(at, text, "expected INSERT INTO <sink table>"));
    };
    if ins.overwrite || ins.partitioned.is_some() || ins.on.is_some() || ins.returning.is_some() {
        return Err(SqlError::new(
            at,
            text,
            "INSERT OVERWRITE, PARTITION, ON CONFLICT and RETURNING are not supported",
        ));
    }
    let Some(query) = ins.source.clone() else {
        return Err(SqlError::new(
            at,
            text,
            "expected INSERT INTO sink SELECT …",
        ));
    };
    let cols = ins
        .columns
        .iter()
        .map(|c| c.to_string().replace('`', ""))
        .collect();
    Ok(QueryStmt {
        query,
        sink: Some((name.to_string().replace('`', ""), at, cols)),
        hints,
    })
}
