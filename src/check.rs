//! `sidejoin check`: the validated configuration as a plan a person can read, and, when
//! `SIDEJOIN_BOOTSTRAP_SERVERS` is set, the topics and their partition counts — without
//! consuming anything.

use std::fmt::Write;

use crate::change::Side;
use crate::config::{Config, OutputMode};
use crate::kafka::{reach, topics};
use crate::plan::{Decision, How, PlanError};

fn side_plan(cfg: &Config, side: Side) -> String {
    let s = cfg.join.side(side);
    let state = match (&s.primary_key, cfg.join.interval) {
        (_, Some(_)) => "cache of rows by join key and time, evicted by watermark".to_owned(),
        (Some(pk), None) => format!("table: latest row per primary key ({})", pk.join(",")),
        (None, None) => "multiset of rows (no primary key)".to_owned(),
    };
    let mut line = format!(
        "  {side}: topic {}, format {}, join key ({}), {}, state: {state}",
        s.topic.as_deref().unwrap_or("-"),
        s.format.name(),
        s.key.join(","),
        if cfg.join.join_type.is_outer(side) {
            "outer (null-padded when unmatched)"
        } else {
            "inner"
        },
    );
    if s.dedup {
        line.push_str(", dedup on");
    }
    if s.ttl_ms > 0 {
        let _ = write!(line, ", TTL {} ms of stream time", s.ttl_ms);
    }
    line
}

/// The plan of a valid configuration, one fact per line.
pub fn plan(cfg: &Config) -> String {
    let mut out = String::new();
    let j = &cfg.join;
    if j.is_star() {
        crate::check_star::star_lines(cfg, &mut out);
        return common_lines(cfg, out);
    }
    let kind = match j.interval {
        Some(i) => format!(
            "interval join: tr + {} ms <= tl <= tr + {} ms (watermark delay {} ms, lateness {} ms)",
            i.lower_ms, i.upper_ms, i.watermark_delay_ms, i.allowed_lateness_ms
        ),
        None => "regular join (Flink StreamingJoinOperator semantics)".to_owned(),
    };
    let _ = writeln!(out, "join: {} {kind}", j.join_type.name());
    let _ = writeln!(out, "{}", side_plan(cfg, Side::Left));
    let _ = writeln!(out, "{}", side_plan(cfg, Side::Right));
    common_lines(cfg, out)
}

/// What every join's plan says after its inputs: retractions, output, errors, topology.
fn common_lines(cfg: &Config, mut out: String) -> String {
    let j = &cfg.join;
    let _ = writeln!(
        out,
        "generated retractions: {}",
        if j.allow_generated_retracts {
            "emitted (as Flink)"
        } else {
            "dropped"
        }
    );
    output_plan(cfg, &mut out);
    let _ = writeln!(
        out,
        "on undecodable records: {} (dead-letter topic {})",
        cfg.process.on_error.name(),
        cfg.kafka.dlq_topic
    );
    if !j.is_star() {
        topology_plan(cfg, &mut out);
    }
    for w in &cfg.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}

/// The output lines: topic, mode and key, whether the key is unique and the output insert-only.
fn output_plan(cfg: &Config, out: &mut String) {
    let key: Vec<&str> = cfg.output.key.iter().map(|k| k.name.as_str()).collect();
    let mode = match cfg.output.mode {
        OutputMode::Changelog => "changelog (Debezium envelopes)",
        OutputMode::Upsert => "upsert (value or tombstone per key)",
        OutputMode::Append => "append (rows)",
    };
    let _ = writeln!(
        out,
        "output: topic {}, {mode}, key ({})",
        cfg.output.topic.as_deref().unwrap_or("-"),
        if key.is_empty() {
            "none".to_owned()
        } else {
            key.join(",")
        }
    );
    let unique = match crate::config::key_uniqueness(&cfg.join, &cfg.output.key) {
        Ok(()) => "yes".to_owned(),
        Err(why) => format!("no ({why})"),
    };
    let _ = writeln!(out, "output key provably unique: {unique}");
    let updates = crate::config::update_sources(&cfg.join);
    let _ = writeln!(
        out,
        "output insert-only: {}",
        if updates.is_empty() {
            "yes".to_owned()
        } else {
            format!("no ({})", updates.join("; "))
        }
    );
}

