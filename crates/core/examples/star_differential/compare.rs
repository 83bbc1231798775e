//! Materialised tables and their comparison: a chained row as canonical text (SPEC §1: numbers
//! by value, null the same as a missing column, an input whose columns are all null is a
//! null-padded one), Flink's output file read per case, and the report of a differing case.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use serde_json::Value;

use crate::cases::{op_line, Case, Topology};

/// A case's final table: chained row (canonical text) -> count (never 0).
pub(crate) type Materialised = BTreeMap<String, i64>;

/// One input's row of a chained row; `null` for a missing (null-padded) row.
fn canon(row: Option<Value>) -> String {
    let Some(Value::Object(m)) = row else {
        return "null".to_owned();
    };
    let cols: BTreeMap<&String, String> = m
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| {
            let t = match v {
                Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), |f| f.to_string()),
                other => other.to_string(),
            };
            (k, t)
        })
        .collect();
    if cols.is_empty() {
        return "null".to_owned();
    }
    let fields: Vec<String> = cols.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", fields.join(","))
}

/// A chained row, the fact's row first.
pub(crate) fn chain_text(rows: impl Iterator<Item = Option<Value>>) -> String {
    rows.map(canon).collect::<Vec<_>>().join(" | ")
}

/// Flink's output file: case number -> its materialised table.
pub(crate) fn read_flink(text: &str) -> Result<HashMap<u64, Materialised>, String> {
    let mut out: HashMap<u64, Materialised> = HashMap::new();
    for line in text.lines().filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_str(line).map_err(|e| format!("{line}: {e}"))?;
        let (Some(case), Some(count), Some(chain)) = (
            v["case"].as_u64(),
            v["count"].as_i64(),
            v["chain"].as_array(),
        ) else {
            return Err(format!("not a Flink output line: {line}"));
        };
        let text = chain_text(chain.iter().cloned().map(Some));
        *out.entry(case).or_default().entry(text).or_insert(0) += count;
    }
    Ok(out)
}

fn table_text(t: &Materialised) -> String {
    if t.is_empty() {
        return "    (empty)\n".to_owned();
    }
    t.iter()
        .map(|(row, n)| format!("    {n} x {row}\n"))
        .collect()
}

/// The report of a differing case: its topology, its changelog, both tables and the rows whose
/// counts differ.
pub(crate) fn report(
    t: &Topology,
    c: &Case,
    sidejoin: &Result<Materialised, String>,
    flink: &Materialised,
) -> String {
    let mut s = format!(
        "== case {} differs (topology {}: {})\n  {t}\n  changelog:\n",
        c.number,
        t.number,
        t.sql()
    );
    for op in &c.ops {
        let _ = writeln!(s, "    {}", op_line(c, op));
    }
    let _ = write!(s, "  flink:\n{}", table_text(flink));
    match sidejoin {
        Err(e) => {
            let _ = writeln!(s, "  sidejoin: error: {e}");
        }
        Ok(mine) => {
            let _ = write!(s, "  sidejoin:\n{}  differing counts:\n", table_text(mine));
            let rows: BTreeSet<&String> = flink.keys().chain(mine.keys()).collect();
            for row in rows {
                let f = flink.get(row).copied().unwrap_or(0);
                let m = mine.get(row).copied().unwrap_or(0);
                if f != m {
                    let _ = writeln!(s, "    flink {f}, sidejoin {m}: {row}");
                }
            }
        }
    }
    s
}
