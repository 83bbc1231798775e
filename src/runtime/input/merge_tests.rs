use super::*;
use crate::change::Side;
use proptest::prelude::*;

fn push_rec(m: &mut Merge, r: Record, now: i64) {
    m.push(r.task, r.side.index(), r, now)
}

fn pop_rec(m: &mut Merge, now: i64) -> Option<Record> {
    m.pop(now).map(|(_, _, r)| r)
}

fn caught(m: &mut Merge, side: Side, p: Partition, now: i64) {
    m.caught_up(p, side.index(), now)
}

const NEVER: i64 = i64::MAX;

fn rec(side: Side, partition: Partition, offset: i64, timestamp: i64) -> Record {
    Record {
        side,
        task: partition,
        source: partition,
        offset,
        timestamp,
        key: None,
        value: Some(offset.to_le_bytes().to_vec()),
        headers: Vec::new(),
    }
}

fn id(r: &Record) -> (Side, Partition, i64) {
    (r.side, r.task, r.offset)
}

fn drain(m: &mut Merge, now_ms: i64) -> Vec<(Side, Partition, i64)> {
    std::iter::from_fn(|| pop_rec(m, now_ms))
        .map(|r| id(&r))
        .collect()
}

/// Records of partition 0, offsets from `base`, one per timestamp.
fn side_records(side: Side, base: i64, timestamps: &[i64]) -> Vec<Record> {
    (base..)
        .zip(timestamps)
        .map(|(o, &t)| rec(side, 0, o, t))
        .collect()
}

