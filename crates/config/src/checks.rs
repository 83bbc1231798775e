//! Cross-variable checks: key shapes, formats that need primary keys, interval-join rules
//! (SPEC §4), broadcast rules (SPEC §6) and what `run` needs beyond replay.

use crate::Side;

use super::error::Problems;
use super::raw::RawConfig;
use super::types::{Envelope, IntervalSpec, JoinSpec, JoinType, OutputFormat, OutputSpec};
use super::values::parse_duration_ms;
use super::{duration, var};

pub(super) fn sides(p: &mut Problems, join: &JoinSpec) {
    let (l, r) = (&join.left, &join.right);
    if !l.key.is_empty() && !r.key.is_empty() && l.key.len() != r.key.len() {
        p.add(
            "SIDEJOIN_RIGHT_KEY",
            Some(&r.key.join(",")),
            format!(
                "has {} column(s) but SIDEJOIN_LEFT_KEY has {}; join keys are matched by position",
                r.key.len(),
                l.key.len()
            ),
        );
    }
    for s in join.sources() {
        let v = s.side.var();
        if s.format.envelope() == Envelope::Upsert && s.primary_key.is_none() {
            p.add(
                var(&format!("{v}_FORMAT")),
                Some(s.format.name()),
                format!("an upsert format needs SIDEJOIN_{v}_PRIMARY_KEY (the columns of the record key)"),
            );
        }
    }
    // A star join's broadcast rules are `star_checks.rs`'s.
    if let Some(b) = join.broadcast.filter(|_| !join.is_star()) {
        if join.join_type == JoinType::Full {
            p.add(
                "SIDEJOIN_BROADCAST",
                Some(b.name()),
                "a full join cannot broadcast either side (both sides are preserved)",
            );
        } else if join.join_type.is_outer(b) {
            p.add(
                "SIDEJOIN_BROADCAST",
                Some(b.name()),
                format!(
                    "the {b} side is the preserved side of this {} join and cannot be broadcast; broadcast the other side",
                    join.join_type.name()
                ),
            );
        }
    }
    for s in [l, r] {
        hash_by(p, join, s);
    }
}

/// `SIDEJOIN_<SIDE>_HASH_BY` (SPEC §6): which columns a side may be repartitioned by.
fn hash_by(p: &mut Problems, join: &JoinSpec, s: &super::types::SideSpec) {
    let Some(cols) = s.hash_by.columns() else {
        return;
    };
    let name = var(&format!("{}_HASH_BY", s.side.var()));
    let value = cols.join(",");
    let mut problem = |why: String| p.add(&name, Some(&value), why);
    if join.broadcast == Some(s.side) {
        return problem(format!(
            "the {} side is broadcast (read whole by every instance), so it is not partitioned at all; \
             HASH_BY applies to the other side",
            s.side
        ));
    }
    let same = |a: &[String], b: &[String]| a.len() == b.len() && a.iter().all(|c| b.contains(c));
    if join.broadcast.is_none() && !same(cols, &s.key) {
        return problem(format!(
            "without SIDEJOIN_BROADCAST the side must be repartitioned by its join key ({}, or $join_key): \
             the other side's partitions hold the join keys; other columns (typically the primary key) \
             need the other side broadcast",
            s.key.join(",")
        ));
    }
    if s.format.envelope() == Envelope::Upsert {
        let pk = s.primary_key.as_deref().unwrap_or_default();
        if let Some(c) = cols.iter().find(|c| !pk.contains(c)) {
            problem(format!(
                "`{c}` is not a primary-key column ({}): an upsert tombstone carries only the key, so \
                 it could not be routed to the partition that holds its row",
                pk.join(",")
            ));
        }
    }
}

/// The interval-join settings, when both bounds are set; problems and warnings otherwise.
pub(super) fn interval(
    p: &mut Problems,
    raw: &RawConfig,
    join: &JoinSpec,
    warnings: &mut Vec<String>,
) -> Option<IntervalSpec> {
    let bound = |p: &mut Problems, name: &str, v: &Option<String>| {
        v.as_deref()
            .and_then(|s| p.take(parse_duration_ms(&var(name), s, true)))
    };
    let lower = bound(p, "INTERVAL_LOWER", &raw.interval_lower);
    let upper = bound(p, "INTERVAL_UPPER", &raw.interval_upper);
    let spec = IntervalSpec {
        lower_ms: lower.unwrap_or(0),
        upper_ms: upper.unwrap_or(0),
        watermark_delay_ms: duration(p, "WATERMARK_DELAY", &raw.watermark_delay, 0),
        allowed_lateness_ms: duration(p, "ALLOWED_LATENESS", &raw.allowed_lateness, 0),
        idle_timeout_ms: duration(p, "IDLE_TIMEOUT", &raw.idle_timeout, 0),
        max_wait_ms: duration(p, "MAX_WAIT", &raw.max_wait, 0),
    };
    match (&raw.interval_lower, &raw.interval_upper) {
        (None, None) => {
            interval_only_ignored(raw, warnings);
            return None;
        }
        (Some(_), None) => p.add(
            "SIDEJOIN_INTERVAL_UPPER",
            None,
            "required when SIDEJOIN_INTERVAL_LOWER is set: an interval join needs both bounds",
        ),
        (None, Some(_)) => p.add(
            "SIDEJOIN_INTERVAL_LOWER",
            None,
            "required when SIDEJOIN_INTERVAL_UPPER is set: an interval join needs both bounds",
        ),
        (Some(_), Some(_)) => {}
    }
    if let (Some(l), Some(u)) = (lower, upper) {
        if l > u {
            p.add(
                "SIDEJOIN_INTERVAL_LOWER",
                raw.interval_lower.as_deref(),
                format!(
                    "must not be greater than SIDEJOIN_INTERVAL_UPPER ({})",
                    raw.interval_upper.as_deref().unwrap_or("")
                ),
            );
        }
    }
    interval_inputs(p, raw, join);
    Some(spec)
}

