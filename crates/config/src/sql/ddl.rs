//! `CREATE TABLE` in Flink's dialect: physical columns with their types, `PROCTIME()` computed
//! columns, `WATERMARK FOR col AS col - INTERVAL …`, `PRIMARY KEY (…) NOT ENFORCED` and the
//! `WITH ('key' = 'value', …)` options.
//!
//! sqlparser has no grammar for Flink's DDL, so this drives its `Parser` piece by piece
//! (identifiers, data types, expressions) over the statement's tokens; nothing here tokenizes or
//! parses text by hand. What the options mean is `options.rs`'s job.

use sqlparser::ast::{Expr, Ident};
use sqlparser::dialect::GenericDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{IsOptional, Parser};
use sqlparser::tokenizer::{Token, TokenWithSpan};

use super::error::{parser_error, At, Result, SqlError};
use super::time::interval_ms;

/// A column of a table, in declared order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Column {
    pub name: String,
    /// The declared type as sqlparser prints it (`VARCHAR`, `INT`, `TIMESTAMP(3)`); `None` for a
    /// computed `PROCTIME()` column, which sidejoin does not materialise.
    pub ty: Option<String>,
    pub at: At,
}

/// One `WITH` option.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct TableOption {
    pub key: String,
    pub value: String,
    pub at: At,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Table {
    pub name: String,
    pub at: At,
    pub columns: Vec<Column>,
    pub primary_key: Option<(Vec<String>, At)>,
    /// `(time column, delay in ms, position)`.
    pub watermark: Option<(String, i64, At)>,
    pub options: Vec<TableOption>,
}

impl Table {
    /// The physical columns (what a record holds), in declared order.
    pub(super) fn physical(&self) -> impl Iterator<Item = &Column> {
        self.columns.iter().filter(|c| c.ty.is_some())
    }

    pub(super) fn has_column(&self, name: &str) -> bool {
        self.columns.iter().any(|c| c.name == name)
    }

    pub(super) fn option(&self, key: &str) -> Option<&TableOption> {
        self.options.iter().rev().find(|o| o.key == key)
    }
}

fn at_of(t: &TokenWithSpan) -> At {
    At::of(t.span)
}

/// Where the parser stands (the next token).
fn here(p: &Parser) -> At {
    at_of(p.peek_token_ref())
}

/// Runs a parser step, turning its error into a `SqlError` at the position it started from.
macro_rules! wrap {
    ($p:expr, $step:expr) => {{
        let at = here(&*$p);
        $step.map_err(|e| parser_error(at, e))
    }};
}

fn ident_name(i: &Ident) -> String {
    i.value.clone()
}

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.value.eq_ignore_ascii_case(word) && w.quote_style.is_none())
}

/// Parses one `CREATE TABLE` statement from its tokens (comments included).
pub(super) fn parse_create_table(tokens: Vec<TokenWithSpan>) -> Result<Table> {
    let dialect = GenericDialect {};
    let mut p = Parser::new(&dialect).with_tokens_with_locations(tokens);
    let mut table = table_name(&mut p)?;
    table_elements(&mut p, &mut table)?;
    // A table comment is read and dropped.
    if p.parse_keyword(Keyword::COMMENT) {
        wrap!(&p, p.parse_literal_string())?;
    }
    expect_with(&mut p, &table.name)?;
    table.options = with_options(&mut p)?;
    let rest = p.peek_token();
    if rest.token != Token::EOF {
        return Err(SqlError::new(
            at_of(&rest),
            rest.token.to_string(),
            "unexpected text after the WITH options",
        ));
    }
    Ok(table)
}

