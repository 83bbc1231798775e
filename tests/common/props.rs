//! The engine property suite (generic over a `JoinState` factory): random changelogs on both
//! sides, with and without primary keys, one- and two-column keys, colliding keys, duplicate
//! copies, `1` vs `1.0` and null keys. After every input record the engine's output so far,
//! applied in order to a multiset, must equal the naive join of the inputs so far, and no
//! retraction may remove a row that is not there. A second engine with
//! `SIDEJOIN_ALLOW_GENERATED_RETRACTS=false` must emit exactly the first one's output minus the
//! changes tagged as generated retractions.

use std::collections::HashMap;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::{json, Map, Value};
use sidejoin::change::{Input, JoinedChange, Kind, Side};
use sidejoin::config::{self, Mode};
use sidejoin::engine::{project::Projection, Engine, JoinState};
use sidejoin::format;

use super::reference::{canon, naive_join, JoinDef, Row, Table};

/// How one side is configured in a case.
#[derive(Debug, Clone)]
pub struct SideCase {
    pub pk: bool,
    /// Primary-key sides: upsert-json instead of debezium-json. Others: json instead of debezium-json.
    pub alt_format: bool,
}

#[derive(Debug, Clone)]
pub struct Op {
    pub left: bool,
    /// 0 insert, 1 update, 2 delete.
    pub action: u8,
    pub id: u8,
    pub k1: u8,
    pub k2: u8,
    pub payload: u8,
    /// Chooses an existing row (deletes/updates on multisets) or the old key (updates on keyed sides).
    pub pick: u8,
    pub known_before: bool,
}

#[derive(Debug, Clone)]
pub struct Case {
    pub left: SideCase,
    pub right: SideCase,
    pub two_column_keys: bool,
    pub null_keys_match: bool,
    pub ops: Vec<Op>,
}

fn side_case() -> impl Strategy<Value = SideCase> {
    (any::<bool>(), any::<bool>()).prop_map(|(pk, alt_format)| SideCase { pk, alt_format })
}

