//! The engine property suite (generic over a `JoinState` factory): random changelogs on both
//! sides, with and without primary keys, one- and two-column keys, colliding keys, duplicate
//! copies, `1` vs `1.0` and null keys. After every input record the engine's output so far,
//! applied in order to a multiset, must equal the naive join of the inputs so far, and no
//! retraction may remove a row that is not there. A second engine with
//! `SIDEJOIN_ALLOW_GENERATED_RETRACTS=false` must emit exactly the first one's output minus the
//! changes tagged as generated retractions.

use std::collections::HashMap;

use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::Value;
use sidejoin::change::{Input, JoinedChange, Kind, Side};
use sidejoin::config::{self, Mode};
use sidejoin::engine::{project::Projection, Engine, JoinState};
use sidejoin::format;

use super::props_cases::{case, make_record, Case, Record};
use super::reference::{canon, naive_join, JoinDef, Row, Table};

fn reference_row(l: Option<&Row>, r: Option<&Row>) -> Row {
    let get =
        |row: Option<&Row>, c: &str| row.and_then(|x| x.get(c)).cloned().unwrap_or(Value::Null);
    Row::from_iter([
        ("lid".to_owned(), get(l, "id")),
        ("lk1".to_owned(), get(l, "k1")),
        ("lk2".to_owned(), get(l, "k2")),
        ("v".to_owned(), get(l, "v")),
        ("rid".to_owned(), get(r, "id")),
        ("rk1".to_owned(), get(r, "k1")),
        ("rk2".to_owned(), get(r, "k2")),
        ("w".to_owned(), get(r, "w")),
    ])
}

fn multiset<'a>(rows: impl Iterator<Item = String> + 'a) -> HashMap<String, i64> {
    let mut m = HashMap::new();
    for r in rows {
        *m.entry(r).or_insert(0) += 1;
    }
    m
}

struct Run<S: JoinState> {
    engine: Engine,
    state: S,
    sides: [sidejoin::config::SideSpec; 2],
}

impl<S: JoinState> Run<S> {
    fn new(env: Vec<(String, String)>, state: S) -> Result<(Self, Projection), String> {
        let cfg = config::load(env, Mode::Replay).map_err(|e| e.to_string())?;
        let engine = Engine::new(&cfg.join);
        let projection = engine.projection().clone();
        Ok((
            Run {
                engine,
                state,
                sides: [cfg.join.left.clone(), cfg.join.right.clone()],
            },
            projection,
        ))
    }

    fn feed(&mut self, rec: &Record, n: usize) -> Result<Vec<JoinedChange>, String> {
        let bytes = |v: &Option<Value>| v.as_ref().map(|v| serde_json::to_vec(v).unwrap());
        let (key, value) = (bytes(&rec.key), bytes(&rec.value));
        let event = format::Decoder::new(&self.sides[rec.side.index()])
            .decode(key.as_deref(), value.as_deref())
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

/// Runs one case for `join_type`; `Err` describes the first divergence.
pub(crate) fn run_case<S: JoinState>(
    join_type: &str,
    c: &Case,
    factory: &dyn Fn() -> S,
) -> Result<(), String> {
    let (mut full, projection) = Run::new(c.env(join_type, true), factory())?;
    let (mut filtered, _) = Run::new(c.env(join_type, false), factory())?;
    let keys = c.keys();
    let def = join_def(join_type, c, &keys);
    let mut tables = empty_tables(c);
    let mut output: HashMap<String, i64> = HashMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        let n = i + 1;
        let rec = make_record(c, op, &mut tables);
        let changes = full.feed(&rec, n)?;
        apply(&mut output, &changes, &projection, &rec, n)?;
        matches_naive_join(&output, &def, &tables, &rec, n)?;
        let got = filtered.feed(&rec, n)?;
        is_unfiltered_minus_generated(&got, &changes, n)?;
    }
    Ok(())
}

/// The reference's definition of the case's join.
fn join_def<'a>(join_type: &str, c: &Case, keys: &'a [String]) -> JoinDef<'a> {
    JoinDef {
        left_key: keys,
        right_key: keys,
        left_outer: matches!(join_type, "left" | "full"),
        right_outer: matches!(join_type, "right" | "full"),
        null_keys_match: c.null_keys_match,
    }
}

