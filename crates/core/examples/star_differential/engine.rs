//! sidejoin's side of the differential: each case through its own engine (no `case_no` column:
//! a case is alone in its engine, as `case_no` keeps it alone in Flink's query), its changes as
//! debezium-json records in the cases file's order, the output changelog materialised as a
//! multiset of chained rows.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};
use sidejoin_core::change::{Input, JoinedChange, Side};
use sidejoin_core::config::{self, DimensionSpec, JoinSpec, JoinType, Mode, SideSpec};
use sidejoin_core::engine::{Engine, MemoryState};
use sidejoin_core::format::Decoder;

use crate::cases::{Case, ChangeKind, Op, Topology, Values, COLUMNS};
use crate::compare::{chain_text, Materialised};

/// Topology `t` as a star `JoinSpec`: the variables of its fact and first dimension, then its
/// further dimensions (as tests/common/star_props.rs builds them). Generated retractions are
/// kept, as Flink emits them: the materialised table needs them.
pub(crate) fn spec(t: &Topology) -> JoinSpec {
    let mut env = vec![
        ("SIDEJOIN_LEFT_KEY", t.dims[0].column.to_owned()),
        ("SIDEJOIN_RIGHT_KEY", "k".to_owned()),
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json".to_owned()),
        ("SIDEJOIN_RIGHT_FORMAT", "debezium-json".to_owned()),
        ("SIDEJOIN_JOIN_TYPE", join_type(t.dims[0].outer).to_owned()),
        ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", "true".to_owned()),
    ];
    for (side, var) in [
        (0, "SIDEJOIN_LEFT_PRIMARY_KEY"),
        (1, "SIDEJOIN_RIGHT_PRIMARY_KEY"),
    ] {
        if t.pk[side] {
            env.push((var, "id".to_owned()));
        }
    }
    let env = env.into_iter().map(|(k, v)| (k.to_owned(), v));
    let mut spec = config::load(env, Mode::Replay)
        .expect("the topology's two-way variables are valid")
        .join;
    for (i, d) in t.dims.iter().enumerate().skip(1) {
        let source = SideSpec {
            side: Side::at(i + 1).expect("at most 4 inputs"),
            primary_key: t.pk[i + 1].then(|| vec!["id".to_owned()]),
            ..spec.right.clone()
        };
        spec.dimensions.push(DimensionSpec {
            source,
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

fn join_type(outer: bool) -> &'static str {
    if outer {
        "left"
    } else {
        "inner"
    }
}

fn row(values: &Values) -> Value {
    let m: Map<String, Value> = COLUMNS
        .iter()
        .zip(values)
        .map(|(c, v)| ((*c).to_owned(), v.map_or(Value::Null, |n| json!(n))))
        .collect();
    Value::Object(m)
}

/// The debezium-json records of a case's changes: `c`, `u` (a `-U` and its `+U`), `d`.
fn records(ops: &[Op]) -> Vec<(usize, Value)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        let op = &ops[i];
        let value = match op.kind {
            ChangeKind::Insert => json!({"before": null, "after": row(&op.values), "op": "c"}),
            ChangeKind::Delete => json!({"before": row(&op.values), "after": null, "op": "d"}),
            ChangeKind::UpdateBefore => {
                i += 1;
                json!({"before": row(&op.values), "after": row(&ops[i].values), "op": "u"})
            }
            ChangeKind::UpdateAfter => unreachable!("a +U follows its -U"),
        };
        out.push((op.source, value));
        i += 1;
    }
    out
}

/// The engine's output for case `c` of a topology whose spec is `spec`, materialised; `Err`
/// when a record does not decode or a retraction removes a chained row that is not there.
pub(crate) fn run(spec: &JoinSpec, c: &Case) -> Result<Materialised, String> {
    let sources: Vec<SideSpec> = spec.sources().cloned().collect();
    let mut engine = Engine::new(spec);
    let mut state = MemoryState::new();
    let mut table: BTreeMap<String, i64> = BTreeMap::new();
    for (n, (source, value)) in records(&c.ops).into_iter().enumerate() {
        let bytes = serde_json::to_vec(&value).expect("JSON");
        let event = Decoder::new(&sources[source])
            .decode(None, Some(&bytes))
            .map_err(|e| format!("record {n} ({value}) did not decode: {e}"))?;
        let input = Input {
            side: Side::at(source).expect("at most 4 inputs"),
            partition: 0,
            timestamp: n as i64,
            time: None,
            processing_time: 0,
            event,
        };
        let mut out = Vec::new();
        engine
            .process(&mut state, input, &mut out)
            .map_err(|e| format!("record {n}: state error {e}"))?;
        for ch in &out {
            apply(&mut table, ch).map_err(|e| format!("record {n} ({value}): {e}"))?;
        }
    }
    table.retain(|_, n| *n != 0);
    Ok(table)
}

fn apply(table: &mut Materialised, ch: &JoinedChange) -> Result<(), String> {
    let rows = [ch.left.as_ref(), ch.right.as_ref()]
        .into_iter()
        .chain(ch.more.iter().map(Option::as_ref))
        .map(|r| r.map(|r| r.to_value()));
    let text = chain_text(rows);
    let count = table.entry(text.clone()).or_insert(0);
    if ch.kind.is_accumulate() {
        *count += 1;
    } else if *count == 0 {
        return Err(format!(
            "{} of a chained row not in the output: {text}",
            ch.kind
        ));
    } else {
        *count -= 1;
    }
    Ok(())
}
