//! The star-join property suite (SPEC §14), generic over a `JoinState` factory: random chains of
//! 3 and 4 inputs (`star_cases`) with changes on every input. After every record the engine's
//! output so far, applied in order to a multiset of chained rows, must equal the naive chained
//! join of the inputs so far (nested loops, written here without the engine), and no retraction
//! may remove a row that is not there. Every change tagged as a generated retraction must be the
//! `-D` of a chain null-padded at the dimension whose accumulate caused it, and a second engine
//! with `SIDEJOIN_ALLOW_GENERATED_RETRACTS=false` must emit exactly the first one's output minus
//! those changes.

use std::collections::HashMap;

use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::Value;
use sidejoin::change::{Input, JoinedChange, Kind, Row as EngineRow, Side};
use sidejoin::config::{self, DimensionSpec, JoinSpec, JoinType, Mode, SideSpec};
use sidejoin::engine::{Engine, JoinState};
use sidejoin::format;

use super::reference::{canon, Row, Table};
use super::star_cases::{make_star_record, star_case, StarCase, StarRecord};

/// The case's join: the variables of its fact and first dimension, then its further dimensions.
pub(crate) fn star_spec(c: &StarCase, allow_generated_retracts: bool) -> JoinSpec {
    let mut env = vec![
        ("SIDEJOIN_LEFT_KEY", c.dims[0].column.to_owned()),
        ("SIDEJOIN_RIGHT_KEY", "k".to_owned()),
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json".to_owned()),
        ("SIDEJOIN_RIGHT_FORMAT", "debezium-json".to_owned()),
        (
            "SIDEJOIN_JOIN_TYPE",
            if c.dims[0].outer { "left" } else { "inner" }.to_owned(),
        ),
        (
            "SIDEJOIN_ALLOW_GENERATED_RETRACTS",
            allow_generated_retracts.to_string(),
        ),
    ];
    if c.pk[0] {
        env.push(("SIDEJOIN_LEFT_PRIMARY_KEY", "id".to_owned()));
    }
    if c.pk[1] {
        env.push(("SIDEJOIN_RIGHT_PRIMARY_KEY", "id".to_owned()));
    }
    let env: Vec<(String, String)> = env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
    let mut spec = config::load(env, Mode::Replay)
        .expect("the case's two-way variables are valid")
        .join;
    for (i, d) in c.dims.iter().enumerate().skip(1) {
        let side = Side::at(i + 1).expect("at most 4 inputs");
        spec.dimensions.push(DimensionSpec {
            source: SideSpec {
                side,
                primary_key: c.pk[i + 1].then(|| vec!["id".to_owned()]),
                ..spec.right.clone()
            },
            join_type: if d.outer {
                JoinType::Left
            } else {
                JoinType::Inner
            },
            on: Side::at(d.on).expect("an earlier input"),
            lookup: vec![d.column.to_owned()],
            broadcast: true,
        });
    }
    spec
}

/// The naive chained join of `tables` as `c` chains them, each chained row as text.
fn naive_chains(c: &StarCase, tables: &[Table]) -> HashMap<String, i64> {
    let mut out = HashMap::new();
    for f in &tables[0].rows {
        let mut chains: Vec<Vec<Option<&Row>>> = vec![vec![Some(f)]];
        for (i, d) in c.dims.iter().enumerate() {
            let mut next = Vec::new();
            for chain in chains {
                let wanted = chain[d.on].map_or(&Value::Null, |p| &p[d.column]);
                let matches: Vec<&Row> = tables[i + 1]
                    .rows
                    .iter()
                    .filter(|r| !wanted.is_null() && r.get("k") == Some(wanted))
                    .collect();
                if matches.is_empty() && d.outer {
                    let mut longer = chain.clone();
                    longer.push(None);
                    next.push(longer);
                }
                for m in matches {
                    let mut longer = chain.clone();
                    longer.push(Some(m));
                    next.push(longer);
                }
            }
            chains = next;
        }
        for chain in chains {
            let text = chain_text(chain.iter().map(|r| r.map(canon)));
            *out.entry(text).or_insert(0) += 1;
        }
    }
    out
}

