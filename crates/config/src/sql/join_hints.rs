//! What the hints of the query mean: the MRS join options (`OPTIONS('allows.generated-retracts'
//! …)`, `duplicate.left/right`, `duplicate.<table>`), `BROADCAST`, `HASH_BY_KEY`, `STATE_TTL`,
//! and Flink's dynamic table options (`OPTIONS(…)` right after a table name), as settings or
//! extra table options. A star join's `BROADCAST` decides its fact, so `star.rs` reads it.
//!
//! `duplicate.left` / `duplicate.right` name the two sides of a two-way join; in a chain of joins
//! they would be ambiguous and are refused: `duplicate.<table or alias>` names one table, in
//! either form of join.

use super::ddl::TableOption;
use super::error::{At, Result, SqlError};
use super::hints::{Hint, HintArg};
use super::query::Input;
use super::settings::Settings;
use super::time;
use crate::Side;

/// The side a hint argument names (a table or an alias of the join).
fn side_named(inputs: &[Input], name: &str, hint: &Hint, at: At) -> Result<Side> {
    Side::first(inputs.len())
        .find(|s| inputs[s.index()].is_called(name))
        .ok_or_else(|| {
            SqlError::new(
                at,
                hint.text(),
                format!("`{name}` is not a table or alias of the join"),
            )
        })
}

/// Applies the query's hints: join options, broadcast, repartitioning, per-side TTL, and dynamic
/// table options (which join `extra` options of the table they follow).
pub(super) fn apply(
    s: &mut Settings,
    hints: &[Hint],
    inputs: &[Input],
    extra: &mut [Vec<TableOption>],
) -> Result<()> {
    for h in hints {
        match h.name.as_str() {
            "OPTIONS" => options(s, h, inputs, extra)?,
            "BROADCAST" if inputs.len() > 2 => {}
            "BROADCAST" => broadcast(s, h, inputs)?,
            "HASH_BY_KEY" => hash_by_key(s, h, inputs)?,
            "STATE_TTL" => state_ttl(s, h, inputs)?,
            _ => {
                return Err(SqlError::new(
                    h.at,
                    h.text(),
                    "unknown hint (supported: OPTIONS, BROADCAST, HASH_BY_KEY, STATE_TTL)",
                ))
            }
        }
    }
    Ok(())
}

/// `OPTIONS('key'='value', …)`: the MRS join options, or the dynamic options of the table the
/// hint follows (into `extra`).
fn options(
    s: &mut Settings,
    h: &Hint,
    inputs: &[Input],
    extra: &mut [Vec<TableOption>],
) -> Result<()> {
    let text = h.text();
    for (arg, at) in &h.args {
        let HintArg::Pair(k, v) = arg else {
            return Err(SqlError::new(
                *at,
                &text,
                "OPTIONS takes 'key'='value' pairs",
            ));
        };
        let v = v.to_ascii_lowercase();
        match k.as_str() {
            "allows.generated-retracts" => s.set("ALLOW_GENERATED_RETRACTS", v, h.at, &text)?,
            k if k.starts_with("duplicate.") => {
                let side = duplicate_of(h, inputs, &k["duplicate.".len()..], *at)?;
                s.set(&format!("DEDUP_{}", side.var()), v, h.at, &text)?;
            }
            _ => {
                let side = hinted_table(h, inputs)
                    .ok_or_else(|| SqlError::new(*at, &text, format!(
                        "unknown join option `{k}` (join options: allows.generated-retracts, duplicate.left, duplicate.right, duplicate.<table>); a table's dynamic options must follow the table's name"
                    )))?;
                extra[side.index()].push(TableOption {
                    key: k.clone(),
                    value: v.clone(),
                    at: *at,
                });
            }
        }
    }
    Ok(())
}

/// The input `duplicate.<name>` dedups: `left`/`right` in a two-way join, else the table or
/// alias `name`.
fn duplicate_of(h: &Hint, inputs: &[Input], name: &str, at: At) -> Result<Side> {
    match name {
        "left" | "right" if inputs.len() == 2 => Ok(Side::named(name).expect("a side name")),
        "left" | "right" => Err(SqlError::new(
            at,
            h.text(),
            format!(
                "`duplicate.{name}` is ambiguous in a chain of joins: name the table, 'duplicate.<table or alias>'='true'"
            ),
        )),
        _ => side_named(inputs, name, h, at),
    }
}

/// The join's table a hint follows: the word after the comment when the word before it is
/// `FROM`, `JOIN` or `,` (`JOIN /*+ … */ b`), else the word before it (`b /*+ … */`).
fn hinted_table(h: &Hint, inputs: &[Input]) -> Option<Side> {
    let joins = |w: &Option<String>| {
        w.as_deref().is_some_and(|w| {
            [",", "JOIN", "FROM"]
                .iter()
                .any(|k| k.eq_ignore_ascii_case(w))
        })
    };
    let table = if joins(&h.before) {
        &h.after
    } else {
        &h.before
    };
    table
        .as_deref()
        .and_then(|t| Side::first(inputs.len()).find(|s| inputs[s.index()].is_called(t)))
}

/// `BROADCAST(t)`: the one table to broadcast.
fn broadcast(s: &mut Settings, h: &Hint, inputs: &[Input]) -> Result<()> {
    let text = h.text();
    if h.args.len() != 1 {
        return Err(SqlError::new(
            h.at,
            &text,
            "sidejoin broadcasts one of its two tables: BROADCAST(t)",
        ));
    }
    let (HintArg::Name(n), at) = &h.args[0] else {
        return Err(SqlError::new(h.at, &text, "BROADCAST takes a table name"));
    };
    let side = side_named(inputs, n, h, *at)?;
    s.set("BROADCAST", side.name(), h.at, &text)
}

/// `HASH_BY_KEY('t'='col[, col]', …)`: the columns a table is repartitioned by.
fn hash_by_key(s: &mut Settings, h: &Hint, inputs: &[Input]) -> Result<()> {
    let text = h.text();
    for (arg, at) in &h.args {
        let HintArg::Pair(t, cols) = arg else {
            return Err(SqlError::new(
                *at,
                &text,
                "HASH_BY_KEY takes 'table'='col[, col]' pairs",
            ));
        };
        let side = side_named(inputs, t, h, *at)?;
        let cols: Vec<&str> = cols.split(',').map(str::trim).collect();
        s.set(
            &format!("{}_HASH_BY", side.var()),
            cols.join(","),
            h.at,
            &text,
        )?;
    }
    Ok(())
}

/// `STATE_TTL('t'='duration', …)`: a table's state TTL.
fn state_ttl(s: &mut Settings, h: &Hint, inputs: &[Input]) -> Result<()> {
    let text = h.text();
    for (arg, at) in &h.args {
        let HintArg::Pair(t, d) = arg else {
            return Err(SqlError::new(
                *at,
                &text,
                "STATE_TTL takes 'table'='duration' pairs",
            ));
        };
        let side = side_named(inputs, t, h, *at)?;
        let ms = time::flink_duration_ms(d).ok_or_else(|| {
            SqlError::new(
                *at,
                &text,
                "expected a duration such as '1d', '12 h' or milliseconds",
            )
        })?;
        s.set(
            &format!("{}_STATE_TTL", side.var()),
            time::env_duration(ms),
            h.at,
            &text,
        )?;
    }
    Ok(())
}
