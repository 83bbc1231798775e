//! Output settings (SPEC §5): mode, format, the output key (given or derived), the `append`
//! refusal and the warning for upsert keys that are not provably unique.
//!
//! A star join (SPEC §14) keeps the fact's rows: its default key is the fact's (left) primary key,
//! else its join key, and that key is unique only when every dimension is looked up by a key
//! that covers its primary key (at most one match per lookup), as the other side of a two-way
//! join must be.

use super::select::Select;
use crate::Side;

use super::error::Problems;
use super::raw::RawConfig;
use super::types::{
    Envelope, JoinSpec, JoinType, KeyColumn, KeySource, OutputFormat, OutputMode, OutputSpec,
    SideSpec,
};
use super::values::{parse_columns, parse_enum};

/// The output columns carrying `columns` of `side`, when all of them are in the output.
fn carried(proj: &Select, side: Side, columns: &[String]) -> Option<Vec<KeyColumn>> {
    columns
        .iter()
        .map(|c| {
            if let Some(names) = proj.fixed_columns() {
                names
                    .into_iter()
                    .find(|n| proj.source_of(n) == Some((side, c.as_str())))
                    .map(|n| KeyColumn {
                        name: n.to_owned(),
                        source: KeySource::Output,
                    })
            } else if proj.selects_all_of(side) {
                // Through `side.*` the column keeps its name unless another takes it first, so the
                // value is read from the input row itself.
                Some(KeyColumn {
                    name: c.clone(),
                    source: KeySource::Input(side, c.clone()),
                })
            } else {
                None
            }
        })
        .collect()
}

/// The default output key: the preserved side's primary key, else its join key.
fn derived_key(join: &JoinSpec, proj: &Select) -> Vec<KeyColumn> {
    let side = join.join_type.preserved_side();
    let spec = join.side(side);
    spec.primary_key
        .as_ref()
        .and_then(|pk| carried(proj, side, pk))
        .or_else(|| carried(proj, side, &spec.key))
        .unwrap_or_default()
}

/// Whether the output key provably holds one row: it carries the preserved side's primary key
/// and the other side has a primary key that its join key covers (at most one match per row).
fn key_is_unique(join: &JoinSpec, proj: &Select, key: &[KeyColumn]) -> Result<(), String> {
    if key.is_empty() {
        return Err("the output has no key".to_owned());
    }
    let side = join.join_type.preserved_side();
    let Some(pk) = &join.side(side).primary_key else {
        return Err(format!("the {side} side (preserved) has no primary key"));
    };
    let sources: Vec<(Side, &str)> = key
        .iter()
        .filter_map(|k| match &k.source {
            KeySource::Input(s, c) => Some((*s, c.as_str())),
            KeySource::Output => proj.source_of(&k.name),
        })
        .collect();
    if !pk.iter().all(|c| sources.contains(&(side, c.as_str()))) {
        return Err(format!(
            "it does not contain the {side} side's primary key ({})",
            pk.join(",")
        ));
    }
    let others: Vec<&SideSpec> = match join.is_star() {
        true => join.sources().skip(1).collect(),
        false => vec![join.side(side.other())],
    };
    others
        .into_iter()
        .try_for_each(|o| at_most_one_match(o, side))
}

/// `Ok` when a row of `side` matches at most one row of `other`: `other` has a primary key its
/// join key covers.
fn at_most_one_match(other: &SideSpec, side: Side) -> Result<(), String> {
    match &other.primary_key {
        None => Err(format!("the {} side has no primary key, so one {side} row can match many", other.side)),
        Some(opk) if !opk.iter().all(|c| other.key.contains(c)) => Err(format!(
            "the {} side's join key does not cover its primary key, so one {side} row can match many",
            other.side
        )),
        Some(_) => Ok(()),
    }
}

/// `Ok` when the output key provably holds one row, else why not.
pub fn key_uniqueness(join: &JoinSpec, key: &[KeyColumn]) -> Result<(), String> {
    key_is_unique(join, &Select::new(join.select.clone()), key)
}

