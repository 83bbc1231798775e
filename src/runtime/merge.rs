//! Deterministic merge of a partition's two input sides by record timestamp, in the manner of
//! Kafka Streams' `PartitionGroup` with `max.task.idle.ms`.
//!
//! Partition `i` of the left and right topics is one unit of join state. Records are buffered per
//! `(partition, side)` as they are consumed, and `pop` releases them in an order that depends on
//! the records, not on how librdkafka's polls happened to interleave the two topics — as long as
//! both sides have data buffered — so a replay after a crash processes them in the same order.
//!
//! The rule `pop` applies, per partition:
//!
//! - both sides have a buffered head: the head with the smaller timestamp is next; on a tie, the
//!   left one;
//! - only one side has records: its head is released if the other side is *caught up* (the
//!   consumer reported end of partition after that side's last pushed record, and nothing was
//!   pushed there since), or if `now_ms - since >= max_idle_ms`, where `since` is the later of
//!   when the head was pushed and when the other side last became empty (or was first seen). So a
//!   silent or lagging topic delays the other by at most `max_idle_ms`, and never blocks it;
//! - neither side has records: nothing.
//!
//! Across partitions (independent of each other) it goes round-robin over the partitions that
//! have buffered records. Within a `(partition, side)` records always come out in push order.
//!
//! What it does not do: talk to Kafka, read a clock (time is the `now_ms` passed in), pause or
//! resume fetching (the caller watches `buffered`), or reorder within one side. Releases forced by
//! `max_idle_ms` are where determinism ends: a record the other side delivers later with a
//! smaller timestamp is then simply released later.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use crate::change::{Partition, Side};

/// One consumed record, owned (copied out of librdkafka's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buffered {
    pub side: Side,
    /// The task it feeds (its lane in the merge).
    pub partition: Partition,
    /// The partition of its topic it was read from: `partition`, except on a broadcast side
    /// (`streams`), whose every partition feeds every task.
    pub source: Partition,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

/// One partition of an n-ary timestamp merge (a broadcast topic's, a repartitioned topic's).
pub struct Head {
    /// The timestamp of its first waiting record, and when that record was fetched.
    pub head: Option<(i64, i64)>,
    /// Its end was reported and no record came since.
    pub at_end: bool,
    /// When it last had no record waiting.
    pub empty_since: i64,
}

/// The partition whose head goes next: the smallest timestamp (on a tie, the lowest
/// partition), if every other partition has a head too, is at its end, or has been silent for
/// `max_idle_ms` since the head was fetched (the rule of the two-sided merge, n-ary).
pub fn next_head(
    heads: impl Iterator<Item = Head> + Clone,
    now: i64,
    max_idle_ms: i64,
) -> Option<usize> {
    let (b, _, fetched_at) = heads
        .clone()
        .enumerate()
        .filter_map(|(b, h)| h.head.map(|(ts, at)| (b, ts, at)))
        .min_by_key(|(b, ts, _)| (*ts, *b))?;
    let may = heads.enumerate().all(|(i, h)| {
        i == b
            || h.head.is_some()
            || h.at_end
            || now.saturating_sub(fetched_at.max(h.empty_since)) >= max_idle_ms
    });
    may.then_some(b)
}

struct Entry {
    rec: Buffered,
    pushed_at: i64,
}

/// One `(partition, side)`.
struct Queue {
    /// In push order, which is offset order.
    entries: VecDeque<Entry>,
    /// End of partition was reported and nothing was pushed since.
    caught_up: bool,
    /// When `entries` last became empty (or the lane was created); read only while it is empty.
    empty_since: i64,
}

impl Queue {
    fn new(now_ms: i64) -> Self {
        Queue {
            entries: VecDeque::new(),
            caught_up: false,
            empty_since: now_ms,
        }
    }
}

/// One partition: its two sides, indexed by `Side::index`.
struct Lane {
    sides: [Queue; 2],
}

impl Lane {
    fn new(now_ms: i64) -> Self {
        Lane {
            sides: [Queue::new(now_ms), Queue::new(now_ms)],
        }
    }

    fn is_empty(&self) -> bool {
        self.sides.iter().all(|q| q.entries.is_empty())
    }

    /// The side whose head the rule releases now, if any.
    fn next_side(&self, max_idle_ms: i64, now_ms: i64) -> Option<Side> {
        let [left, right] = &self.sides;
        match (left.entries.front(), right.entries.front()) {
            (Some(l), Some(r)) => Some(if l.rec.timestamp <= r.rec.timestamp {
                Side::Left
            } else {
                Side::Right
            }),
            (Some(head), None) => self.alone(Side::Left, head, max_idle_ms, now_ms),
            (None, Some(head)) => self.alone(Side::Right, head, max_idle_ms, now_ms),
            (None, None) => None,
        }
    }

