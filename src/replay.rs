//! `sidejoin replay` (SPEC §10): the same pipeline as `run`, driven by a JSONL file of records
//! instead of Kafka, with in-memory (or any) state.
//!
//! Each input line is one arriving record `{"side", "key", "value", "timestamp"?, "partition"?}`;
//! each output line is one change `{"op","row","cause"}` (or, with `--records`, one Kafka record
//! `{"key","value","cause"}`), `cause` being the 1-based input line. Diagnostics and the final
//! `{"stats":…}` line go to the error stream.

use std::io::{self, BufRead, Write};

use serde_json::{json, Value};

use crate::changelog::Side;
use crate::config::{Config, OnError};
use crate::engine::JoinState;
use crate::pipeline::{Origin, Pipeline};
use crate::sink::OutChange;

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
}

/// One parsed input line.
struct Line {
    side: Side,
    key: Option<Value>,
    value: Option<Value>,
    timestamp: Option<i64>,
    partition: u32,
}

fn parse_line(text: &str) -> Result<Line, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(mut m) = v else {
        return Err("not a JSON object".into());
    };
    let side = match m.get("side") {
        Some(Value::String(s)) if s == "left" => Side::Left,
        Some(Value::String(s)) if s == "right" => Side::Right,
        Some(other) => {
            return Err(format!(
                "`side` must be \"left\" or \"right\", found {other}"
            ))
        }
        None => return Err("missing `side` (\"left\" or \"right\")".into()),
    };
    let timestamp = match m.get("timestamp") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_i64().is_some() => n.as_i64(),
        Some(other) => {
            return Err(format!(
                "`timestamp` must be epoch milliseconds (an integer), found {other}"
            ))
        }
    };
    let partition = match m.get("partition") {
        None | Some(Value::Null) => 0,
        Some(Value::Number(n)) if n.as_u64().is_some_and(|p| p <= u64::from(u32::MAX)) => {
            n.as_u64().unwrap_or(0) as u32
        }
        Some(other) => {
            return Err(format!(
                "`partition` must be a non-negative integer, found {other}"
            ))
        }
    };
    let take = |v: Option<Value>| v.filter(|v| !v.is_null());
    Ok(Line {
        side,
        key: take(m.remove("key")),
        value: take(m.remove("value")),
        timestamp,
        partition,
    })
}

/// A Kafka key as JSON (keys are JSON text; anything else is shown as a string).
fn key_json(key: &[u8]) -> Value {
    serde_json::from_slice(key)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(key).into_owned()))
}

fn write_changes<S: JoinState>(
    pipeline: &Pipeline<S>,
    changes: Vec<OutChange>,
    cause: usize,
    opts: ReplayOptions,
    out: &mut impl Write,
) -> io::Result<()> {
    if opts.records {
        for r in pipeline.records(changes) {
            serde_json::to_writer(
                &mut *out,
                &json!({"key": r.key.map(|k| key_json(&k)), "value": r.value, "cause": cause}),
            )?;
            out.write_all(b"\n")?;
        }
    } else {
        for c in changes {
            serde_json::to_writer(
                &mut *out,
                &json!({"op": c.kind.short(), "row": c.row, "cause": cause}),
            )?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// Replays `input` through a pipeline over `state`, writing results to `out` and diagnostics and
/// the final stats line to `err`.
pub fn replay<S: JoinState>(
    config: &Config,
    state: S,
    input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
    opts: ReplayOptions,
) -> Result<(), ReplayError> {
    for w in &config.warnings {
        writeln!(err, "{}", json!({ "warning": w }))?;
    }
    let mut pipeline = Pipeline::new(config, state);
    let result = run_lines(config, &mut pipeline, input, out, err, opts);
    writeln!(err, "{}", json!({"stats": pipeline.stats().to_json()}))?;
    out.flush()?;
    result
}

/// The input partitions named by `lines` (at least partition 0): replay's stand-in for a
/// consumer assignment, which the interval join's watermark waits for.
fn partitions(lines: &[String]) -> Vec<u32> {
    let mut ps: Vec<u32> = lines
        .iter()
        .filter_map(|l| parse_line(l).ok())
        .map(|l| l.partition)
        .collect();
    ps.push(0);
    ps.sort_unstable();
    ps.dedup();
    ps
}

fn run_lines<S: JoinState>(
    config: &Config,
    pipeline: &mut Pipeline<S>,
    input: impl BufRead,
    out: &mut impl Write,
    err: &mut impl Write,
    opts: ReplayOptions,
) -> Result<(), ReplayError> {
    // An interval join needs the partitions up front, so its input is read whole; a regular
    // join streams.
    let lines: Box<dyn Iterator<Item = io::Result<String>>> = if config.join.interval.is_some() {
        let all = input.lines().collect::<io::Result<Vec<String>>>()?;
        pipeline.set_partitions(&partitions(&all), 0);
        Box::new(all.into_iter().map(Ok))
    } else {
        Box::new(input.lines())
    };
    let mut timestamp = 0i64;
    for (i, text) in lines.enumerate() {
        let n = i + 1;
        let text = text?;
        if text.trim().is_empty() {
            continue;
        }
        let line =
            parse_line(&text).map_err(|message| ReplayError::BadLine { line: n, message })?;
        timestamp = line.timestamp.unwrap_or(timestamp);
        let origin = Origin {
            side: line.side,
            partition: line.partition,
            timestamp,
            processing_time: 0,
        };
        let processed = pipeline.process(origin, line.key, line.value);
        write_changes(pipeline, processed.changes, n, opts, out)?;
        if let Some(e) = processed.error {
            let action = config.process.on_error;
            writeln!(
                err,
                "{}",
                json!({"line": n, "side": line.side.name(), "error": e.to_string(), "action": action.name()})
            )?;
            match action {
                OnError::Fail => {
                    return Err(ReplayError::Failed {
                        line: n,
                        side: line.side,
                        error: e.to_string(),
                    })
                }
                OnError::Dlq => pipeline.stats_mut().dlq_records += 1,
                OnError::Skip => {}
            }
        }
    }
    let rest = pipeline.flush();
    write_changes(pipeline, rest, 0, opts, out)?;
    Ok(())
}
