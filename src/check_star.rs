//! `sidejoin check` for a star join (SPEC §14): the chain as Flink would run it, each input with
//! its placement, and what the state holds (the inputs only, with the lookup indexes a chained
//! key needs).

use std::fmt::Write;

use crate::change::Side;
use crate::config::{Config, JoinSpec, JoinType, SideSpec};
use crate::engine::star::plan::StarPlan;

/// The chain, the inputs and the state layout of the star join `cfg`, one fact per line.
pub(crate) fn star_lines(cfg: &Config, out: &mut String) {
    let j = &cfg.join;
    let plan = StarPlan::new(j);
    let mut chain = j.left.side.to_string();
    for d in &plan.dims {
        let op = if d.outer { "LEFT JOIN" } else { "JOIN" };
        chain = format!("({chain} {op} {})", d.side);
    }
    let _ = writeln!(
        out,
        "join: star join of {} inputs (SPEC §14): {chain}; output as Flink SQL's chained binary joins, computed without intermediate state",
        plan.sources.len()
    );
    for s in j.sources() {
        let _ = writeln!(out, "{}", source_line(j, &plan, s));
    }
    let indexes: Vec<String> = (plan.dims.iter())
        .filter(|d| !d.direct)
        .map(|d| {
            let cols: Vec<&str> = d.lookup.iter().map(|c| c.name()).collect();
            format!("{} rows by ({}) for {}", d.on, cols.join(","), d.side)
        })
        .collect();
    let _ = writeln!(
        out,
        "state layout: the inputs' rows only, no intermediate join result; lookup indexes: {}",
        if indexes.is_empty() {
            "none (every dimension is looked up by the key its parent is stored under)".to_owned()
        } else {
            indexes.join("; ")
        }
    );
}

/// One input of the chain: topic, format, role (the fact, or a dimension with its lookup and
/// placement) and state.
fn source_line(j: &JoinSpec, plan: &StarPlan, s: &SideSpec) -> String {
    let state = match &s.primary_key {
        Some(pk) => format!("latest row per primary key ({})", pk.join(",")),
        None => "multiset of rows (no primary key)".to_owned(),
    };
    let role = if s.side == Side::Left {
        "fact (its partitions are the tasks)".to_owned()
    } else {
        let d = plan.dim(s.side);
        let lookup: Vec<String> = (d.lookup.iter())
            .map(|c| format!("{}.{}", d.on, c.name()))
            .collect();
        let broadcast = match s.side.index() {
            1 => j.broadcast == Some(Side::Right),
            n => j.dimensions[n - 2].broadcast,
        };
        let join = match (s.side.index(), d.outer) {
            (1, _) if j.join_type == JoinType::Left => "LEFT JOIN",
            (_, true) => "LEFT JOIN",
            _ => "JOIN",
        };
        format!(
            "dimension, {join} on ({}) = ({}), placement: {}",
            lookup.join(","),
            s.key.join(","),
            if broadcast {
                "broadcast (every task holds all of it)"
            } else {
                "co-partitioned with the fact (partition i feeds task i)"
            }
        )
    };
    let mut line = format!(
        "  {}: topic {}, format {}, {role}, state: {state} by ({})",
        s.side,
        s.topic.as_deref().unwrap_or("-"),
        s.format.name(),
        s.key.join(",")
    );
    if s.dedup {
        line.push_str(", dedup on");
    }
    if s.ttl_ms > 0 {
        let _ = write!(line, ", TTL {} ms of stream time", s.ttl_ms);
    }
    line
}
