//! Deterministic merge of a task's input streams by record timestamp, in the manner of Kafka
//! Streams' `PartitionGroup` with `max.task.idle.ms`. One merge serves every reader of
//! partitions in timestamp order: the group's tasks (stream 0 the left side's partition,
//! stream 1 the right's), a broadcast topic's partitions, a router's source partitions.
//!
//! Records are buffered per `(task, stream)` as they are consumed, and `pop` releases them in an
//! order that depends on the records, not on how librdkafka's polls happened to interleave the
//! streams — as long as every stream has data buffered — so a replay after a crash processes
//! them in the same order.
//!
//! The rule, per task (`next_head`): the stream whose head has the smallest timestamp goes
//! (on a tie, the lowest stream: the left side) once every other stream has a head too, is
//! *caught up* (its end of partition was reported and nothing was pushed since), or has been
//! silent for `max_idle_ms` — counted from the later of when the head was fetched and when that
//! other stream last became empty (or was first seen). So a silent or lagging stream delays the
//! others by at most `max_idle_ms`, and never blocks them.
//!
//! Across tasks (independent of each other) it goes round-robin over the tasks with buffered
//! records. Within a stream records always come out in push order.
//!
//! What it does not do: talk to Kafka, read a clock (time is the `now_ms` passed in), pause or
//! resume fetching (the caller watches `buffered`), or reorder within a stream. Releases forced
//! by `max_idle_ms` are where determinism ends: a record another stream delivers later with a
//! smaller timestamp is then simply released later.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;

use super::record::Record;
use crate::change::Partition;

/// A stream's head as the rule sees it.
pub(super) struct Head {
    /// The timestamp of its first waiting record, and when that record was fetched.
    pub head: Option<(i64, i64)>,
    /// Its end was reported and no record came since.
    pub at_end: bool,
    /// When it last had no record waiting.
    pub empty_since: i64,
}

/// The stream whose head goes next under the rule of the module doc, if any may go now.
pub(super) fn next_head(
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
    rec: Record,
    pushed_at: i64,
}

/// One `(task, stream)`.
struct Queue {
    /// In push order, which is offset order.
    entries: VecDeque<Entry>,
    /// End of partition was reported and nothing was pushed since.
    caught_up: bool,
    /// When `entries` last became empty (or the task was first seen); read only while empty.
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

    fn head(&self) -> Head {
        Head {
            head: self.entries.front().map(|e| (e.rec.timestamp, e.pushed_at)),
            at_end: self.caught_up,
            empty_since: self.empty_since,
        }
    }
}

/// One task: its streams, by number.
struct Lane {
    streams: Vec<Queue>,
}

impl Lane {
    fn new(streams: usize, now_ms: i64) -> Self {
        Lane {
            streams: (0..streams).map(|_| Queue::new(now_ms)).collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.streams.iter().all(|q| q.entries.is_empty())
    }
}

/// The buffered records of some tasks, each with the same number of streams; see the module
/// doc for the rule.
pub(crate) struct Merge {
    max_idle_ms: i64,
    streams: usize,
    lanes: FxHashMap<Partition, Lane>,
    /// Invariant: exactly the tasks whose lane has buffered records, each once.
    ring: VecDeque<Partition>,
    /// Records buffered over all lanes.
    len: usize,
}

impl Merge {
    /// A merge of tasks of `streams` streams each.
    pub(crate) fn new(streams: usize, max_idle_ms: i64) -> Self {
        Merge {
            max_idle_ms,
            streams,
            lanes: FxHashMap::default(),
            ring: VecDeque::new(),
            len: 0,
        }
    }

    fn lane(&mut self, task: Partition, now_ms: i64) -> &mut Lane {
        let streams = self.streams;
        self.lanes
            .entry(task)
            .or_insert_with(|| Lane::new(streams, now_ms))
    }

    /// A record of `task`'s `stream` arrived (records of one stream arrive in offset order).
    pub(crate) fn push(&mut self, task: Partition, stream: usize, rec: Record, now_ms: i64) {
        let lane = self.lane(task, now_ms);
        let was_empty = lane.is_empty();
        let queue = &mut lane.streams[stream];
        // `Lanes`' invariant; broken, committed positions would be wrong (exactly once lost).
        if let Some(e) = (queue.entries.back()).filter(|e| e.rec.source == rec.source) {
            if e.rec.offset >= rec.offset {
                tracing::error!(
                    "records out of order: offset {} of partition {} came after offset {} (a bug: please report it)",
                    rec.offset,
                    rec.source,
                    e.rec.offset
                );
                debug_assert!(
                    false,
                    "records of one (task, stream, source) in offset order"
                );
            }
        }
        queue.caught_up = false;
        queue.entries.push_back(Entry {
            rec,
            pushed_at: now_ms,
        });
        self.len += 1;
        if was_empty {
            self.ring.push_back(task);
        }
    }

    /// The end of `task`'s `stream` was reported: nothing more is available there right now.
    pub(crate) fn caught_up(&mut self, task: Partition, stream: usize, now_ms: i64) {
        self.lane(task, now_ms).streams[stream].caught_up = true;
    }

    /// The next record to process and its task and stream, if the rule allows one now.
    pub(crate) fn pop(&mut self, now_ms: i64) -> Option<(Partition, usize, Record)> {
        // Each task with records is looked at at most once; one that releases a record goes to
        // the back, so tasks take turns.
        for _ in 0..self.ring.len() {
            let task = self.ring.pop_front()?;
            let lane = self
                .lanes
                .get_mut(&task)
                .expect("the ring holds only tasks with a lane");
            let heads = lane.streams.iter().map(Queue::head);
            let Some(stream) = next_head(heads, now_ms, self.max_idle_ms) else {
                self.ring.push_back(task);
                continue;
            };
            let queue = &mut lane.streams[stream];
            let entry = queue.entries.pop_front().expect("next_head has a head");
            if queue.entries.is_empty() {
                queue.empty_since = now_ms;
            }
            if !lane.is_empty() {
                self.ring.push_back(task);
            }
            self.len -= 1;
            return Some((task, stream, entry.rec));
        }
        None
    }

    /// Forgets everything buffered and known.
    pub(crate) fn clear(&mut self) {
        self.lanes.clear();
        self.ring.clear();
        self.len = 0;
    }

    /// Records buffered of `task`'s `stream` (the caller polls a partition below a limit).
    pub(crate) fn buffered(&self, task: Partition, stream: usize) -> usize {
        self.lanes
            .get(&task)
            .map_or(0, |lane| lane.streams[stream].entries.len())
    }

    /// Whether every stream of `task` is caught up and nothing of it is buffered.
    pub(crate) fn drained(&self, task: Partition) -> bool {
        self.lanes.get(&task).is_some_and(|lane| {
            lane.streams
                .iter()
                .all(|q| q.caught_up && q.entries.is_empty())
        })
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