    /// `side` has `head`, the other side is empty.
    fn alone(&self, side: Side, head: &Entry, max_idle_ms: i64, now_ms: i64) -> Option<Side> {
        let other = &self.sides[side.other().index()];
        let since = head.pushed_at.max(other.empty_since);
        (other.caught_up || now_ms.saturating_sub(since) >= max_idle_ms).then_some(side)
    }
}

/// The buffered records of the owned partitions, both sides; see the module doc for the rule.
pub struct Merge {
    max_idle_ms: i64,
    lanes: FxHashMap<Partition, Lane>,
    /// Invariant: exactly the partitions whose lane has buffered records, each once.
    ring: VecDeque<Partition>,
    /// Records buffered over all lanes.
    len: usize,
}

impl Merge {
    pub fn new(max_idle_ms: i64) -> Self {
        Merge {
            max_idle_ms,
            lanes: FxHashMap::default(),
            ring: VecDeque::new(),
            len: 0,
        }
    }

    /// A record arrived (records of one `(partition, side)` arrive in offset order).
    pub fn push(&mut self, rec: Buffered, now_ms: i64) {
        let partition = rec.partition;
        let lane = self
            .lanes
            .entry(partition)
            .or_insert_with(|| Lane::new(now_ms));
        let was_empty = lane.is_empty();
        let queue = &mut lane.sides[rec.side.index()];
        debug_assert!(
            queue
                .entries
                .back()
                .is_none_or(|e| e.rec.source != rec.source || e.rec.offset < rec.offset),
            "records of one (partition, side, source) are pushed in offset order"
        );
        queue.caught_up = false;
        queue.entries.push_back(Entry {
            rec,
            pushed_at: now_ms,
        });
        self.len += 1;
        if was_empty {
            self.ring.push_back(partition);
        }
    }

    /// The consumer reported end of partition for `(side, partition)`: nothing more is available
    /// there right now.
    pub fn caught_up(&mut self, side: Side, partition: Partition, now_ms: i64) {
        let lane = self
            .lanes
            .entry(partition)
            .or_insert_with(|| Lane::new(now_ms));
        lane.sides[side.index()].caught_up = true;
    }

    /// The next record to process, if the rule allows one now.
    pub fn pop(&mut self, now_ms: i64) -> Option<Buffered> {
        // Each partition with records is looked at at most once; one that releases a record goes
        // to the back, so partitions take turns.
        for _ in 0..self.ring.len() {
            let partition = self.ring.pop_front()?;
            let lane = self
                .lanes
                .get_mut(&partition)
                .expect("the ring holds only partitions with a lane");
            let Some(side) = lane.next_side(self.max_idle_ms, now_ms) else {
                self.ring.push_back(partition);
                continue;
            };
            let queue = &mut lane.sides[side.index()];
            let entry = queue.entries.pop_front().expect("next_side has a head");
            if queue.entries.is_empty() {
                queue.empty_since = now_ms;
            }
            if !lane.is_empty() {
                self.ring.push_back(partition);
            }
            self.len -= 1;
            return Some(entry.rec);
        }
        None
    }

    /// Forgets everything buffered and known.
    pub fn clear(&mut self) {
        self.lanes.clear();
        self.ring.clear();
        self.len = 0;
    }

