//! Watermarks of the interval join (SPEC §4): per side and input partition, the largest row time
//! seen minus `SIDEJOIN_WATERMARK_DELAY`; the join's watermark W is the minimum over every input
//! partition of both sides, −∞ until each has one, skipping partitions idle for longer than
//! `SIDEJOIN_IDLE_TIMEOUT` (processing time, passed in by the caller). W never goes back.

use rustc_hash::FxHashMap;

use crate::change::{Partition, Side};

/// W before any watermark: nothing is final.
pub const MIN: i64 = i64::MIN;
/// W at the end of a replay input: everything is final.
pub const MAX: i64 = i64::MAX;

#[derive(Debug, Clone, Copy)]
struct Mark {
    /// Largest row time seen; `None` before the first row.
    max_time: Option<i64>,
    /// Processing time of the last record (or of registration), for idleness.
    last_seen: i64,
}

#[derive(Debug, Clone)]
pub struct Watermarks {
    delay: i64,
    idle_timeout: i64,
    marks: FxHashMap<(Side, Partition), Mark>,
    w: i64,
}

impl Watermarks {
    pub fn new(delay_ms: i64, idle_timeout_ms: i64) -> Self {
        Watermarks {
            delay: delay_ms,
            idle_timeout: idle_timeout_ms,
            marks: FxHashMap::default(),
            w: MIN,
        }
    }

    /// The join's watermark.
    pub fn current(&self) -> i64 {
        self.w
    }

    /// Declares the input partitions (the same numbers on both sides, SPEC §6), registered as
    /// seen at processing time `now`. Partitions no longer listed are forgotten.
    pub fn set_partitions(&mut self, partitions: &[Partition], now: i64) {
        self.marks.retain(|(_, p), _| partitions.contains(p));
        for &p in partitions {
            for side in Side::BOTH {
                self.marks.entry((side, p)).or_insert(Mark {
                    max_time: None,
                    last_seen: now,
                });
            }
        }
    }

    pub fn partitions(&self) -> Vec<Partition> {
        let mut ps: Vec<Partition> = self.marks.keys().map(|(_, p)| *p).collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    }

    /// Notes a record of `side`/`partition` at processing time `now`, with its row time if it
    /// had one.
    pub fn observe(&mut self, side: Side, partition: Partition, time: Option<i64>, now: i64) {
        let mark = self.marks.entry((side, partition)).or_insert(Mark {
            max_time: None,
            last_seen: now,
        });
        mark.last_seen = mark.last_seen.max(now);
        if let Some(t) = time {
            mark.max_time = Some(mark.max_time.map_or(t, |m| m.max(t)));
        }
    }

    /// Recomputes W at processing time `now`; returns true when it advanced.
    pub fn advance(&mut self, now: i64) -> bool {
        let mut candidate: Option<i64> = None;
        for mark in self.marks.values() {
            let idle =
                self.idle_timeout > 0 && now.saturating_sub(mark.last_seen) >= self.idle_timeout;
            if idle {
                continue;
            }
            let wm = match mark.max_time {
                Some(t) => t.saturating_sub(self.delay),
                None => MIN,
            };
            candidate = Some(candidate.map_or(wm, |c| c.min(wm)));
        }
        // Every partition idle: W stays where it is.
        match candidate {
            Some(c) if c > self.w => {
                self.w = c;
                true
            }
            _ => false,
        }
    }

    /// The largest row time seen per side and partition, where there is one.
    pub fn max_times(&self) -> Vec<((Side, Partition), i64)> {
        self.marks
            .iter()
            .filter_map(|(k, m)| m.max_time.map(|t| (*k, t)))
            .collect()
    }

    /// The end of a finite input: everything becomes final.
    pub fn finish(&mut self) {
        self.w = MAX;
    }

    /// The largest row time seen on each side and partition (for metrics and persistence).
    pub fn side_watermark(&self, side: Side) -> Option<i64> {
        self.marks
            .iter()
            .filter(|((s, _), _)| *s == side)
            .map(|(_, m)| m.max_time.map(|t| t.saturating_sub(self.delay)))
            .try_fold(i64::MAX, |acc, wm| wm.map(|w| acc.min(w)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimum_over_every_partition_of_both_sides() {
        let mut w = Watermarks::new(0, 0);
        w.set_partitions(&[0, 1], 0);
        w.observe(Side::Left, 0, Some(100), 0);
        w.observe(Side::Right, 0, Some(50), 0);
        w.observe(Side::Right, 1, Some(70), 0);
        assert!(!w.advance(0), "left partition 1 has no watermark yet");
        assert_eq!(w.current(), MIN);
        w.observe(Side::Left, 1, Some(60), 0);
        assert!(w.advance(0));
        assert_eq!(w.current(), 50);
        w.observe(Side::Right, 0, Some(10), 0);
        assert!(!w.advance(0), "W never goes back");
        assert_eq!(w.current(), 50);
    }

    #[test]
    fn delay_and_idle_partitions() {
        let mut w = Watermarks::new(10, 1_000);
        w.set_partitions(&[0], 0);
        w.observe(Side::Left, 0, Some(100), 500);
        assert!(!w.advance(500));
        assert!(w.advance(1_000), "the right side has been idle for 1s");
        assert_eq!(w.current(), 90);
        w.observe(Side::Left, 0, Some(200), 1_500);
        assert!(w.advance(1_600));
        assert_eq!(w.current(), 190);
        assert!(!w.advance(2_600), "every partition idle: W stays");
        assert_eq!(w.current(), 190);
    }
}
