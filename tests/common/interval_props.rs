//! The interval-join property suite (generic over a `JoinState` factory). Random times, keys,
//! partitions and disorder; a naive reference computes, from SPEC §4 alone, every output and the
//! input record after which it became emittable (0 for the end-of-input flush). The engine must
//! produce the same outputs with the same causes, only `+I`, and hold no rows after the flush.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestRunner};
use serde_json::{json, Value};
use sidejoin::change::{Event, Input, Kind, Side};
use sidejoin::config::{self, Mode};
use sidejoin::engine::{Engine, JoinState};

#[derive(Debug, Clone)]
pub(crate) struct Rec {
    pub left: bool,
    /// 0..3 are keys, 3 is a null key.
    pub key: u8,
    pub time: i64,
    pub partition: i32,
}

#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub lower: i64,
    pub upper: i64,
    pub delay: i64,
    pub lateness: i64,
    pub recs: Vec<Rec>,
}

pub(crate) fn case() -> impl Strategy<Value = Case> {
    let rec = (
        any::<bool>(),
        0u8..4,
        0i64..120,
        prop_oneof![4 => Just(0i32), 1 => Just(1i32)],
    )
        .prop_map(|(left, key, time, partition)| Rec {
            left,
            key,
            time,
            partition,
        });
    (
        -20i64..10,
        0i64..25,
        prop_oneof![Just(0i64), Just(5)],
        prop_oneof![Just(0i64), Just(7)],
        prop::collection::vec(rec, 1..=40),
    )
        .prop_map(|(lower, width, delay, lateness, recs)| Case {
            lower,
            upper: lower + width,
            delay,
            lateness,
            recs,
        })
}

/// One output: the left and right record numbers (1-based, 0 = padding) and its cause.
type Out = (u64, usize, usize);

fn side_of(r: &Rec) -> Side {
    if r.left {
        Side::Left
    } else {
        Side::Right
    }
}

/// SPEC §4 as directly as possible.
pub(crate) fn reference(c: &Case, join_type: &str) -> Vec<Out> {
    let mut reference = Reference::new(c, join_type);
    for (i, r) in c.recs.iter().enumerate() {
        reference.arrive(i, r);
    }
    reference.end()
}

/// Whether `join_type` pads unmatched rows of side `s`.
fn outer(join_type: &str, s: Side) -> bool {
    matches!(
        (join_type, s),
        ("full", _) | ("left", Side::Left) | ("right", Side::Right)
    )
}

/// Whether a row of side `s` at time `t` can match nothing more under watermark `w`.
fn is_final(c: &Case, s: Side, t: i64, w: i128) -> bool {
    let bound = match s {
        Side::Left => i128::from(t) - i128::from(c.lower),
        _ => i128::from(t) + i128::from(c.upper),
    };
    w > bound + i128::from(c.lateness)
}

/// The reference's state while the records arrive.
struct Reference<'a> {
    c: &'a Case,
    join_type: &'a str,
    partitions: Vec<i32>,
    max_time: BTreeMap<(bool, i32), i64>,
    /// The watermark.
    w: i128,
    /// (record index, matched, evicted) of stored rows.
    stored: Vec<(usize, bool, bool)>,
    out: Vec<Out>,
}

impl<'a> Reference<'a> {
    fn new(c: &'a Case, join_type: &'a str) -> Reference<'a> {
        let mut partitions: Vec<i32> = c.recs.iter().map(|r| r.partition).chain([0]).collect();
        partitions.sort_unstable();
        partitions.dedup();
        Reference {
            c,
            join_type,
            partitions,
            max_time: BTreeMap::new(),
            w: i128::MIN,
            stored: Vec::new(),
            out: Vec::new(),
        }
    }

    /// Record `i` (`r`) arrives: it matches, is padded if late, or is stored; the watermark
    /// advances and evicts what became final.
    fn arrive(&mut self, i: usize, r: &Rec) {
        let n = i + 1;
        let s = side_of(r);
        let late = is_final(self.c, s, r.time, self.w);
        let matched = self.match_stored(n, r);
        if late {
            if outer(self.join_type, s) && !matched {
                self.out.push(if r.left {
                    (n as u64, n, 0)
                } else {
                    (n as u64, 0, n)
                });
            }
        } else {
            self.stored.push((i, matched, false));
        }
        self.advance_watermark(r);
        self.evict(n);
    }

    /// Joins record `n` (`r`) with every stored row it matches; whether it matched any.
    fn match_stored(&mut self, n: usize, r: &Rec) -> bool {
        let c = self.c;
        let mut matched = false;
        for (j, m, ev) in self.stored.iter_mut() {
            let o = &c.recs[*j];
            if *ev
                || o.left == r.left
                || o.partition != r.partition
                || o.key == 3
                || r.key == 3
                || o.key != r.key
            {
                continue;
            }
            let (tl, tr) = if r.left {
                (r.time, o.time)
            } else {
                (o.time, r.time)
            };
            if tr + c.lower <= tl && tl <= tr + c.upper {
                matched = true;
                *m = true;
                let (l, rr) = if r.left { (n, *j + 1) } else { (*j + 1, n) };
                self.out.push((n as u64, l, rr));
            }
        }
        matched
    }

    /// The watermark: the least of every (side, partition)'s greatest time, less the delay, once
    /// every one has a time; it never goes back.
    fn advance_watermark(&mut self, r: &Rec) {
        let e = self.max_time.entry((r.left, r.partition)).or_insert(r.time);
        *e = (*e).max(r.time);
        let all = self.partitions.iter().all(|p| {
            self.max_time.contains_key(&(true, *p)) && self.max_time.contains_key(&(false, *p))
        });
        if all {
            let cand = self
                .max_time
                .values()
                .map(|t| i128::from(t - self.c.delay))
                .min()
                .unwrap_or(i128::MIN);
            self.w = self.w.max(cand);
        }
    }

    /// Evicts the stored rows that became final (after record `n`), padding unmatched ones.
    fn evict(&mut self, n: usize) {
        let c = self.c;
        for (j, m, ev) in self.stored.iter_mut() {
            let o = &c.recs[*j];
            if !*ev && is_final(c, side_of(o), o.time, self.w) {
                *ev = true;
                if outer(self.join_type, side_of(o)) && !*m {
                    self.out.push(if o.left {
                        (n as u64, *j + 1, 0)
                    } else {
                        (n as u64, 0, *j + 1)
                    });
                }
            }
        }
    }

    /// The end of the input: every row still stored and unmatched is padded (cause 0).
    fn end(mut self) -> Vec<Out> {
        for (j, m, ev) in &self.stored {
            let o = &self.c.recs[*j];
            if !*ev && outer(self.join_type, side_of(o)) && !*m {
                self.out.push(if o.left {
                    (0, *j + 1, 0)
                } else {
                    (0, 0, *j + 1)
                });
            }
        }
        self.out
    }
}