fn op() -> impl Strategy<Value = Op> {
    (
        any::<bool>(),
        0u8..3,
        0u8..3,
        0u8..10,
        0u8..10,
        0u8..2,
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(
            |(left, action, id, k1, k2, payload, pick, known_before)| Op {
                left,
                action,
                id,
                k1,
                k2,
                payload,
                pick,
                known_before,
            },
        )
}

pub fn case() -> impl Strategy<Value = Case> {
    (
        side_case(),
        side_case(),
        any::<bool>(),
        any::<bool>(),
        prop::collection::vec(op(), 1..=50),
    )
        .prop_map(
            |(left, right, two_column_keys, null_keys_match, ops)| Case {
                left,
                right,
                two_column_keys,
                null_keys_match,
                ops,
            },
        )
}

/// Key values that collide on purpose: `1` and `1.0` are equal, `"1"` is not, null never matches
/// (unless null keys match); `None` is a missing column.
fn key_value(i: u8) -> Option<Value> {
    match i {
        0..=2 => Some(json!(1)),
        3 => Some(json!(1.0)),
        4 | 5 => Some(json!(2)),
        6 => Some(json!("1")),
        7 => Some(Value::Null),
        8 => None,
        _ => Some(json!(3)),
    }
}

fn build_row(c: &Case, side: Side, op: &Op, id: u8) -> Row {
    let mut r = Map::new();
    if c.side(side).pk {
        r.insert("id".into(), json!(id));
    }
    if let Some(v) = key_value(op.k1) {
        r.insert("k1".into(), v);
    }
    if c.two_column_keys {
        if let Some(v) = key_value(op.k2) {
            r.insert("k2".into(), v);
        }
    }
    let payload = if side == Side::Left { "v" } else { "w" };
    r.insert(payload.into(), json!(op.payload));
    r
}

impl Case {
    fn side(&self, side: Side) -> &SideCase {
        match side {
            Side::Left => &self.left,
            Side::Right => &self.right,
        }
    }

    fn keys(&self) -> Vec<String> {
        if self.two_column_keys {
            vec!["k1".into(), "k2".into()]
        } else {
            vec!["k1".into()]
        }
    }

    pub fn env(&self, join_type: &str, allow_generated_retracts: bool) -> Vec<(String, String)> {
        let keys = self.keys().join(",");
        let mut env = vec![
            ("SIDEJOIN_JOIN_TYPE", join_type.to_owned()),
            ("SIDEJOIN_LEFT_KEY", keys.clone()),
            ("SIDEJOIN_RIGHT_KEY", keys),
            ("SIDEJOIN_NULL_KEYS_MATCH", self.null_keys_match.to_string()),
            ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", allow_generated_retracts.to_string()),
            (
                "SIDEJOIN_SELECT",
                "l.id AS lid, l.k1 AS lk1, l.k2 AS lk2, l.v AS v, r.id AS rid, r.k1 AS rk1, r.k2 AS rk2, r.w AS w".to_owned(),
            ),
        ];
        for side in Side::BOTH {
            let s = self.side(side);
            let format = match (s.pk, s.alt_format) {
                (true, true) => "upsert-json",
                (false, true) => "json",
                _ => "debezium-json",
            };
            let v = side.var();
            env.push((
                if v == "LEFT" {
                    "SIDEJOIN_LEFT_FORMAT"
                } else {
                    "SIDEJOIN_RIGHT_FORMAT"
                },
                format.to_owned(),
            ));
            if s.pk {
                env.push((
                    if v == "LEFT" {
                        "SIDEJOIN_LEFT_PRIMARY_KEY"
                    } else {
                        "SIDEJOIN_RIGHT_PRIMARY_KEY"
                    },
                    "id".to_owned(),
                ));
            }
        }
        env.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
    }
}

/// One input record: its Kafka key and value, and what it does to the reference tables.
struct Record {
    side: Side,
    key: Option<Value>,
    value: Option<Value>,
}

/// Builds the record for `op` and applies its meaning to the reference table of its side.
fn make_record(c: &Case, op: &Op, tables: &mut [Table; 2]) -> Record {
    let side = if op.left { Side::Left } else { Side::Right };
    let s = c.side(side);
    let table = &mut tables[side.index()];
    let row = build_row(c, side, op, op.id);
    let (key, value) = match (s.pk, s.alt_format, op.action) {
        // upsert-json: the key carries the id; values sometimes leave it to the key.
        (true, true, 2) => {
            table.delete(&Row::from_iter([("id".to_owned(), json!(op.id))]));
            (Some(json!({ "id": op.id })), None)
        }
        (true, true, _) => {
            table.upsert(row.clone());
            let mut v = row;
            if op.known_before {
                v.remove("id");
            }
            (Some(json!({ "id": op.id })), Some(Value::Object(v)))
        }
        // json: inserts only.
        (false, true, _) => {
            table.upsert(row.clone());
            (None, Some(Value::Object(row)))
        }
        // debezium-json.
        (_, false, 0) => {
            table.upsert(row.clone());
            (None, Some(json!({"before": null, "after": row, "op": "c"})))
        }
        (true, false, 1) => {
            let before = op.known_before.then(|| build_row(c, side, op, op.pick % 3));
            table.update(before.as_ref(), row.clone());
            (
                None,
                Some(json!({"before": before, "after": row, "op": "u"})),
            )
        }
        (true, false, _) => {
            let before = Row::from_iter([("id".to_owned(), json!(op.id))]);
            table.delete(&before);
            (
                None,
                Some(json!({"before": before, "after": null, "op": "d"})),
            )
        }
        (false, false, action) => {
            let existing = (!table.rows.is_empty() && op.known_before)
                .then(|| table.rows[op.pick as usize % table.rows.len()].clone());
            // Otherwise a row that is usually, but not always, absent from state.
            let random = Op {
                payload: op.pick % 2,
                ..op.clone()
            };
            let before = existing.unwrap_or_else(|| build_row(c, side, &random, 0));
            if action == 1 {
                table.update(Some(&before), row.clone());
                (
                    None,
                    Some(json!({"before": before, "after": row, "op": "u"})),
                )
            } else {
                table.delete(&before);
                (
                    None,
                    Some(json!({"before": before, "after": null, "op": "d"})),
                )
            }
        }
    };
    Record { side, key, value }
}

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
        let projection = engine.plan().projection.clone();
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
pub fn run_case<S: JoinState>(
    join_type: &str,
    c: &Case,
    factory: &dyn Fn() -> S,
) -> Result<(), String> {
    let (mut full, projection) = Run::new(c.env(join_type, true), factory())?;
    let (mut filtered, _) = Run::new(c.env(join_type, false), factory())?;
    let keys = c.keys();
    let def = JoinDef {
        left_key: &keys,
        right_key: &keys,
        left_outer: matches!(join_type, "left" | "full"),
        right_outer: matches!(join_type, "right" | "full"),
        null_keys_match: c.null_keys_match,
    };
    let mut tables = [
        Table {
            pk: c.left.pk.then(|| "id".to_owned()),
            rows: Vec::new(),
        },
        Table {
            pk: c.right.pk.then(|| "id".to_owned()),
            rows: Vec::new(),
        },
    ];
    let mut output: HashMap<String, i64> = HashMap::new();
    for (i, op) in c.ops.iter().enumerate() {
        let n = i + 1;
        let rec = make_record(c, op, &mut tables);
        let changes = full.feed(&rec, n)?;
        for ch in &changes {
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
        let expected = multiset(
            naive_join(&def, &tables[0], &tables[1])
                .into_iter()
                .map(|(l, r)| canon(&reference_row(l, r))),
        );
        if output != expected {
            return Err(format!(
                "after record {n} ({rec_side} {value}):\n engine output table {output:?}\n naive join         {expected:?}",
                rec_side = rec.side,
                value = rec.value.clone().unwrap_or(Value::Null),
            ));
        }
        let got = filtered.feed(&rec, n)?;
        let want: Vec<&JoinedChange> = changes.iter().filter(|ch| !ch.generated).collect();
        if got.iter().collect::<Vec<_>>() != want {
            return Err(format!("record {n}: filtered output {got:?}\n is not the unfiltered output minus generated retractions {want:?}"));
        }
    }
    Ok(())
}

/// Runs `cases` random cases of `join_type` over stores from `factory`.
pub fn check_join_type<S: JoinState>(join_type: &str, cases: u32, factory: impl Fn() -> S) {
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