    /// Records buffered of `(side, partition)` (the caller polls a partition below a limit).
    pub fn buffered(&self, side: Side, partition: Partition) -> usize {
        self.lanes
            .get(&partition)
            .map_or(0, |lane| lane.sides[side.index()].entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const NEVER: i64 = i64::MAX;

    fn rec(side: Side, partition: Partition, offset: i64, timestamp: i64) -> Buffered {
        Buffered {
            side,
            partition,
            source: partition,
            offset,
            timestamp,
            key: None,
            value: Some(offset.to_le_bytes().to_vec()),
            headers: Vec::new(),
        }
    }

    fn id(r: &Buffered) -> (Side, Partition, i64) {
        (r.side, r.partition, r.offset)
    }

    fn drain(m: &mut Merge, now_ms: i64) -> Vec<(Side, Partition, i64)> {
        std::iter::from_fn(|| m.pop(now_ms))
            .map(|r| id(&r))
            .collect()
    }

    /// Records of partition 0, offsets from `base`, one per timestamp.
    fn side_records(side: Side, base: i64, timestamps: &[i64]) -> Vec<Buffered> {
        (base..)
            .zip(timestamps)
            .map(|(o, &t)| rec(side, 0, o, t))
            .collect()
    }

    /// The reference: repeatedly take the head with the smaller timestamp, left on a tie.
    fn reference(left: &[Buffered], right: &[Buffered]) -> Vec<(Side, Partition, i64)> {
        let (mut l, mut r) = (left.iter().peekable(), right.iter().peekable());
        let mut out = Vec::new();
        loop {
            let next = match (l.peek(), r.peek()) {
                (Some(a), Some(b)) if a.timestamp <= b.timestamp => l.next(),
                (Some(_), Some(_)) => r.next(),
                (Some(_), None) => l.next(),
                (None, _) => r.next(),
            };
            match next {
                Some(x) => out.push(id(x)),
                None => return out,
            }
        }
    }

    /// Pushes `left` and `right` into `m` in chunks as `plan` says (then the rest), popping
    /// whatever is releasable after every chunk, with `now_ms` fixed at 0 and no idle expiry.
    /// A side is reported caught up once all of it is pushed if `eof_early`, else at the end.
    fn feed(
        m: &mut Merge,
        left: &[Buffered],
        right: &[Buffered],
        plan: &[(bool, usize)],
        eof_early: bool,
    ) -> Vec<(Side, Partition, i64)> {
        let mut rest = [left, right];
        let mut out = Vec::new();
        let chunks = plan
            .iter()
            .copied()
            .chain([(false, usize::MAX), (true, usize::MAX)]);
        for (right_side, n) in chunks {
            let side = if right_side { Side::Right } else { Side::Left };
            let src = &mut rest[side.index()];
            let (now, later) = src.split_at(n.min(src.len()));
            *src = later;
            for r in now {
                m.push(r.clone(), 0);
            }
            if eof_early && src.is_empty() {
                m.caught_up(side, 0, 0);
            }
            out.extend(drain(m, 0));
        }
        for side in Side::BOTH {
            m.caught_up(side, 0, 0);
        }
        out.extend(drain(m, 0));
        assert_eq!(m.len, 0);
        out
    }

    fn plan() -> impl Strategy<Value = Vec<(bool, usize)>> {
        prop::collection::vec((any::<bool>(), 1usize..5), 0..40)
    }

    fn timestamps() -> impl Strategy<Value = Vec<i64>> {
        // A small range, so ties are common.
        prop::collection::vec(0i64..12, 0..30)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1_000))]

        #[test]
        fn any_interleaving_gives_the_reference_order(
            lt in timestamps(), rt in timestamps(), plan in plan(), eof_early in any::<bool>(),
        ) {
            let (left, right) = (side_records(Side::Left, 100, &lt), side_records(Side::Right, 7, &rt));
            let mut m = Merge::new(NEVER);
            prop_assert_eq!(feed(&mut m, &left, &right, &plan, eof_early), reference(&left, &right));
        }

        #[test]
        fn resuming_at_any_point_gives_the_rest_of_the_reference(
            lt in timestamps(), rt in timestamps(), plan in plan(), k in any::<prop::sample::Index>(),
        ) {
            let (left, right) = (side_records(Side::Left, 0, &lt), side_records(Side::Right, 0, &rt));
            let expected = reference(&left, &right);
            let k = k.index(expected.len() + 1);
            let done = |side: Side| expected[..k].iter().filter(|x| x.0 == side).count();
            let (left_rest, right_rest) = (&left[done(Side::Left)..], &right[done(Side::Right)..]);
            let mut m = Merge::new(NEVER);
            prop_assert_eq!(feed(&mut m, left_rest, right_rest, &plan, false), &expected[k..]);
        }

