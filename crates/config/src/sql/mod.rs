//! Flink SQL as configuration (SPEC §13, issue 14): a script of `SET`, `CREATE TABLE` (the
//! inputs and the sink), at most one `CREATE VIEW` and one `INSERT INTO sink SELECT …` (or a bare
//! `SELECT`, printed as replay prints) becomes the `SIDEJOIN_*` settings it means: a join of two
//! tables, or a chain of joins read as a star join (SPEC §14: `chain.rs`, `star.rs`).
//! `config::load` then validates those settings exactly as it validates the environment: one
//! path.
//!
//! Parsing is sqlparser's (Generic dialect): its tokenizer splits the script and keeps comments
//! with their positions (that is how `/*+ … */` hints are found, `hints.rs`), its parser reads
//! queries, and its pieces (identifiers, types, expressions) read Flink's DDL (`ddl.rs`). This
//! module only decides what the statements (collected by `script.rs`) mean and refuses what
//! sidejoin cannot run.

mod chain;
mod condition;
mod ddl;
mod error;
mod hints;
mod join_hints;
mod options;
mod output;
mod query;
mod script;
mod settings;
mod star;
mod star_settings;
mod time;

pub use error::{At, SqlError};
pub use settings::{Setting, Settings};

use sqlparser::ast::{SelectItem, SetExpr, TableFactor};

use crate::Side;
use ddl::{Table, TableOption};
use error::Result;
use query::{Input, Join};
use script::{QueryStmt, View};

/// What a script means.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Translation {
    pub settings: Settings,
    /// Accepted constructs that do not do what a Flink user may expect.
    pub warnings: Vec<String>,
    /// The tables' names and aliases, lower-case, with the input each names (`JoinSpec::aliases`).
    pub aliases: Vec<(String, Side)>,
}

/// `SELECT * FROM view`: the view's query, with the hints of both statements.
fn through_view(q: QueryStmt, views: &[View]) -> Result<QueryStmt> {
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
    let mut s = Settings::default();
    let mut script = script::read(sql, &mut s)?;
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
    refuse_self_join(&join)?;
    let inputs = if join.links.is_empty() {
        two_way(&mut s, &join, &q, &script.tables, &mut warnings)?;
        join.inputs.clone()
    } else {
        star_join(&mut s, &join, &q, &script.tables, &mut warnings)?
    };
    Ok(Translation {
        settings: s,
        warnings,
        aliases: aliases(&inputs),
    })
}

/// The settings of a join of two tables.
fn two_way(
    s: &mut Settings,
    join: &Join,
    q: &QueryStmt,
    tables: &[Table],
    warnings: &mut Vec<String>,
) -> Result<()> {
    let cond = condition::condition(
        join.condition.expect("a join has a condition"),
        &join.inputs,
    )?;
    let select = output::projection(join.select, &join.inputs, &Side::BOTH, warnings)?;
    let mut extra = vec![Vec::new(); 2];
    join_hints::apply(s, &q.hints, &join.inputs, &mut extra)?;
    let key_fields = sources(s, &join.inputs, extra)?;
    let sink_names = sink(s, tables, q.sink.as_ref())?;
    output::settings(s, join, &cond, &select, sink_names.as_deref())?;
    options::keyed_sides(s, key_fields)
}

/// The settings of a chain of joins, read as a star join; returns its inputs in side order.
fn star_join<'a>(
    s: &mut Settings,
    join: &Join<'_, 'a>,
    q: &QueryStmt,
    tables: &[Table],
    warnings: &mut Vec<String>,
) -> Result<Vec<Input<'a>>> {
    let star = star::star(join, &q.hints)?;
    let select = output::projection(join.select, &star.inputs, &star.from_order, warnings)?;
    let mut extra = vec![Vec::new(); star.inputs.len()];
    join_hints::apply(s, &q.hints, &star.inputs, &mut extra)?;
    let key_fields = sources(s, &star.inputs, extra)?;
    let sink_names = sink(s, tables, q.sink.as_ref())?;
    star_settings::settings(s, join, &star, &select, sink_names.as_deref())?;
    options::keyed_sides(s, key_fields)?;
    Ok(star.inputs)
}

/// Every table's name and alias, lower-case, with its input.
fn aliases(inputs: &[Input]) -> Vec<(String, Side)> {
    let mut out = Vec::new();
    for (side, i) in Side::first(inputs.len()).zip(inputs) {
        for name in std::iter::once(&i.table.name).chain(i.alias.as_ref()) {
            let lower = name.to_ascii_lowercase();
            if !out.iter().any(|(n, _)| *n == lower) {
                out.push((lower, side));
            }
        }
    }
    out
}

/// Refuses a join of a table with itself (at the second mention of the table).
fn refuse_self_join(join: &Join) -> Result<()> {
    let inputs = &join.inputs;
    let Some(t) = (1..inputs.len()).find(|t| {
        inputs[..*t]
            .iter()
            .any(|i| i.table.name == inputs[*t].table.name)
    }) else {
        return Ok(());
    };
    let at = match t {
        1 => join.join_at,
        _ => query::at(join.links[t - 1].relation),
    };
    Err(SqlError::new(
        at,
        &inputs[t].table.name,
        "a self-join is not supported: sidejoin's inputs are distinct topics",
    ))
}

/// The settings of every input, with their dynamic table options (`extra`, from OPTIONS hints);
/// returns each one's `'key.fields'` option.
fn sources(
    s: &mut Settings,
    inputs: &[Input],
    mut extra: Vec<Vec<TableOption>>,
) -> Result<Vec<Option<TableOption>>> {
    let mut key_fields = vec![None; inputs.len()];
    for side in Side::first(inputs.len()) {
        // Dynamic table options replace the WITH options of the same key.
        let mut t = inputs[side.index()].table.clone();
        let dynamic = &mut extra[side.index()];
        t.options
            .retain(|o| !dynamic.iter().any(|d| d.key == o.key));
        t.options.append(dynamic);
        key_fields[side.index()] = options::source(s, side, &t)?;
    }
    Ok(key_fields)
}

/// The settings of the `INSERT INTO` sink, if any, and the names of its columns the SELECT list
/// maps to: those the INSERT lists, or else the table's physical columns.
fn sink(
    s: &mut Settings,
    tables: &[Table],
    into: Option<&(String, At, Vec<String>)>,
) -> Result<Option<Vec<String>>> {
    let Some((name, at, cols)) = into else {
        return Ok(None);
    };
    let Some(t) = tables.iter().find(|t| &t.name == name) else {
        return Err(SqlError::new(
            *at,
            name,
            "unknown sink table: declare it with CREATE TABLE first",
        ));
    };
    options::sink(s, t)?;
    Ok(Some(if cols.is_empty() {
        t.physical().map(|c| c.name.clone()).collect::<Vec<_>>()
    } else {
        cols.clone()
    }))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod star_tests;