/// `CREATE [TEMPORARY] TABLE [IF NOT EXISTS] name`: the table, with no columns or options yet.
fn table_name(p: &mut Parser) -> Result<Table> {
    wrap!(p, p.expect_keyword(Keyword::CREATE))?;
    let _ = p.parse_keyword(Keyword::TEMPORARY);
    wrap!(p, p.expect_keyword(Keyword::TABLE))?;
    let _ = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name_at = here(p);
    let name = wrap!(p, p.parse_object_name(false))?;
    if name.0.len() != 1 {
        return Err(SqlError::new(
            name_at,
            name.to_string(),
            "expected a plain table name (catalogs and databases are not supported)",
        ));
    }
    Ok(Table {
        name: name.0[0]
            .as_ident()
            .map(ident_name)
            .unwrap_or_else(|| name.to_string()),
        at: name_at,
        columns: Vec::new(),
        primary_key: None,
        watermark: None,
        options: Vec::new(),
    })
}

/// `(element, element, …)`: the columns, watermark and constraints.
fn table_elements(p: &mut Parser, table: &mut Table) -> Result<()> {
    wrap!(p, p.expect_token(&Token::LParen))?;
    loop {
        table_element(p, table)?;
        if p.consume_token(&Token::Comma) {
            continue;
        }
        wrap!(p, p.expect_token(&Token::RParen))?;
        return Ok(());
    }
}

/// The `WITH` after the column list: sidejoin needs the options (connector, format), and
/// supports no other clause there.
fn expect_with(p: &mut Parser, table: &str) -> Result<()> {
    let at = here(p);
    if p.parse_keyword(Keyword::WITH) {
        return Ok(());
    }
    let t = p.peek_token();
    if t.token == Token::EOF {
        return Err(SqlError::new(
            at,
            format!("CREATE TABLE {table}"),
            "expected WITH ('connector' = …): sidejoin needs each table's connector and format",
        ));
    }
    Err(SqlError::new(
        at,
        t.token.to_string(),
        "expected WITH (…) after the column list (PARTITIONED BY, LIKE and the like are not supported)",
    ))
}

