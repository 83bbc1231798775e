//! `sidejoin replay` (SPEC §10): the same pipeline as `run`, driven by a JSONL file of records
//! instead of Kafka, with in-memory (or any) state.
//!
//! Each input line is one arriving record `{"side", "key", "value", "timestamp"?, "partition"?}`;
//! each output line is one change `{"op","row","cause"}` (or, with `--records`, one Kafka record
//! `{"key","value","cause"}`), `cause` being the 1-based input line. Diagnostics and the final
//! `{"stats":…}` line go to the error stream.

use std::io::{self, BufRead, Write};

use serde_json::json;

use crate::change::{Partition, Side};
use crate::config::{Config, JoinSpec};
use crate::engine::JoinState;
use crate::format::DecodeError;
use crate::pipeline::{ErrorAction, Origin, Pipeline};
use crate::row::scan::{self, JsonKind};
use crate::row::Json;
use crate::sink::Records;

#[derive(Debug, Clone, Copy, Default)]
pub struct ReplayOptions {
    /// Print the Kafka records of the output mode instead of changes.
    pub records: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("line {line}: {message}")]
    BadLine { line: usize, message: String },
    #[error("line {line}: cannot decode the {side} record: {error} (SIDEJOIN_ON_ERROR=fail)")]
    Failed {
        line: usize,
        side: Side,
        error: String,
    },
    #[error("{0}")]
    Io(#[from] io::Error),
    #[error(transparent)]
    State(#[from] crate::engine::state::StateError),
}

/// One parsed input line; `key` and `value` are the record's bytes (JSON text).
struct Line<'a> {
    side: Side,
    key: Option<&'a [u8]>,
    value: Option<&'a [u8]>,
    timestamp: Option<i64>,
    partition: Partition,
}

/// Parses one input line: a JSON object with the members of the module doc; `join` names the
/// inputs `side` may be.
fn parse_line<'a>(text: &'a str, join: &JoinSpec) -> Result<Line<'a>, String> {
    let bytes = text.as_bytes();
    let scanned = scan::scan(bytes).map_err(|e| format!("not JSON: {e}"))?;
    if scanned.kind != JsonKind::Object {
        return Err("not a JSON object".into());
    }
    // A member given twice counts with its last value.
    let field = |name: &str| {
        scanned
            .members
            .iter()
            .rev()
            .find(|m| &bytes[m.name.0..m.name.1] == name.as_bytes())
            .map(|m| Json::new_unchecked(&bytes[m.value.0..m.value.1]))
    };
    let bytes_of = |name: &str| field(name).filter(|v| !v.is_null()).map(|v| v.as_bytes());
    // Checked in this order: the first problem is the one reported.
    Ok(Line {
        side: side_of(field("side"), join)?,
        key: bytes_of("key"),
        value: bytes_of("value"),
        timestamp: timestamp_of(field("timestamp"))?,
        partition: partition_of(field("partition"))?,
    })
}

/// `side`: `"left"` or `"right"`, required; in a star join also `"dim2"`… or a SQL script's
/// table name or alias (SPEC §14).
fn side_of(v: Option<Json<'_>>, join: &JoinSpec) -> Result<Side, String> {
    let names = || {
        let mut names: Vec<String> = join.inputs().map(|s| format!("\"{}\"", s.name())).collect();
        names.extend(join.aliases.iter().map(|(a, _)| format!("\"{a}\"")));
        names.join(", ")
    };
    match v {
        Some(v) if v.as_str().as_deref() == Some("left") => Ok(Side::Left),
        Some(v) if v.as_str().as_deref() == Some("right") => Ok(Side::Right),
        Some(v) if join.is_star() || !join.aliases.is_empty() => v
            .as_str()
            .and_then(|name| join.source_named(&name))
            .ok_or_else(|| format!("`side` must be one of {}, found {v:?}", names())),
        Some(other) => Err(format!(
            "`side` must be \"left\" or \"right\", found {other:?}"
        )),
        None => Err(format!(
            "missing `side` ({})",
            names().replace(", ", " or ")
        )),
    }
}

/// `timestamp`: epoch milliseconds, an integer (text with a `.` is refused even when whole), or
/// absent/null.
fn timestamp_of(v: Option<Json<'_>>) -> Result<Option<i64>, String> {
    match v {
        None => Ok(None),
        Some(v) if v.is_null() => Ok(None),
        Some(v)
            if v.kind() == JsonKind::Number
                && !v.as_bytes().contains(&b'.')
                && v.as_i64().is_some() =>
        {
            Ok(v.as_i64())
        }
        Some(other) => Err(format!(
            "`timestamp` must be epoch milliseconds (an integer), found {other:?}"
        )),
    }
}

/// `partition`: a non-negative integer (as `timestamp`) that fits a Kafka partition, or
/// absent/null (0).
fn partition_of(v: Option<Json<'_>>) -> Result<Partition, String> {
    match v {
        None => Ok(0),
        Some(v) if v.is_null() => Ok(0),
        Some(v)
            if v.kind() == JsonKind::Number
                && v.as_i64()
                    .is_some_and(|p| (0..=i64::from(Partition::MAX)).contains(&p))
                && !v.as_bytes().contains(&b'.') =>
        {
            Ok(v.as_i64().unwrap_or(0) as Partition)
        }
        Some(other) => Err(format!(
            "`partition` must be a non-negative integer, found {other:?}"
        )),
    }
}

