//! `SIDEJOIN_ALLOW_GENERATED_RETRACTS=false` (SPEC §3.3, MRS `allows.generated-retracts`):
//! drops exactly the changes the engine tagged as generated retractions, and counts them.
//! Nothing is recognised by its shape: an input `-D` of an unmatched outer row looks the same as
//! a generated one and passes.

use crate::change::JoinedChange;
use crate::stats::Stats;

/// Removes the generated retractions from `changes` (those after `from`), counting them.
pub fn drop_generated(changes: &mut Vec<JoinedChange>, from: usize, stats: &mut Stats) {
    let before = changes.len();
    let mut i = 0;
    changes.retain(|c| {
        let keep = i < from || !c.generated;
        i += 1;
        keep
    });
    stats.generated_retracts_filtered += (before - changes.len()) as u64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::change::{Kind, Row, Side};

    #[test]
    fn drops_only_tagged_changes_after_from() {
        let row = Some(Row::empty());
        let mut tagged = JoinedChange::new(Kind::Delete, Side::Left, row.clone(), None);
        tagged.generated = true;
        let plain = JoinedChange::new(Kind::Delete, Side::Left, row, None);
        let mut v = vec![tagged.clone(), plain.clone(), tagged, plain.clone()];
        let mut stats = Stats::default();
        drop_generated(&mut v, 1, &mut stats);
        assert_eq!(v.len(), 3);
        assert!(v[0].generated && !v[1].generated && !v[2].generated);
        assert_eq!(stats.generated_retracts_filtered, 1);
    }
}