fn chain_text(rows: impl Iterator<Item = Option<String>>) -> String {
    rows.map(|r| r.unwrap_or_else(|| "null".to_owned()))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// The chained rows of an engine change, in input order.
fn rows_of(ch: &JoinedChange) -> Vec<Option<&EngineRow>> {
    let mut rows = vec![ch.left.as_ref(), ch.right.as_ref()];
    rows.extend(ch.more.iter().map(Option::as_ref));
    rows
}

fn engine_chain_text(ch: &JoinedChange) -> String {
    chain_text(
        rows_of(ch)
            .into_iter()
            .map(|r| r.map(|r| canon(r.to_value().as_object().expect("rows are objects")))),
    )
}

struct Run<S: JoinState> {
    engine: Engine,
    state: S,
    sources: Vec<SideSpec>,
}

impl<S: JoinState> Run<S> {
    fn new(spec: &JoinSpec, state: S) -> Self {
        Run {
            engine: Engine::new(spec),
            state,
            sources: spec.sources().cloned().collect(),
        }
    }

    fn feed(&mut self, rec: &StarRecord, n: usize) -> Result<Vec<JoinedChange>, String> {
        let value = serde_json::to_vec(&rec.value).expect("JSON");
        let event = format::Decoder::new(&self.sources[rec.side.index()])
            .decode(None, Some(&value))
            .map_err(|e| format!("record {n} did not decode: {e}"))?;
        let mut out = Vec::new();
        let input = Input {
            side: rec.side,
            partition: 0,
            timestamp: n as i64,
            time: None,
            processing_time: 0,
            event,
        };
        self.engine
            .process(&mut self.state, input, &mut out)
            .expect("state");
        Ok(out)
    }
}

/// Applies record `n`'s changes to the `output` multiset; fails on a retraction of a chained
/// row that is not there, or on a generated tag where the rule says none can be.
fn apply(
    output: &mut HashMap<String, i64>,
    changes: &[JoinedChange],
    rec: &StarRecord,
    pure_insert: bool,
    n: usize,
) -> Result<(), String> {
    for ch in changes {
        let text = engine_chain_text(ch);
        let count = output.entry(text.clone()).or_insert(0);
        if ch.kind.is_accumulate() {
            *count += 1;
        } else if *count == 0 {
            return Err(format!(
                "record {n}: {} of a chained row that is not in the output: {text}",
                ch.kind
            ));
        } else {
            *count -= 1;
        }
        let padded_here = rec.side.is_dimension() && rows_of(ch)[rec.side.index()].is_none();
        if ch.generated && !(ch.kind == Kind::Delete && padded_here) {
            return Err(format!(
                "record {n}: {text} ({}) is tagged generated, but it is not null-padded at {}",
                ch.kind, rec.side
            ));
        }
        // An insert on a dimension without primary key only accumulates: every chain it
        // retracts was null-padded there and just got its first match.
        if pure_insert && rec.side.is_dimension() && !ch.kind.is_accumulate() && !ch.generated {
            return Err(format!(
                "record {n}: {text} ({}) retracted by an insert on {} is not tagged generated",
                ch.kind, rec.side
            ));
        }
    }
    output.retain(|_, v| *v != 0);
    Ok(())
}

/// Runs one case; `Err` describes the first divergence.
pub(crate) fn run_star_case<S: JoinState>(
    c: &StarCase,
    factory: &dyn Fn() -> S,
) -> Result<(), String> {
    let mut full = Run::new(&star_spec(c, true), factory());
    let mut filtered = Run::new(&star_spec(c, false), factory());
    let mut tables: Vec<Table> =
        c.pk.iter()
            .map(|pk| Table {
                pk: pk.then(|| "id".to_owned()),
                rows: Vec::new(),
            })
            .collect();
    let mut output = HashMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        let n = i + 1;
        let rec = make_star_record(c, op, &mut tables);
        let changes = full.feed(&rec, n)?;
        let pure_insert = op.action == 0 && !c.pk[op.source];
        apply(&mut output, &changes, &rec, pure_insert, n)?;
        let expected = naive_chains(c, &tables);
        if output != expected {
            return Err(format!(
                "after record {n} ({} {}):\n engine output {output:?}\n naive chain   {expected:?}",
                rec.side, rec.value
            ));
        }
        let got = filtered.feed(&rec, n)?;
        let want: Vec<&JoinedChange> = changes.iter().filter(|ch| !ch.generated).collect();
        if got.iter().collect::<Vec<_>>() != want {
            return Err(format!(
                "record {n}: filtered output {got:?}\n is not the unfiltered output minus generated retractions {want:?}"
            ));
        }
    }
    Ok(())
}

/// Runs `cases` random star-join cases over stores from `factory`.
pub(crate) fn check_star_join<S: JoinState>(cases: u32, factory: impl Fn() -> S) {
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let result = runner.run(&star_case(), |c| {
        run_star_case(&c, &factory).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("star join property failed: {e}");
    }
}