/// The reference's input tables (left, right), empty, with the case's primary keys.
fn empty_tables(c: &Case) -> [Table; 2] {
    [
        Table {
            pk: c.left.pk.then(|| "id".to_owned()),
            rows: Vec::new(),
        },
        Table {
            pk: c.right.pk.then(|| "id".to_owned()),
            rows: Vec::new(),
        },
    ]
}

/// Applies the engine's `changes` for record `n` (`rec`) to the `output` multiset; fails on a
/// retraction of a row that is not there, or on a wrong generated tag.
fn apply(
    output: &mut HashMap<String, i64>,
    changes: &[JoinedChange],
    projection: &Projection,
    rec: &Record,
    n: usize,
) -> Result<(), String> {
    for ch in changes {
        let row = canon(
            projection
                .project(ch.left.as_ref(), ch.right.as_ref())
                .to_value()
                .as_object()
                .unwrap(),
        );
        let count = output.entry(row.clone()).or_insert(0);
        if ch.kind.is_accumulate() {
            *count += 1;
        } else if *count == 0 {
            return Err(format!(
                "record {n}: {} of a row that is not in the output: {row}",
                ch.kind
            ));
        } else {
            *count -= 1;
        }
        // A -D of a padded row is generated exactly when the input came from the other side
        // (it gave the row its first match); a -D of a padded row from its own side is an
        // input retraction and must pass the filter.
        let padded_other_side = match (&ch.left, &ch.right) {
            (Some(_), None) => rec.side == Side::Right,
            (None, Some(_)) => rec.side == Side::Left,
            _ => false,
        };
        if ch.generated != (ch.kind == Kind::Delete && padded_other_side) {
            return Err(format!(
                "record {n}: generated tag {} is wrong on {ch:?}",
                ch.generated
            ));
        }
    }
    output.retain(|_, v| *v != 0);
    Ok(())
}

/// The engine's output table after record `n` (`rec`) equals the naive join of the inputs so far.
fn matches_naive_join(
    output: &HashMap<String, i64>,
    def: &JoinDef<'_>,
    tables: &[Table; 2],
    rec: &Record,
    n: usize,
) -> Result<(), String> {
    let expected = multiset(
        naive_join(def, &tables[0], &tables[1])
            .into_iter()
            .map(|(l, r)| canon(&reference_row(l, r))),
    );
    if *output != expected {
        return Err(format!(
            "after record {n} ({rec_side} {value}):\n engine output table {output:?}\n naive join         {expected:?}",
            rec_side = rec.side,
            value = rec.value.clone().unwrap_or(Value::Null),
        ));
    }
    Ok(())
}

/// The filtered engine's output for record `n` (`got`) is the unfiltered one's (`changes`)
/// minus the generated retractions.
fn is_unfiltered_minus_generated(
    got: &[JoinedChange],
    changes: &[JoinedChange],
    n: usize,
) -> Result<(), String> {
    let want: Vec<&JoinedChange> = changes.iter().filter(|ch| !ch.generated).collect();
    if got.iter().collect::<Vec<_>>() != want {
        return Err(format!("record {n}: filtered output {got:?}\n is not the unfiltered output minus generated retractions {want:?}"));
    }
    Ok(())
}

/// Runs `cases` random cases of `join_type` over stores from `factory`.
pub(crate) fn check_join_type<S: JoinState>(join_type: &str, cases: u32, factory: impl Fn() -> S) {
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let result = runner.run(&case(), |c| {
        run_case(join_type, &c, &factory).map_err(TestCaseError::fail)
    });
    if let Err(e) = result {
        panic!("{join_type} join property failed: {e}");
    }
}