/// The interval-only settings, set without an interval join: each is ignored, with a warning.
fn interval_only_ignored(raw: &RawConfig, warnings: &mut Vec<String>) {
    let interval_only = [
        ("SIDEJOIN_WATERMARK_DELAY", &raw.watermark_delay),
        ("SIDEJOIN_ALLOWED_LATENESS", &raw.allowed_lateness),
        ("SIDEJOIN_IDLE_TIMEOUT", &raw.idle_timeout),
        ("SIDEJOIN_MAX_WAIT", &raw.max_wait),
        ("SIDEJOIN_LEFT_TIME", &raw.left_time),
        ("SIDEJOIN_RIGHT_TIME", &raw.right_time),
    ];
    for (name, v) in interval_only {
        if v.is_some() {
            warnings.push(format!(
                "{name} only applies to interval joins (SIDEJOIN_INTERVAL_LOWER/UPPER are not set); it is ignored"
            ));
        }
    }
}

/// An interval join's inputs are insert-only, without dedup or state TTL (SPEC §4).
fn interval_inputs(p: &mut Problems, raw: &RawConfig, join: &JoinSpec) {
    for side in Side::BOTH {
        let s = join.side(side);
        let v = side.var();
        if s.format.envelope() != Envelope::Plain {
            p.add(
                var(&format!("{v}_FORMAT")),
                Some(s.format.name()),
                "an interval join needs insert-only inputs: use json or avro",
            );
        }
        if let Some(pk) = &s.primary_key {
            p.add(
                var(&format!("{v}_PRIMARY_KEY")),
                Some(&pk.join(",")),
                "an interval join needs insert-only inputs: a primary key turns repeated keys into updates",
            );
        }
        if s.dedup {
            p.add(
                var(&format!("DEDUP_{v}")),
                Some("true"),
                "dedup does not apply to interval joins (their inputs are insert-only)",
            );
        }
        if s.ttl_ms > 0 {
            let (name, value) = match (side, &raw.left_state_ttl, &raw.right_state_ttl) {
                (Side::Left, Some(t), _) => (format!("{v}_STATE_TTL"), Some(t)),
                (Side::Right, _, Some(t)) => (format!("{v}_STATE_TTL"), Some(t)),
                _ => ("STATE_TTL".to_owned(), raw.state_ttl.as_ref()),
            };
            p.add(
                var(&name),
                value.map(String::as_str),
                "state TTL does not apply to interval joins: watermarks bound their state",
            );
        }
    }
}

/// What `sidejoin run` needs beyond a valid join.
pub(super) fn run_requirements(
    p: &mut Problems,
    raw: &RawConfig,
    join: &JoinSpec,
    output: &OutputSpec,
) {
    let required = [
        (
            "SIDEJOIN_BOOTSTRAP_SERVERS",
            &raw.bootstrap_servers,
            "the Kafka brokers, host:port[,host:port…]",
        ),
        (
            "SIDEJOIN_LEFT_TOPIC",
            &raw.left_topic,
            "the topic of the left input",
        ),
        (
            "SIDEJOIN_RIGHT_TOPIC",
            &raw.right_topic,
            "the topic of the right input",
        ),
        (
            "SIDEJOIN_OUTPUT_TOPIC",
            &raw.output_topic,
            "the topic the join result is written to",
        ),
    ];
    for (name, v, what) in required {
        if v.as_deref().is_none_or(|s| s.trim().is_empty()) {
            p.add(name, None, format!("required by `sidejoin run`: {what}"));
        }
    }
    if raw.left_topic.is_some() && raw.left_topic == raw.right_topic {
        p.add(
            "SIDEJOIN_RIGHT_TOPIC",
            raw.right_topic.as_deref(),
            "must differ from SIDEJOIN_LEFT_TOPIC (the topic tells the sides apart)",
        );
    }
    dimension_topics(p, join);
    for s in join.sources() {
        if s.format.is_avro() && raw.schema_registry_url.is_none() {
            p.add(
                format!("SIDEJOIN_{}_FORMAT", s.side.var()),
                Some(s.format.name()),
                "Avro input needs SIDEJOIN_SCHEMA_REGISTRY_URL (the writer schemas are fetched by id)",
            );
        }
    }
    if output.format == OutputFormat::Avro && raw.schema_registry_url.is_none() {
        p.add(
            "SIDEJOIN_OUTPUT_FORMAT",
            Some("avro"),
            "Avro output needs SIDEJOIN_SCHEMA_REGISTRY_URL (its schemas are registered there)",
        );
    }
}

/// A star join's further dimensions each need their own topic in `run`, one no other input reads.
fn dimension_topics(p: &mut Problems, join: &JoinSpec) {
    for (i, d) in join.dimensions.iter().enumerate() {
        let name = format!("SIDEJOIN_{}_TOPIC", d.source.side.var());
        let Some(topic) = d.source.topic.as_deref().filter(|t| !t.trim().is_empty()) else {
            p.add(
                name,
                None,
                format!("required by `sidejoin run`: the topic of {}", d.source.side),
            );
            continue;
        };
        let before = join.sources().take(2 + i);
        if let Some(o) = before
            .into_iter()
            .find(|o| o.topic.as_deref() == Some(topic))
        {
            p.add(
                name,
                Some(topic),
                format!(
                    "must differ from SIDEJOIN_{}_TOPIC (the topic tells the inputs apart)",
                    o.side.var()
                ),
            );
        }
    }
}
