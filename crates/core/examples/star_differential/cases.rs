//! The cases file shared with Flink's side (`scripts/flink/SidejoinStarDiff.java`, whose header
//! describes the format): topologies, then each case's changes in the order sidejoin reads them.
//! This module is the model and its text form only; `generate` makes cases, `engine` runs them.

use std::fmt::{self, Write as _};

/// The columns of every input after `case_no`, in file order.
pub(crate) const COLUMNS: [&str; 5] = ["id", "a", "b", "k", "v"];

/// How one dimension joins the chain: `[LEFT] JOIN dN ON s<on>.<column> = dN.k`.
#[derive(Debug, Clone)]
pub(crate) struct Dim {
    pub outer: bool,
    /// The input it is looked up on: 0 the fact, else an earlier dimension.
    pub on: usize,
    /// `a` or `b`.
    pub column: &'static str,
}

/// A chain: the fact (input 0) and its dimensions, each input with or without primary key `id`.
#[derive(Debug, Clone)]
pub(crate) struct Topology {
    pub number: usize,
    pub pk: Vec<bool>,
    pub dims: Vec<Dim>,
}

/// A change's kind, as Flink's `RowKind` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChangeKind {
    Insert,
    UpdateBefore,
    UpdateAfter,
    Delete,
}

impl ChangeKind {
    fn text(self) -> &'static str {
        match self {
            ChangeKind::Insert => "+I",
            ChangeKind::UpdateBefore => "-U",
            ChangeKind::UpdateAfter => "+U",
            ChangeKind::Delete => "-D",
        }
    }

    fn parse(s: &str) -> Result<Self, String> {
        Ok(match s {
            "+I" => ChangeKind::Insert,
            "-U" => ChangeKind::UpdateBefore,
            "+U" => ChangeKind::UpdateAfter,
            "-D" => ChangeKind::Delete,
            _ => return Err(format!("not a change kind: {s}")),
        })
    }
}

/// A row's values in `COLUMNS` order; `None` is null.
pub(crate) type Values = [Option<i64>; 5];

/// One change of one input of one case.
#[derive(Debug, Clone)]
pub(crate) struct Op {
    pub source: usize,
    pub kind: ChangeKind,
    pub values: Values,
}

/// One case: a topology and the changes of all its inputs, in sidejoin's reading order (an
/// update is a `-U` line directly followed by its `+U` line).
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub topology: usize,
    pub number: u64,
    pub ops: Vec<Op>,
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pk: String = self.pk.iter().map(|&p| if p { '1' } else { '0' }).collect();
        write!(f, "topology {} {pk}", self.number)?;
        for d in &self.dims {
            let join = if d.outer { 'L' } else { 'I' };
            write!(f, " {join}{}{}", d.on, d.column)?;
        }
        Ok(())
    }
}

impl Topology {
    /// The chain as SQL, for reports (Flink's query also matches `case_no` in every `ON`).
    pub(crate) fn sql(&self) -> String {
        let mut s = String::from("FROM s0");
        for (i, d) in self.dims.iter().enumerate() {
            let join = if d.outer { "LEFT JOIN" } else { "JOIN" };
            let n = i + 1;
            let _ = write!(s, " {join} s{n} ON s{}.{} = s{n}.k", d.on, d.column);
        }
        let pk: Vec<String> = (0..self.pk.len())
            .map(|i| format!("s{i}{}", if self.pk[i] { "(pk id)" } else { "" }))
            .collect();
        format!("{s}   [{}]", pk.join(", "))
    }
}

/// The `op` line of `op` in case `c`.
pub(crate) fn op_line(c: &Case, op: &Op) -> String {
    let values: Vec<String> = op.values.iter().map(|v| value_text(*v)).collect();
    format!(
        "op {} {} {} {} {}",
        c.topology,
        c.number,
        op.source,
        op.kind.text(),
        values.join(" ")
    )
}

fn value_text(v: Option<i64>) -> String {
    v.map_or_else(|| "null".to_owned(), |n| n.to_string())
}

/// The whole file: every topology's line, then every case's changes.
pub(crate) fn write(topologies: &[Topology], cases: &[Case]) -> String {
    let mut s = String::new();
    for t in topologies {
        let _ = writeln!(s, "{t}");
    }
    for c in cases {
        for op in &c.ops {
            let _ = writeln!(s, "{}", op_line(c, op));
        }
    }
    s
}

/// Reads a file `write` made back.
pub(crate) fn parse(text: &str) -> Result<(Vec<Topology>, Vec<Case>), String> {
    let mut topologies = Vec::new();
    let mut cases: Vec<Case> = Vec::new();
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let f: Vec<&str> = line.split(' ').collect();
        match f[0] {
            "topology" if f.len() >= 4 => topologies.push(parse_topology(&f)?),
            "op" if f.len() == 10 => {
                let (topology, number) = (num(f[1])?, num(f[2])?);
                let values = parse_values(&f[5..])?;
                let op = Op {
                    source: num(f[3])?,
                    kind: ChangeKind::parse(f[4])?,
                    values,
                };
                match cases.last_mut() {
                    Some(c) if c.number == number as u64 => c.ops.push(op),
                    _ => cases.push(Case {
                        topology,
                        number: number as u64,
                        ops: vec![op],
                    }),
                }
            }
            _ => return Err(format!("not a cases line: {line}")),
        }
    }
    Ok((topologies, cases))
}

fn parse_topology(f: &[&str]) -> Result<Topology, String> {
    let pk = f[2].chars().map(|c| c == '1').collect();
    let dims = f[3..]
        .iter()
        .map(|d| {
            let b = d.as_bytes();
            let column = match d.get(2..) {
                Some("a") => "a",
                Some("b") => "b",
                _ => return Err(format!("not a dimension: {d}")),
            };
            Ok(Dim {
                outer: b[0] == b'L',
                on: usize::from(b[1] - b'0'),
                column,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok(Topology {
        number: num(f[1])?,
        pk,
        dims,
    })
}

fn parse_values(f: &[&str]) -> Result<Values, String> {
    let mut values = [None; 5];
    for (v, s) in values.iter_mut().zip(f) {
        *v = match *s {
            "null" => None,
            n => Some(n.parse().map_err(|e| format!("{n}: {e}"))?),
        };
    }
    Ok(values)
}

fn num(s: &str) -> Result<usize, String> {
    s.parse().map_err(|e| format!("{s}: {e}"))
}
