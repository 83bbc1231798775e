//! Flink SQL as configuration (SPEC §13, issue 14): a script of `SET`, `CREATE TABLE` (the two
//! inputs and the sink), at most one `CREATE VIEW` and one `INSERT INTO sink SELECT …` (or a bare
//! `SELECT`, printed as replay prints) becomes the `SIDEJOIN_*` settings it means. `config::load`
//! then validates those settings exactly as it validates the environment: one path.
//!
//! Parsing is sqlparser's (Generic dialect): its tokenizer splits the script and keeps comments
//! with their positions (that is how `/*+ … */` hints are found, `hints.rs`), its parser reads
//! queries, and its pieces (identifiers, types, expressions) read Flink's DDL (`ddl.rs`). This
//! module only decides what the statements mean and refuses what sidejoin cannot run.

mod condition;
mod ddl;
mod error;
mod hints;
mod join_hints;
mod options;
mod output;
mod query;
mod settings;
mod time;

pub use error::{At, SqlError};
pub use settings::{Setting, Settings};

use sqlparser::ast::{SelectItem, SetExpr, Statement, TableFactor, TableObject};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::Side;
use ddl::{Table, TableOption};
use error::{parser_error, Result};
use hints::Hint;

/// What a script means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Translation {
    pub settings: Settings,
    /// Accepted constructs that do not do what a Flink user may expect.
    pub warnings: Vec<String>,
}

/// The query of the script, with the hints written inside its statement.
struct QueryStmt {
    query: Box<sqlparser::ast::Query>,
    sink: Option<(String, At, Vec<String>)>,
    hints: Vec<Hint>,
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

/// Collected statements of the script.
#[derive(Default)]
struct Script {
    tables: Vec<Table>,
    views: Vec<(String, Box<sqlparser::ast::Query>, Vec<Hint>, At)>,
    query: Option<(QueryStmt, At)>,
}

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
            let t = ddl::parse_create_table(tokens)?;
            if script.tables.iter().any(|o| o.name == t.name) {
                return Err(SqlError::new(t.at, &t.name, "table declared twice"));
            }
            script.tables.push(t);
            Ok(())
        }
        ["CREATE", "VIEW", ..] | ["CREATE", "TEMPORARY", "VIEW"] => {
            let hints = hints::find(&tokens)?;
            let Statement::CreateView(v) = parse_statement(tokens, at)? else {
                return Err(SqlError::new(at, "CREATE VIEW", "expected CREATE VIEW name AS SELECT …"));
            };
            script.views.push((v.name.to_string().replace('`', ""), v.query, hints, at));
            Ok(())
        }
        ["INSERT", ..] | ["SELECT", ..] => {
            if let Some((_, prev)) = &script.query {
                return Err(SqlError::new(at, statement_text(&tokens), format!(
                    "a second query: sidejoin runs one join (the first query is at {prev})"
                )));
            }
            let hints = hints::find(&tokens)?;
            let text = statement_text(&tokens);
            let q = match parse_statement(tokens, at)? {
                Statement::Query(query) => QueryStmt { query, sink: None, hints },
                Statement::Insert(ins) => {
                    let TableObject::TableName(name) = &ins.table else {
                        return Err(SqlError::new(at, &text, "expected INSERT INTO <sink table>"));
                    };
                    if ins.overwrite || ins.partitioned.is_some() || ins.on.is_some() || ins.returning.is_some() {
                        return Err(SqlError::new(at, &text, "INSERT OVERWRITE, PARTITION, ON CONFLICT and RETURNING are not supported"));
                    }
                    let Some(query) = ins.source.clone() else {
                        return Err(SqlError::new(at, &text, "expected INSERT INTO sink SELECT …"));
                    };
                    let cols = ins.columns.iter().map(|c| c.to_string().replace('`', "")).collect();
                    QueryStmt { query, sink: Some((name.to_string().replace('`', ""), at, cols)), hints }
                }
                _ => return Err(SqlError::new(at, &text, "expected INSERT INTO sink SELECT … or SELECT …")),
            };
            script.query = Some((q, at));
            Ok(())
        }
        _ => Err(SqlError::new(
            at,
            statement_text(&tokens),
            "unsupported statement (supported: SET, CREATE TABLE, CREATE VIEW, INSERT INTO … SELECT, SELECT)",
        )),
    }
}