/// The reference: repeatedly take the head with the smaller timestamp, left on a tie.
fn reference(left: &[Record], right: &[Record]) -> Vec<(Side, Partition, i64)> {
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
    left: &[Record],
    right: &[Record],
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
            push_rec(m, r.clone(), 0);
        }
        if eof_early && src.is_empty() {
            caught(m, side, 0, 0);
        }
        out.extend(drain(m, 0));
    }
    for side in Side::BOTH {
        caught(m, side, 0, 0);
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
        let mut m = Merge::new(2, NEVER);
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
        let mut m = Merge::new(2, NEVER);
        prop_assert_eq!(feed(&mut m, left_rest, right_rest, &plan, false), &expected[k..]);
    }

    /// Whatever the schedule (pushes, end-of-partition reports, pops, time passing, several
    /// partitions), each (partition, side) comes out in offset order and nothing is lost.
    #[test]
    fn side_order_is_kept_and_nothing_is_lost(
        ops in prop::collection::vec((0u8..4, any::<bool>(), 0i32..3, 0i64..12, 0i64..5), 0..150),
        max_idle in 0i64..10,
    ) {
        let mut m = Merge::new(2, max_idle);
        let (mut now, mut next_offset, mut pushed) = (0, [[0i64; 2]; 3], 0usize);
        let mut out = Vec::new();
        for (op, right_side, p, ts, dt) in ops {
            let side = if right_side { Side::Right } else { Side::Left };
            now += dt;
            match op {
                0 | 1 => {
                    let o = &mut next_offset[p as usize][side.index()];
                    push_rec(&mut m, rec(side, p, *o, ts), now);
                    *o += 1;
                    pushed += 1;
                }
                2 => caught(&mut m, side, p, now),
                _ => out.extend(pop_rec(&mut m, now).map(|r| id(&r))),
            }
            prop_assert_eq!(m.len, pushed - out.len());
        }
        for p in 0..3 {
            for side in Side::BOTH {
                caught(&mut m, side, p, now);
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
    let mut m = Merge::new(2, NEVER);
    push_rec(&mut m, rec(Side::Left, 0, 0, 5), 0);
    push_rec(&mut m, rec(Side::Right, 0, 0, 3), 0);
    push_rec(&mut m, rec(Side::Right, 0, 1, 5), 0);
    push_rec(&mut m, rec(Side::Left, 0, 1, 9), 0);
    push_rec(&mut m, rec(Side::Right, 0, 2, 10), 0);
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
    let mut m = Merge::new(2, 100);
    push_rec(&mut m, rec(Side::Left, 0, 0, 1), 1_000);
    push_rec(&mut m, rec(Side::Left, 0, 1, 2), 1_050);
    assert_eq!(pop_rec(&mut m, 1_099), None);
    assert_eq!(pop_rec(&mut m, 1_100).map(|r| r.offset), Some(0));
    // The second was pushed later, so it waits its own max_idle_ms.
    assert_eq!(pop_rec(&mut m, 1_149), None);
    assert_eq!(pop_rec(&mut m, 1_150).map(|r| r.offset), Some(1));
    assert_eq!(m.len, 0);
}

#[test]
fn idle_is_counted_from_when_the_other_side_became_empty() {
    let mut m = Merge::new(2, 100);
    push_rec(&mut m, rec(Side::Left, 0, 0, 50), 0);
    push_rec(&mut m, rec(Side::Right, 0, 0, 10), 0);
    assert_eq!(
        pop_rec(&mut m, 500).map(|r| id(&r)),
        Some((Side::Right, 0, 0))
    );
    // The left head was pushed long ago, but the right side has been empty only since 500.
    assert_eq!(pop_rec(&mut m, 599), None);
    assert_eq!(
        pop_rec(&mut m, 600).map(|r| id(&r)),
        Some((Side::Left, 0, 0))
    );
}

#[test]
fn caught_up_other_side_releases_at_once_until_it_gets_a_record() {
    let mut m = Merge::new(2, NEVER);
    push_rec(&mut m, rec(Side::Left, 0, 0, 1), 0);
    assert_eq!(pop_rec(&mut m, 0), None);
    caught(&mut m, Side::Right, 0, 0);
    assert_eq!(pop_rec(&mut m, 0).map(|r| r.offset), Some(0));
    // A record pushed on the right clears it being caught up.
    push_rec(&mut m, rec(Side::Right, 0, 0, 5), 0);
    push_rec(&mut m, rec(Side::Right, 0, 1, 6), 0);
    caught(&mut m, Side::Left, 0, 0);
    assert_eq!(drain(&mut m, 0), [(Side::Right, 0, 0), (Side::Right, 0, 1)]);
    push_rec(&mut m, rec(Side::Left, 0, 1, 7), 0);
    assert_eq!(pop_rec(&mut m, 0), None);
}

#[test]
fn caught_up_with_records_left_still_merges_them() {
    let mut m = Merge::new(2, NEVER);
    push_rec(&mut m, rec(Side::Left, 0, 0, 5), 0);
    push_rec(&mut m, rec(Side::Left, 0, 1, 6), 0);
    caught(&mut m, Side::Left, 0, 0);
    push_rec(&mut m, rec(Side::Right, 0, 0, 1), 0);
    // Right's head is older than left's: released by timestamp, not because left is caught up.
    assert_eq!(
        pop_rec(&mut m, 0).map(|r| id(&r)),
        Some((Side::Right, 0, 0))
    );
    assert_eq!(pop_rec(&mut m, 0), None);
}

#[test]
fn partitions_take_turns() {
    let mut m = Merge::new(2, NEVER);
    for p in 0..3 {
        caught(&mut m, Side::Right, p, 0);
        for o in 0..2 {
            push_rec(&mut m, rec(Side::Left, p, o, o), 0);
        }
    }
    let order: Vec<_> = drain(&mut m, 0).into_iter().map(|x| (x.1, x.2)).collect();
    assert_eq!(order, [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1)]);
}

#[test]
fn clear_forgets_records_and_caught_up_sides() {
    let mut m = Merge::new(2, NEVER);
    push_rec(&mut m, rec(Side::Left, 0, 0, 1), 0);
    caught(&mut m, Side::Right, 0, 0);
    m.clear();
    assert_eq!(m.len, 0);
    assert_eq!(pop_rec(&mut m, 0), None);
    // Nothing known any more: the right side is no longer caught up.
    push_rec(&mut m, rec(Side::Left, 0, 5, 1), 0);
    assert_eq!(pop_rec(&mut m, 0), None);
    assert_eq!(m.buffered(0, Side::Left.index()), 1);
}