/// `('key' = 'value', …)` after `WITH`, in written order.
fn with_options(p: &mut Parser) -> Result<Vec<TableOption>> {
    let mut options = Vec::new();
    wrap!(p, p.expect_token(&Token::LParen))?;
    loop {
        let at = here(p);
        let key = wrap!(p, p.parse_literal_string())?;
        wrap!(p, p.expect_token(&Token::Eq))?;
        let value = wrap!(p, p.parse_literal_string())?;
        options.push(TableOption { key, value, at });
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    wrap!(p, p.expect_token(&Token::RParen))?;
    Ok(options)
}

fn primary_key(p: &mut Parser, table: &mut Table, at: At) -> Result<()> {
    wrap!(p, p.expect_keyword(Keyword::KEY))?;
    let cols = wrap!(
        p,
        p.parse_parenthesized_column_list(IsOptional::Mandatory, false)
    )?;
    not_enforced(p, at)?;
    set_primary_key(table, cols.iter().map(ident_name).collect(), at)
}

fn set_primary_key(table: &mut Table, cols: Vec<String>, at: At) -> Result<()> {
    if table.primary_key.is_some() {
        return Err(SqlError::new(
            at,
            "PRIMARY KEY",
            "a table has at most one primary key",
        ));
    }
    table.primary_key = Some((cols, at));
    Ok(())
}

/// Flink only accepts `NOT ENFORCED` primary keys; so does sidejoin.
fn not_enforced(p: &mut Parser, at: At) -> Result<()> {
    if p.parse_keywords(&[Keyword::NOT, Keyword::ENFORCED]) {
        Ok(())
    } else {
        Err(SqlError::new(
            at,
            "PRIMARY KEY",
            "expected NOT ENFORCED after the primary key (as Flink requires)",
        ))
    }
}

/// One item of the column list: a column, a computed column, a watermark or a constraint.
fn table_element(p: &mut Parser, table: &mut Table) -> Result<()> {
    let at = here(p);
    let next = p.peek_token().token;
    if is_word(&next, "watermark") {
        p.next_token();
        return watermark(p, table, at);
    }
    if p.parse_keyword(Keyword::PRIMARY) {
        return primary_key(p, table, at);
    }
    if p.parse_keyword(Keyword::CONSTRAINT) {
        wrap!(p, p.parse_identifier())?;
        wrap!(p, p.expect_keyword(Keyword::PRIMARY))?;
        return primary_key(p, table, at);
    }
    let name = wrap!(p, p.parse_identifier())?;
    if p.parse_keyword(Keyword::AS) {
        return proctime_column(p, table, name.value, at);
    }
    physical_column(p, table, name.value, at)
}

/// `FOR col AS col - INTERVAL …`, after `WATERMARK`.
fn watermark(p: &mut Parser, table: &mut Table, at: At) -> Result<()> {
    wrap!(p, p.expect_keyword(Keyword::FOR))?;
    let col = wrap!(p, p.parse_identifier())?;
    wrap!(p, p.expect_keyword(Keyword::AS))?;
    let expr_at = here(p);
    let expr = wrap!(p, p.parse_expr())?;
    let delay = watermark_delay(&col.value, &expr, expr_at)?;
    table.watermark = Some((col.value, delay, at));
    Ok(())
}

/// The expression after `name AS`: only `PROCTIME()` is accepted, as a column sidejoin does
/// not materialise.
fn proctime_column(p: &mut Parser, table: &mut Table, name: String, at: At) -> Result<()> {
    let expr_at = here(p);
    let expr = wrap!(p, p.parse_expr())?;
    let is_proctime = matches!(&expr, Expr::Function(f)
        if f.name.to_string().eq_ignore_ascii_case("proctime") && f.args.to_string() == "()");
    if !is_proctime {
        return Err(SqlError::new(
            expr_at,
            expr.to_string(),
            "computed columns are not supported, except `name AS PROCTIME()` (accepted, not materialised)",
        ));
    }
    table.columns.push(Column { name, ty: None, at });
    Ok(())
}

/// `name TYPE [options]`: a column the records hold.
fn physical_column(p: &mut Parser, table: &mut Table, name: String, at: At) -> Result<()> {
    let ty = wrap!(p, p.parse_data_type())?;
    column_options(p, table, &name)?;
    if table.has_column(&name) {
        return Err(SqlError::new(at, &name, "column declared twice"));
    }
    table.columns.push(Column {
        name,
        ty: Some(ty.to_string()),
        at,
    });
    Ok(())
}

/// Column options up to the list's next `,` or `)`: NOT NULL, NULL, PRIMARY KEY NOT ENFORCED,
/// COMMENT '…'.
fn column_options(p: &mut Parser, table: &mut Table, column: &str) -> Result<()> {
    loop {
        let opt_at = here(p);
        if p.parse_keywords(&[Keyword::NOT, Keyword::NULL]) || p.parse_keyword(Keyword::NULL) {
            continue;
        }
        if p.parse_keyword(Keyword::COMMENT) {
            wrap!(p, p.parse_literal_string())?;
            continue;
        }
        if p.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
            not_enforced(p, opt_at)?;
            set_primary_key(table, vec![column.to_owned()], opt_at)?;
            continue;
        }
        let t = p.peek_token();
        if matches!(t.token, Token::Comma | Token::RParen) {
            return Ok(());
        }
        return Err(SqlError::new(
            opt_at,
            t.token.to_string(),
            "unsupported column option (METADATA and VIRTUAL columns are not supported; NOT NULL, COMMENT and PRIMARY KEY NOT ENFORCED are)",
        ));
    }
}

/// `col` or `col - INTERVAL 'n' UNIT` → the delay in ms.
fn watermark_delay(col: &str, expr: &Expr, at: At) -> Result<i64> {
    let bad = || {
        SqlError::new(
            at,
            expr.to_string(),
            format!("expected `{col}` or `{col} - INTERVAL 'n' UNIT` (a bounded-out-of-orderness watermark)"),
        )
    };
    match expr {
        Expr::Identifier(i) if i.value == col => Ok(0),
        Expr::BinaryOp { left, op, right } if op.to_string() == "-" => match left.as_ref() {
            Expr::Identifier(i) if i.value == col => interval_ms(right, at),
            _ => Err(bad()),
        },
        _ => Err(bad()),
    }
}