/// `SELECT * FROM view`: the view's query, with the hints of both statements.
fn through_view(
    q: QueryStmt,
    views: &[(String, Box<sqlparser::ast::Query>, Vec<Hint>, At)],
) -> Result<QueryStmt> {
    let SetExpr::Select(sel) = q.query.body.as_ref() else {
        return Ok(q);
    };
    let [twj] = sel.from.as_slice() else {
        return Ok(q);
    };
    let TableFactor::Table { name, .. } = &twj.relation else {
        return Ok(q);
    };
    let name = name.to_string().replace('`', "");
    let Some((_, vq, vh, _)) = views.iter().find(|v| v.0 == name) else {
        return Ok(q);
    };
    let star = matches!(sel.projection.as_slice(), [SelectItem::Wildcard(_)]);
    let plain = twj.joins.is_empty()
        && sel.selection.is_none()
        && q.query.order_by.is_none()
        && q.query.limit_clause.is_none();
    if !star || !plain {
        return Err(SqlError::new(
            At::of(sqlparser::ast::Spanned::span(&twj.relation)),
            q.query.to_string(),
            "a view is supported as `SELECT * FROM view` only",
        ));
    }
    let mut hints = vh.clone();
    hints.extend(q.hints);
    Ok(QueryStmt {
        query: vq.clone(),
        sink: q.sink,
        hints,
    })
}

/// Translates a script into the settings it means.
pub fn translate(sql: &str) -> std::result::Result<Translation, SqlError> {
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
    let mut s = Settings::default();
    let mut script = Script::default();
    let mut current = Vec::new();
    for t in tokens {
        if t.token == Token::SemiColon {
            read_statement(&mut script, &mut s, std::mem::take(&mut current))?;
        } else {
            current.push(t);
        }
    }
    read_statement(&mut script, &mut s, current)?;
    let Some((q, _)) = script.query.take() else {
        return Err(SqlError::new(
            At { line: 1, column: 1 },
            "",
            "the script has no INSERT INTO … SELECT or SELECT: nothing to run",
        ));
    };
    let q = through_view(q, &script.views)?;
    let mut warnings = Vec::new();
    let join = query::find_join(&q.query, &script.tables)?;
    if join.inputs[0].table.name == join.inputs[1].table.name {
        return Err(SqlError::new(
            join.join_at,
            &join.inputs[1].table.name,
            "a self-join is not supported: sidejoin's two sides are two topics",
        ));
    }
    let cond = condition::condition(
        join.condition.expect("a join has a condition"),
        &join.inputs,
    )?;
    let select = output::projection(join.select, &join.inputs, &mut warnings)?;
    let mut extra: [Vec<TableOption>; 2] = Default::default();
    join_hints::apply(&mut s, &q.hints, &join.inputs, &mut extra)?;
    for side in Side::BOTH {
        // Dynamic table options replace the WITH options of the same key.
        let mut t = join.inputs[side.index()].table.clone();
        let dynamic = &mut extra[side.index()];
        t.options
            .retain(|o| !dynamic.iter().any(|d| d.key == o.key));
        t.options.append(dynamic);
        options::source(&mut s, side, &t)?;
    }
    let sink_names = match &q.sink {
        Some((name, at, cols)) => {
            let Some(t) = script.tables.iter().find(|t| &t.name == name) else {
                return Err(SqlError::new(
                    *at,
                    name,
                    "unknown sink table: declare it with CREATE TABLE first",
                ));
            };
            options::sink(&mut s, t)?;
            Some(if cols.is_empty() {
                t.physical().map(|c| c.name.clone()).collect::<Vec<_>>()
            } else {
                cols.clone()
            })
        }
        None => None,
    };
    output::settings(&mut s, &join, &cond, &select, sink_names.as_deref())?;
    Ok(Translation {
        settings: s,
        warnings,
    })
}

#[cfg(test)]
mod tests;