        /// Whatever the schedule (pushes, end-of-partition reports, pops, time passing, several
        /// partitions), each (partition, side) comes out in offset order and nothing is lost.
        #[test]
        fn side_order_is_kept_and_nothing_is_lost(
            ops in prop::collection::vec((0u8..4, any::<bool>(), 0i32..3, 0i64..12, 0i64..5), 0..150),
            max_idle in 0i64..10,
        ) {
            let mut m = Merge::new(max_idle);
            let (mut now, mut next_offset, mut pushed) = (0, [[0i64; 2]; 3], 0usize);
            let mut out = Vec::new();
            for (op, right_side, p, ts, dt) in ops {
                let side = if right_side { Side::Right } else { Side::Left };
                now += dt;
                match op {
                    0 | 1 => {
                        let o = &mut next_offset[p as usize][side.index()];
                        m.push(rec(side, p, *o, ts), now);
                        *o += 1;
                        pushed += 1;
                    }
                    2 => m.caught_up(side, p, now),
                    _ => out.extend(m.pop(now).map(|r| id(&r))),
                }
                prop_assert_eq!(m.len, pushed - out.len());
            }
            for p in 0..3 {
                for side in Side::BOTH {
                    m.caught_up(side, p, now);
                }
            }
            out.extend(drain(&mut m, now));
            prop_assert_eq!(out.len(), pushed);
            for p in 0..3 {
                for side in Side::BOTH {
                    let offsets: Vec<i64> =
                        out.iter().filter(|x| x.0 == side && x.1 == p).map(|x| x.2).collect();
                    prop_assert_eq!(offsets, (0..next_offset[p as usize][side.index()]).collect::<Vec<_>>());
                }
            }
        }
    }

    #[test]
    fn smaller_timestamp_first_and_left_on_a_tie() {
        let mut m = Merge::new(NEVER);
        m.push(rec(Side::Left, 0, 0, 5), 0);
        m.push(rec(Side::Right, 0, 0, 3), 0);
        m.push(rec(Side::Right, 0, 1, 5), 0);
        m.push(rec(Side::Left, 0, 1, 9), 0);
        m.push(rec(Side::Right, 0, 2, 10), 0);
        assert_eq!(
            drain(&mut m, 0),
            [
                (Side::Right, 0, 0),
                (Side::Left, 0, 0),
                (Side::Right, 0, 1),
                (Side::Left, 0, 1)
            ]
        );
        // The right head is alone and the left side is neither caught up nor idle long enough.
        assert_eq!(m.len, 1);
    }

    #[test]
    fn one_side_waits_for_max_idle_from_its_push() {
        let mut m = Merge::new(100);
        m.push(rec(Side::Left, 0, 0, 1), 1_000);
        m.push(rec(Side::Left, 0, 1, 2), 1_050);
        assert_eq!(m.pop(1_099), None);
        assert_eq!(m.pop(1_100).map(|r| r.offset), Some(0));
        // The second was pushed later, so it waits its own max_idle_ms.
        assert_eq!(m.pop(1_149), None);
        assert_eq!(m.pop(1_150).map(|r| r.offset), Some(1));
        assert_eq!(m.len, 0);
    }

    #[test]
    fn idle_is_counted_from_when_the_other_side_became_empty() {
        let mut m = Merge::new(100);
        m.push(rec(Side::Left, 0, 0, 50), 0);
        m.push(rec(Side::Right, 0, 0, 10), 0);
        assert_eq!(m.pop(500).map(|r| id(&r)), Some((Side::Right, 0, 0)));
        // The left head was pushed long ago, but the right side has been empty only since 500.
        assert_eq!(m.pop(599), None);
        assert_eq!(m.pop(600).map(|r| id(&r)), Some((Side::Left, 0, 0)));
    }

    #[test]
    fn caught_up_other_side_releases_at_once_until_it_gets_a_record() {
        let mut m = Merge::new(NEVER);
        m.push(rec(Side::Left, 0, 0, 1), 0);
        assert_eq!(m.pop(0), None);
        m.caught_up(Side::Right, 0, 0);
        assert_eq!(m.pop(0).map(|r| r.offset), Some(0));
        // A record pushed on the right clears it being caught up.
        m.push(rec(Side::Right, 0, 0, 5), 0);
        m.push(rec(Side::Right, 0, 1, 6), 0);
        m.caught_up(Side::Left, 0, 0);
        assert_eq!(drain(&mut m, 0), [(Side::Right, 0, 0), (Side::Right, 0, 1)]);
        m.push(rec(Side::Left, 0, 1, 7), 0);
        assert_eq!(m.pop(0), None);
    }

    #[test]
    fn caught_up_with_records_left_still_merges_them() {
        let mut m = Merge::new(NEVER);
        m.push(rec(Side::Left, 0, 0, 5), 0);
        m.push(rec(Side::Left, 0, 1, 6), 0);
        m.caught_up(Side::Left, 0, 0);
        m.push(rec(Side::Right, 0, 0, 1), 0);
        // Right's head is older than left's: released by timestamp, not because left is caught up.
        assert_eq!(m.pop(0).map(|r| id(&r)), Some((Side::Right, 0, 0)));
        assert_eq!(m.pop(0), None);
    }

    #[test]
    fn partitions_take_turns() {
        let mut m = Merge::new(NEVER);
        for p in 0..3 {
            m.caught_up(Side::Right, p, 0);
            for o in 0..2 {
                m.push(rec(Side::Left, p, o, o), 0);
            }
        }
        let order: Vec<_> = drain(&mut m, 0).into_iter().map(|x| (x.1, x.2)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]);
    }

    #[test]
    fn clear_forgets_records_and_caught_up_sides() {
        let mut m = Merge::new(NEVER);
        m.push(rec(Side::Left, 0, 0, 1), 0);
        m.caught_up(Side::Right, 0, 0);
        m.clear();
        assert_eq!(m.len, 0);
        assert_eq!(m.pop(0), None);
        // Nothing known any more: the right side is no longer caught up.
        m.push(rec(Side::Left, 0, 5, 1), 0);
        assert_eq!(m.pop(0), None);
        assert_eq!(m.buffered(Side::Left, 0), 1);
    }
}
