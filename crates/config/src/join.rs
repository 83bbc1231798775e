//! The join's settings (type, both sides' keys, formats, time columns and state, the SELECT
//! list, broadcast) validated into a `JoinSpec`. The interval is `checks.rs`'s: it needs both
//! sides first; a star join's further dimensions are `star.rs`'s.

use crate::error::Problems;
use crate::raw::RawConfig;
use crate::select::SelectItem;
use crate::values::{parse_columns, parse_enum};
use crate::{
    boolean, csv, duration, opt, select, star, var, Format, HashBy, JoinSpec, JoinType, Side,
    SideSpec, TimeSource,
};

/// The join's settings among `raw`, but its interval (left `None`).
pub(crate) fn join_spec(p: &mut Problems, raw: &RawConfig) -> JoinSpec {
    let join_type = opt(p, &raw.join_type, |v| {
        parse_enum("SIDEJOIN_JOIN_TYPE", v, &JoinType::CHOICES)
    })
    .unwrap_or(JoinType::Inner);
    let default_ttl = duration(p, "STATE_TTL", &raw.state_ttl, 0);
    let left = side_spec(p, raw, Side::Left, default_ttl);
    let right = side_spec(p, raw, Side::Right, default_ttl);
    let inputs = star::configured_inputs(p, raw);
    let listed = opt(p, &raw.broadcast, |v| star::broadcast_list(v, inputs)).unwrap_or_default();
    let dimensions = star::dimensions(p, raw, inputs, default_ttl, &listed);
    let select = select_list(p, raw, inputs);
    let broadcast = [Side::Left, Side::Right]
        .into_iter()
        .find(|s| listed.contains(s));
    JoinSpec {
        join_type,
        left,
        right,
        null_keys_match: boolean(p, "NULL_KEYS_MATCH", &raw.null_keys_match, false),
        allow_generated_retracts: boolean(
            p,
            "ALLOW_GENERATED_RETRACTS",
            &raw.allow_generated_retracts,
            true,
        ),
        select,
        interval: None,
        broadcast,
        dimensions,
        aliases: Vec::new(),
    }
}

/// `SIDEJOIN_SELECT`, every item naming one of the `inputs` configured inputs; by default every
/// column of every input, in input order.
fn select_list(p: &mut Problems, raw: &RawConfig, inputs: usize) -> Vec<SelectItem> {
    let all = || Side::first(inputs).map(SelectItem::All).collect();
    let Some(v) = &raw.select else {
        return all();
    };
    let Some(items) = p.take(select::parse_select(v)) else {
        return all();
    };
    for item in &items {
        let side = match item {
            SelectItem::Column { side, .. } | SelectItem::All(side) => *side,
        };
        if side.index() >= inputs {
            p.add(
                "SIDEJOIN_SELECT",
                Some(v),
                format!(
                    "names {side}, which is not an input of this join (SIDEJOIN_{}_KEY is not set)",
                    side.var()
                ),
            );
        }
    }
    items
}

/// The variables of one side, as given (its csv ones are `csv.rs`'s).
struct RawSide<'a> {
    key: &'a Option<String>,
    primary_key: &'a Option<String>,
    format: &'a Option<String>,
    dedup: &'a Option<String>,
    ttl: &'a Option<String>,
    time: &'a Option<String>,
    hash_by: &'a Option<String>,
    topic: &'a Option<String>,
}

/// A further dimension has no time column (a star join is no interval join).
const NO_TIME: &Option<String> = &None;

impl<'a> RawSide<'a> {
    fn of(raw: &'a RawConfig, side: Side) -> Self {
        if let Some(d) = raw.dim(side) {
            RawSide {
                key: &d.key,
                primary_key: &d.primary_key,
                format: &d.format,
                dedup: &d.dedup,
                ttl: &d.state_ttl,
                time: NO_TIME,
                hash_by: &d.hash_by,
                topic: &d.topic,
            }
        } else if side == Side::Left {
            RawSide {
                key: &raw.left_key,
                primary_key: &raw.left_primary_key,
                format: &raw.left_format,
                dedup: &raw.dedup_left,
                ttl: &raw.left_state_ttl,
                time: &raw.left_time,
                hash_by: &raw.left_hash_by,
                topic: &raw.left_topic,
            }
        } else {
            RawSide {
                key: &raw.right_key,
                primary_key: &raw.right_primary_key,
                format: &raw.right_format,
                dedup: &raw.dedup_right,
                ttl: &raw.right_state_ttl,
                time: &raw.right_time,
                hash_by: &raw.right_hash_by,
                topic: &raw.right_topic,
            }
        }
    }
}

/// The settings of `side`; its state TTL defaults to `default_ttl` (`SIDEJOIN_STATE_TTL`).
pub(crate) fn side_spec(
    p: &mut Problems,
    raw: &RawConfig,
    side: Side,
    default_ttl: i64,
) -> SideSpec {
    let r = RawSide::of(raw, side);
    let s = side.var();
    let key = join_key(p, s, r.key);
    let pk_var = var(&format!("{s}_PRIMARY_KEY"));
    let primary_key = opt(p, r.primary_key, |v| parse_columns(&pk_var, v));
    let format_var = var(&format!("{s}_FORMAT"));
    let format = opt(p, r.format, |v| {
        parse_enum(&format_var, v, &Format::CHOICES)
    })
    .unwrap_or(Format::Json);
    let time = time_source(p, s, r.time);
    let hash_var = var(&format!("{s}_HASH_BY"));
    let hash_by = opt(p, r.hash_by, |v| match v.trim() {
        "$join_key" => Ok(HashBy::Columns(key.clone())),
        "none" => Ok(HashBy::Keyed),
        v => parse_columns(&hash_var, v).map(HashBy::Columns),
    })
    .unwrap_or(HashBy::Auto);
    SideSpec {
        side,
        key,
        primary_key,
        format,
        dedup: boolean(p, &format!("DEDUP_{s}"), r.dedup, false),
        ttl_ms: duration(p, &format!("{s}_STATE_TTL"), r.ttl, default_ttl),
        time,
        hash_by,
        topic: r.topic.clone(),
        csv: csv::csv_spec(p, raw, side, format),
    }
}

/// `SIDEJOIN_<SIDE>_KEY` (`s` is the side's `<SIDE>`), which is required.
fn join_key(p: &mut Problems, s: &str, value: &Option<String>) -> Vec<String> {
    let key_var = var(&format!("{s}_KEY"));
    match value {
        Some(v) => p.take(parse_columns(&key_var, v)).unwrap_or_default(),
        None => {
            p.add(
                &key_var,
                None,
                "required: the join key column(s) of this side, comma-separated",
            );
            Vec::new()
        }
    }
}

/// `SIDEJOIN_<SIDE>_TIME`: one column, or the Kafka record timestamp (the default).
fn time_source(p: &mut Problems, s: &str, value: &Option<String>) -> TimeSource {
    match value.as_deref().map(str::trim) {
        None | Some("$timestamp") => TimeSource::RecordTimestamp,
        Some(c) if !c.is_empty() && !c.contains(',') => TimeSource::Column(c.to_owned()),
        Some(_) => {
            p.add(
                var(&format!("{s}_TIME")),
                value.as_deref(),
                "expected one column name, or $timestamp for the Kafka record timestamp",
            );
            TimeSource::RecordTimestamp
        }
    }
}