fn write_changes(
    pipeline: &Pipeline,
    cause: usize,
    opts: ReplayOptions,
    records: &mut Records,
    out: &mut impl Write,
) -> io::Result<()> {
    if opts.records {
        records.clear();
        pipeline.records(0, records);
        for r in &records.records {
            out.write_all(b"{\"key\":")?;
            out.write_all(records.key(r).unwrap_or(b"null"))?;
            out.write_all(b",\"value\":")?;
            out.write_all(records.value(r).unwrap_or(b"null"))?;
            writeln!(out, ",\"cause\":{cause}}}")?;
        }
    } else {
        let changes = pipeline.changes();
        for c in &changes.changes {
            write!(out, "{{\"op\":\"{}\",\"row\":", c.kind.short())?;
            out.write_all(changes.row(c))?;
            writeln!(out, ",\"cause\":{cause}}}")?;
        }
    }
    Ok(())
}

/// Replays `input` through a pipeline over `state`, writing results to `out` and diagnostics and
/// the final stats line to `err`.
pub fn replay<S: JoinState>(
    config: &Config,
    mut state: S,
    input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
    opts: ReplayOptions,
) -> Result<(), ReplayError> {
    for w in &config.warnings {
        writeln!(err, "{}", json!({ "warning": w }))?;
    }
    let mut pipeline = Pipeline::new(config);
    let result = run_lines(config, &mut pipeline, &mut state, input, out, err, opts);
    writeln!(err, "{}", json!({"stats": pipeline.stats().to_json()}))?;
    out.flush()?;
    result
}

/// The input partitions named by `lines` (at least partition 0): replay's stand-in for a
/// consumer assignment, which the interval join's watermark waits for.
fn partitions(lines: &[String], join: &JoinSpec) -> Vec<Partition> {
    let mut ps: Vec<Partition> = lines
        .iter()
        .filter_map(|l| parse_line(l, join).ok())
        .map(|l| l.partition)
        .collect();
    ps.push(0);
    ps.sort_unstable();
    ps.dedup();
    ps
}

/// A text format's value (csv): the line's JSON string, unquoted; `None` for other formats.
fn text_value(
    pipeline: &Pipeline,
    line: &Line<'_>,
    n: usize,
) -> Result<Option<String>, ReplayError> {
    match line.value {
        Some(v) if pipeline.reads_text(line.side) => serde_json::from_slice::<String>(v)
            .map(Some)
            .map_err(|_| ReplayError::BadLine {
                line: n,
                message: format!(
                    "the {} side reads csv: `value` must be a JSON string holding the line",
                    line.side
                ),
            }),
        _ => Ok(None),
    }
}

/// A record that could not be decoded: one JSON line on `err` with what `SIDEJOIN_ON_ERROR`
/// does with it; `fail` ends the replay.
fn report_error(
    pipeline: &mut Pipeline,
    n: usize,
    side: Side,
    e: &DecodeError,
    err: &mut impl Write,
) -> Result<(), ReplayError> {
    let action = pipeline.dispatch();
    let name = match action {
        ErrorAction::Fail => "fail",
        ErrorAction::DeadLetter => "dlq",
        ErrorAction::Skip => "skip",
    };
    writeln!(
        err,
        "{}",
        json!({"line": n, "side": side.name(), "error": e.to_string(), "action": name})
    )?;
    if action == ErrorAction::Fail {
        return Err(ReplayError::Failed {
            line: n,
            side,
            error: e.to_string(),
        });
    }
    Ok(())
}

fn run_lines<S: JoinState>(
    config: &Config,
    pipeline: &mut Pipeline,
    state: &mut S,
    input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
    opts: ReplayOptions,
) -> Result<(), ReplayError> {
    // An interval join needs the partitions up front, so its input is read whole; a regular
    // join streams.
    let lines: Box<dyn Iterator<Item = io::Result<String>>> = if config.join.interval.is_some() {
        let all = input.lines().collect::<io::Result<Vec<String>>>()?;
        pipeline.set_partitions(&partitions(&all, &config.join), 0);
        Box::new(all.into_iter().map(Ok))
    } else {
        Box::new(input.lines())
    };
    let mut records = Records::default();
    let mut timestamp = 0i64;
    for (i, text) in lines.enumerate() {
        let n = i + 1;
        let text = text?;
        if text.trim().is_empty() {
            continue;
        }
        let line = parse_line(&text, &config.join)
            .map_err(|message| ReplayError::BadLine { line: n, message })?;
        timestamp = line.timestamp.unwrap_or(timestamp);
        let text_value = text_value(pipeline, &line, n)?;
        let value = text_value.as_deref().map(str::as_bytes).or(line.value);
        let origin = Origin {
            side: line.side,
            partition: line.partition,
            timestamp,
            processing_time: 0,
        };
        let error = pipeline.process(state, origin, line.key, value)?;
        write_changes(pipeline, n, opts, &mut records, out)?;
        if let Some(e) = error {
            report_error(pipeline, n, line.side, &e, err)?;
        }
    }
    pipeline.flush(state)?;
    write_changes(pipeline, 0, opts, &mut records, out)?;
    Ok(())
}
