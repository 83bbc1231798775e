//! What a star join emits for one step: the difference between the chains of each affected fact
//! row before and after it (SPEC §14), as changes in the kinds a Flink user expects.
//!
//! - An accumulate (`+I`/`+U`) of a fact row emits its chains with its kind; a retract (`-U`/
//!   `-D`) retracts them with its kind.
//! - An accumulate on a dimension adds chains with its kind and retracts (`-D`) the chains it
//!   replaces. Those are null-padded from that dimension on and just got their first match:
//!   they are the chain's **generated retractions** (SPEC §3.3), which
//!   `SIDEJOIN_ALLOW_GENERATED_RETRACTS=false` drops.
//! - A retract on a dimension retracts chains with its kind and emits (`+I`) the null-padded
//!   chains that take their place.
//! - An update of one row whose join key stays (SPEC §3.2) emits `-U`/`+U` pairs of the chains
//!   that changed; what is left over on either side is `-D` or `+I`.
//!
//! Chains equal before and after (by value, copies counted) are not emitted.

use crate::change::{JoinedChange, Kind};

use super::super::canonical::rows_equal;
use super::chain::Chain;

/// The output of one step, appended in order.
pub(super) struct Emit<'a> {
    out: &'a mut Vec<JoinedChange>,
}

fn chains_equal(a: &Chain, b: &Chain) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (None, None) => true,
            (Some(x), Some(y)) => rows_equal(x, y),
            _ => false,
        })
}

/// The chains only in `old` and those only in `new` (a multiset difference, by value).
fn cancel(old: Vec<Chain>, mut new: Vec<Chain>) -> (Vec<Chain>, Vec<Chain>) {
    let mut gone = Vec::new();
    for o in old {
        match new.iter().position(|n| chains_equal(&o, n)) {
            Some(i) => {
                new.swap_remove(i);
            }
            None => gone.push(o),
        }
    }
    (gone, new)
}

impl<'a> Emit<'a> {
    pub(super) fn new(out: &'a mut Vec<JoinedChange>) -> Self {
        Emit { out }
    }

    fn push(&mut self, kind: Kind, chain: &Chain, generated: bool) {
        let row = |i: usize| chain.get(i).cloned().flatten();
        self.out.push(JoinedChange {
            kind,
            left: row(0),
            right: row(1),
            generated,
            more: chain.iter().skip(2).cloned().collect(),
        });
    }

    /// Every chain in `chains` with `kind`, `copies` times (a fact row's own change).
    pub(super) fn all(&mut self, kind: Kind, chains: &[Chain], copies: u32) {
        for _ in 0..copies {
            for c in chains {
                self.push(kind, c, false);
            }
        }
    }

    /// The change of one fact row (`copies` copies) whose chains were `old` and are `new` after
    /// a dimension's accumulate or retract of kind `kind`.
    pub(super) fn difference(&mut self, old: Vec<Chain>, new: Vec<Chain>, kind: Kind, copies: u32) {
        let (gone, came) = cancel(old, new);
        let (gone_kind, came_kind, generated) = if kind.is_accumulate() {
            (Kind::Delete, kind, true)
        } else {
            (kind, Kind::Insert, false)
        };
        for _ in 0..copies {
            for g in &gone {
                self.push(gone_kind, g, generated);
            }
            for c in &came {
                self.push(came_kind, c, false);
            }
        }
    }

    /// The change of one fact row (`copies` copies) whose chains were `old` and are `new` after
    /// an update in place: `-U`/`+U` pairs, then what is left over as `-D` or `+I`.
    pub(super) fn pairs(&mut self, old: Vec<Chain>, new: Vec<Chain>, copies: u32) {
        let (gone, came) = cancel(old, new);
        for _ in 0..copies {
            for (g, c) in gone.iter().zip(&came) {
                self.push(Kind::UpdateBefore, g, false);
                self.push(Kind::UpdateAfter, c, false);
            }
            for g in gone.iter().skip(came.len()) {
                self.push(Kind::Delete, g, false);
            }
            for c in came.iter().skip(gone.len()) {
                self.push(Kind::Insert, c, false);
            }
        }
    }
}
