//! The join's output: the SELECT list with `*` expanded into declared columns and named after the
//! sink's columns, and every setting of the join itself (type, keys, interval, SELECT).

use sqlparser::ast::{Select, SelectItem, SelectItemQualifiedWildcardKind};

use super::condition::{Condition, Interval};
use super::error::{At, Result, SqlError};
use super::query::{at, column, refuse, Input, Join};
use super::settings::Settings;
use super::time::env_duration;
use crate::Side;

/// One output column: `(side, input column, output name if given)`.
pub(super) type Projected = (Side, String, Option<String>);

/// The SELECT list with `*` and `t.*` expanded into the tables' declared physical columns;
/// `from_order` is the side of each table in FROM order, the order `*` lists them in.
pub(super) fn projection(
    s: &Select,
    inputs: &[Input],
    from_order: &[Side],
    warnings: &mut Vec<String>,
) -> Result<Vec<Projected>> {
    let mut out = Vec::new();
    let mut all = |side: Side, out: &mut Vec<Projected>| {
        let t = inputs[side.index()].table;
        for c in &t.columns {
            match &c.ty {
                Some(_) => out.push((side, c.name.clone(), None)),
                None => warnings.push(format!(
                    "column `{}` of `{}` is PROCTIME(), which sidejoin does not materialise: `*` leaves it out",
                    c.name, t.name
                )),
            }
        }
    };
    for item in &s.projection {
        match item {
            SelectItem::Wildcard(_) => {
                for side in from_order {
                    all(*side, &mut out);
                }
            }
            SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                let q = n.to_string().replace('`', "");
                let Some(side) =
                    Side::first(inputs.len()).find(|s| inputs[s.index()].is_called(&q))
                else {
                    return refuse(item, "unknown table or alias");
                };
                all(side, &mut out);
            }
            SelectItem::UnnamedExpr(e) => {
                let c = column(e, inputs)?;
                out.push((c.side, c.column, None));
            }
            SelectItem::ExprWithAlias { expr, alias } => {
                let c = column(expr, inputs)?;
                out.push((c.side, c.column, Some(alias.value.clone())));
            }
            _ => {
                return refuse(
                    item,
                    "unsupported SELECT item: expected `t.col [AS name]`, `col`, `t.*` or `*`",
                )
            }
        }
    }
    Ok(out)
}

/// Writes the join's settings: type, keys, interval (with the tables' watermarks) and SELECT.
pub(super) fn settings(
    s: &mut Settings,
    join: &Join,
    cond: &Condition,
    select: &[Projected],
    output_names: Option<&[String]>,
) -> Result<()> {
    let ja = join.join_at;
    let jt = format!("{} JOIN", join.join_type.to_ascii_uppercase());
    s.set("JOIN_TYPE", join.join_type, ja, &jt)?;
    let on = join.condition.map(|c| c.to_string()).unwrap_or_default();
    let on_at = join.condition.map(at).unwrap_or(ja);
    let lk: Vec<&str> = cond.keys.iter().map(|k| k.0.as_str()).collect();
    let rk: Vec<&str> = cond.keys.iter().map(|k| k.1.as_str()).collect();
    s.set("LEFT_KEY", lk.join(","), on_at, &on)?;
    s.set("RIGHT_KEY", rk.join(","), on_at, &on)?;
    interval(s, join, &cond.interval, &on)?;
    select_list(s, join, select, output_names)
}

/// A watermark on a time column of the interval: `(delay in ms, position, table)`.
type Delay = (i64, At, String);

/// The interval's bounds and time columns, and the delay of the watermarks declared on those
/// columns; nothing when the condition has no interval. `on` is the condition, as written.
fn interval(s: &mut Settings, join: &Join, iv: &Interval, on: &str) -> Result<()> {
    let (Some(lo), Some(hi), Some(iat)) = (iv.lower_ms, iv.upper_ms, iv.at) else {
        return Ok(());
    };
    s.set("INTERVAL_LOWER", env_duration(lo), iat, on)?;
    s.set("INTERVAL_UPPER", env_duration(hi), iat, on)?;
    let mut delays: Vec<Delay> = Vec::new();
    for side in Side::BOTH {
        let t = join.inputs[side.index()].table;
        let col = iv.time[side.index()].clone().unwrap_or_default();
        s.set(&format!("{}_TIME", side.var()), &col, iat, on)?;
        if let Some((wcol, delay, wat)) = &t.watermark {
            if wcol == &col {
                delays.push((*delay, *wat, t.name.clone()));
            }
        }
    }
    watermark_delay(s, &delays)
}

/// The one `WATERMARK_DELAY` of both sides, from the tables' watermarks: two must agree.
fn watermark_delay(s: &mut Settings, delays: &[Delay]) -> Result<()> {
    let Some((d, wat, name)) = delays.first() else {
        return Ok(());
    };
    if let Some((d2, wat2, name2)) = delays.get(1).filter(|x| x.0 != *d) {
        return Err(SqlError::new(*wat2, format!("WATERMARK of {name2}"), format!(
            "delays the watermark by {} but the WATERMARK of {name} at {wat} by {}; sidejoin has one SIDEJOIN_WATERMARK_DELAY for both sides",
            env_duration(*d2), env_duration(*d)
        )));
    }
    s.set(
        "WATERMARK_DELAY",
        env_duration(*d),
        *wat,
        format!("WATERMARK of {name}"),
    )
}

/// `SELECT`: the list as `l.col [AS name]` items, named after the sink's columns when it has
/// them (an INSERT maps by position, so the counts must agree).
pub(super) fn select_list(
    s: &mut Settings,
    join: &Join,
    select: &[Projected],
    output_names: Option<&[String]>,
) -> Result<()> {
    if let Some(names) = output_names {
        if names.len() != select.len() {
            return Err(SqlError::new(
                at(join.select),
                "SELECT",
                format!(
                    "selects {} column(s) but the sink has {} ({}); INSERT maps them by position",
                    select.len(),
                    names.len(),
                    names.join(", ")
                ),
            ));
        }
    }
    let items: Vec<String> = select
        .iter()
        .enumerate()
        .map(|(i, (side, col, alias))| {
            let p = side_prefix(*side);
            match output_names.map(|n| &n[i]).or(alias.as_ref()) {
                Some(name) => format!("{p}.{col} AS {name}"),
                None => format!("{p}.{col}"),
            }
        })
        .collect();
    s.set("SELECT", items.join(", "), at(join.select), "SELECT list")?;
    Ok(())
}

/// How `SIDEJOIN_SELECT` and `SIDEJOIN_DIM<N>_ON` qualify a column of `side`: `l`, `r`, `dim2`…
pub(super) fn side_prefix(side: Side) -> String {
    match side.index() {
        0 => "l".to_owned(),
        1 => "r".to_owned(),
        _ => side.name().to_owned(),
    }
}