/// The topology line (co-partitioned or broadcast), each side's placement with its reason
/// (as on topics of several partitions: one partition on both sides needs none), and one line
/// per re-keyed side.
fn topology_plan(cfg: &Config, out: &mut String) {
    match cfg.join.broadcast {
        None => {
            let _ = writeln!(
                out,
                "topology: partitioned (partition i of both inputs on one owner; a side is read as it is when \
                 declared keyed by the join key, else re-keyed by it); a record of a side read as it is whose key \
                 does not carry its join key: {} (SIDEJOIN_ON_COPARTITION_VIOLATION)",
                cfg.process.on_copartition_violation.name()
            );
        }
        Some(b) => {
            let _ = writeln!(
                out,
                "topology: {b} broadcast (SIDEJOIN_BROADCAST): the {} topic's partitions are spread over the group, one task each, and every task keeps the whole {b} side, read from all partitions of its topic; no co-partitioning needed",
                b.other()
            );
        }
    }
    let placed = crate::plan::placements_on_many_partitions(cfg);
    placement_lines(&placed, out);
    for side in Side::BOTH {
        let Ok(p) = &placed else { continue };
        let How::Rekey(cols) = &p[side.index()].how else {
            continue;
        };
        let other_as_is = p[side.other().index()].how == How::AsIs;
        let placed = if other_as_is {
            format!(
                "keys and partitioner learnt from the {} topic's records, to meet them",
                side.other()
            )
        } else {
            "keys and partitioner chosen by sidejoin".to_owned()
        };
        let _ = writeln!(
            out,
            "repartition: the {side} topic `{}` is re-keyed by {} into `{}` ({placed}; one router for the application, \
             exactly once), which the join reads — unless both topics have one partition",
            cfg.join.topic(side),
            cols.join(","),
            crate::plan::repartition_topic(cfg, side)
        );
    }
}

/// One line per side: how it is placed on topics of several partitions, and why.
fn placement_lines(placed: &Result<[Decision; 2], PlanError>, out: &mut String) {
    for side in Side::BOTH {
        match placed {
            Ok(p) => {
                let d = &p[side.index()];
                let how = match d.how {
                    How::AsIs => "read as it is",
                    How::Broadcast => "broadcast",
                    How::Rekey(_) => "re-keyed",
                };
                let _ = writeln!(out, "placement {side}: {how}: {}", d.why);
            }
            Err(e) => {
                let _ = writeln!(
                    out,
                    "placement {side}: refused on topics of several partitions: {e}"
                );
            }
        }
    }
}

/// Single-quotes a value for a shell or an env file.
fn shell_quote(v: &str) -> String {
    format!("'{}'", v.replace('\'', "'\\''"))
}

/// The variables `SIDEJOIN_SQL`/`_FILE` stood for, one `NAME='value'` line each (empty without
/// SQL): setting them instead of the SQL configures the same join.
pub fn sql_variables(cfg: &Config) -> String {
    let mut out = String::new();
    if cfg.sql_settings.is_empty() {
        return out;
    }
    out.push_str("equivalent variables (what the SQL means; set them instead of the SQL for the same join):\n");
    for (k, v) in &cfg.sql_settings {
        if crate::config::is_secret_var(k) {
            // Kafka passthrough values may be secrets (SPEC §9: never logged).
            let _ = writeln!(
                out,
                "# {k}: set by the SQL, value not shown (it may be secret)"
            );
        } else {
            let _ = writeln!(out, "{k}={}", shell_quote(v));
        }
    }
    out
}

/// Derives the plan against the brokers once (`Err` names what is wrong, with the exit code
/// `run` would give it): the topology line, then the plan.
pub fn check_brokers(cfg: &Config) -> Result<String, (String, u8)> {
    let md = reach::metadata(&cfg.kafka).map_err(|(e, refusal)| {
        let brokers = cfg.kafka.bootstrap_servers.as_deref().unwrap_or_default();
        match refusal {
            // Credentials or trust are the configuration's to fix, as in `run`.
            Some(r) => (r.describe(brokers), 2),
            None => (format!("Kafka at {brokers} is unreachable: {e}"), 1),
        }
    })?;
    let plan =
        crate::plan::derive(cfg, &topics::facts(&md), true).map_err(|e| (e.to_string(), 2))?;
    Ok(plan.to_string())
}