fn env(c: &Case, join_type: &str) -> Vec<(String, String)> {
    [
        ("SIDEJOIN_JOIN_TYPE", join_type.to_owned()),
        ("SIDEJOIN_LEFT_KEY", "k".to_owned()),
        ("SIDEJOIN_RIGHT_KEY", "k".to_owned()),
        ("SIDEJOIN_SELECT", "l.n AS l, r.n AS r".to_owned()),
        ("SIDEJOIN_INTERVAL_LOWER", format!("{}ms", c.lower)),
        ("SIDEJOIN_INTERVAL_UPPER", format!("{}ms", c.upper)),
        ("SIDEJOIN_WATERMARK_DELAY", format!("{}ms", c.delay)),
        ("SIDEJOIN_ALLOWED_LATENESS", format!("{}ms", c.lateness)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect()
}

/// The engine's outputs for a case, as `(cause, left record, right record)`.
pub(crate) fn run_engine<S: JoinState>(
    c: &Case,
    join_type: &str,
    mut state: S,
) -> Result<Vec<Out>, String> {
    let cfg = config::load(env(c, join_type), Mode::Replay).map_err(|e| e.to_string())?;
    let mut engine = Engine::new(&cfg.join);
    let projection = engine.projection().clone();
    let mut partitions: Vec<i32> = c.recs.iter().map(|r| r.partition).chain([0]).collect();
    partitions.sort_unstable();
    partitions.dedup();
    engine.set_partitions(&partitions, 0);
    let mut outs = Vec::new();
    let mut collect =
        |cause: u64, changes: Vec<sidejoin::change::JoinedChange>| -> Result<(), String> {
            for ch in changes {
                if ch.kind != Kind::Insert {
                    return Err(format!("cause {cause}: {} is not an insert", ch.kind));
                }
                let row = projection
                    .project(ch.left.as_ref(), ch.right.as_ref())
                    .to_value();
                let n = |v: Option<&Value>| v.and_then(Value::as_u64).unwrap_or(0) as usize;
                outs.push((cause, n(row.get("l")), n(row.get("r"))));
            }
            Ok(())
        };
    for (i, r) in c.recs.iter().enumerate() {
        let k = if r.key == 3 {
            Value::Null
        } else {
            json!(r.key)
        };
        let row = sidejoin::change::Row::from_value(&json!({"k": k, "n": i + 1})).unwrap();
        let mut changes = Vec::new();
        let input = Input {
            side: side_of(r),
            partition: r.partition,
            timestamp: r.time,
            time: Some(r.time),
            processing_time: 0,
            event: Some(Event::Change(Kind::Insert, row)),
        };
        engine
            .process(&mut state, input, &mut changes)
            .expect("state");
        collect(i as u64 + 1, changes)?;
    }
    let mut changes = Vec::new();
    engine.flush(&mut state, &mut changes).expect("state");
    collect(0, changes)?;
    let rows = engine.stats().state_rows;
    if rows.iter().any(|&r| r != 0) {
        return Err(format!("state not empty after the flush: {rows:?}"));
    }
    Ok(outs)
}

/// Runs `cases` random cases of `join_type`: outputs and causes equal the reference's.
pub(crate) fn check_interval_join<S: JoinState>(
    join_type: &str,
    cases: u32,
    factory: impl Fn() -> S,
) {
    let mut runner = TestRunner::new(RunnerConfig {
        cases,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let result = runner.run(&case(), |c| {
        let mut want = reference(&c, join_type);
        let mut got = run_engine(&c, join_type, factory()).map_err(TestCaseError::fail)?;
        want.sort_unstable();
        got.sort_unstable();
        if want != got {
            return Err(TestCaseError::fail(format!(
                "engine {got:?}\nreference {want:?}"
            )));
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{join_type} interval join property failed: {e}");
    }
}