/// Why the join may emit updates or deletes; empty when it is insert-only (SPEC §5 `append`).
pub fn update_sources(join: &JoinSpec) -> Vec<String> {
    if join.interval.is_some() {
        return Vec::new();
    }
    let mut why = Vec::new();
    for s in join.sources() {
        let v = s.side.var();
        if s.format.envelope() != Envelope::Plain {
            why.push(format!(
                "SIDEJOIN_{v}_FORMAT={} produces updates and deletes",
                s.format.name()
            ));
        }
        if let Some(pk) = &s.primary_key {
            why.push(format!(
                "SIDEJOIN_{v}_PRIMARY_KEY={} turns a repeated key into an update",
                pk.join(",")
            ));
        }
    }
    let outer = Side::BOTH.iter().any(|s| join.join_type.is_outer(*s));
    if outer && join.allow_generated_retracts {
        why.push(format!(
            "SIDEJOIN_JOIN_TYPE={} retracts null-padded rows when they get a match (set SIDEJOIN_ALLOW_GENERATED_RETRACTS=false)",
            join.join_type.name()
        ));
    }
    for d in &join.dimensions {
        if d.join_type == JoinType::Left && join.allow_generated_retracts {
            why.push(format!(
                "SIDEJOIN_{}_JOIN_TYPE=left retracts null-padded rows when they get a match (set SIDEJOIN_ALLOW_GENERATED_RETRACTS=false)",
                d.source.side.var()
            ));
        }
    }
    why
}

pub(super) fn output_spec(
    p: &mut Problems,
    raw: &RawConfig,
    join: &JoinSpec,
    warnings: &mut Vec<String>,
) -> OutputSpec {
    let mode = raw
        .output_mode
        .as_deref()
        .and_then(|v| p.take(parse_enum("SIDEJOIN_OUTPUT_MODE", v, &OutputMode::CHOICES)))
        .unwrap_or(OutputMode::Changelog);
    let format = raw
        .output_format
        .as_deref()
        .and_then(|v| {
            p.take(parse_enum(
                "SIDEJOIN_OUTPUT_FORMAT",
                v,
                &[("json", OutputFormat::Json), ("avro", OutputFormat::Avro)],
            ))
        })
        .unwrap_or(OutputFormat::Json);
    let proj = Select::new(join.select.clone());
    let key = output_key(p, raw, join, &proj);
    mode_fits(p, mode, join, &proj, &key, warnings);
    OutputSpec {
        mode,
        key,
        format,
        avro_schema: raw.output_avro_schema.clone(),
        topic: raw.output_topic.clone(),
    }
}

/// `SIDEJOIN_OUTPUT_KEY` (output columns, checked against a fixed SELECT list), or the key
/// derived from the join when it is not set.
fn output_key(p: &mut Problems, raw: &RawConfig, join: &JoinSpec, proj: &Select) -> Vec<KeyColumn> {
    match &raw.output_key {
        Some(v) => {
            let names = p
                .take(parse_columns("SIDEJOIN_OUTPUT_KEY", v))
                .unwrap_or_default();
            if let Some(cols) = proj.fixed_columns() {
                for n in &names {
                    if !cols.contains(&n.as_str()) {
                        p.add(
                            "SIDEJOIN_OUTPUT_KEY",
                            Some(v),
                            format!(
                                "`{n}` is not an output column (output columns: {})",
                                cols.join(", ")
                            ),
                        );
                    }
                }
            }
            names
                .into_iter()
                .map(|name| KeyColumn {
                    name,
                    source: KeySource::Output,
                })
                .collect()
        }
        None => derived_key(join, proj),
    }
}

/// Whether the output mode fits the key and the join: upsert needs a key (and warns when it is
/// not provably unique), append an insert-only join.
fn mode_fits(
    p: &mut Problems,
    mode: OutputMode,
    join: &JoinSpec,
    proj: &Select,
    key: &[KeyColumn],
    warnings: &mut Vec<String>,
) {
    match mode {
        OutputMode::Upsert if key.is_empty() => p.add(
            "SIDEJOIN_OUTPUT_MODE",
            Some("upsert"),
            "upsert output needs a key: set SIDEJOIN_OUTPUT_KEY, or select the preserved side's primary or join key columns",
        ),
        OutputMode::Upsert => {
            if let Err(why) = key_is_unique(join, proj, key) {
                let names: Vec<&str> = key.iter().map(|k| k.name.as_str()).collect();
                warnings.push(format!(
                    "the output key ({}) is not provably unique: {why}; upsert output may lose rows",
                    names.join(",")
                ));
            }
        }
        OutputMode::Append => {
            let why = update_sources(join);
            if !why.is_empty() {
                p.add(
                    "SIDEJOIN_OUTPUT_MODE",
                    Some("append"),
                    format!("append output needs an insert-only join, but {}", why.join("; ")),
                );
            }
        }
        OutputMode::Changelog => {}
    }
}
