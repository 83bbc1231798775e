//! What feeds a task (SPEC §6). A task is one unit of join state, named by a partition number:
//! co-partitioned, task `i` is partition `i` of both input topics; with `SIDEJOIN_BROADCAST`,
//! task `i` is partition `i` of the other side's topic, and every partition of the broadcast
//! topic feeds every task (each task holds the whole broadcast side, as a Flink broadcast join
//! keeps it in every subtask's state).
//!
//! A `Stream` is one of a task's inputs: its side, the task, and the partition of the side's
//! topic it is read from. Its next offset is stored in the task's state under `Inputs::item`
//! (the topic name, or `topic#partition` for a broadcast stream), so the state says exactly
//! which input it reflects.
//!
//! What it does not do: consume, commit or store anything.

use crate::change::{Partition, Side};

/// One input of a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(super) struct Stream {
    pub side: Side,
    pub task: Partition,
    /// The partition of `side`'s topic its records come from.
    pub source: Partition,
}

impl Stream {
    /// A co-partitioned stream: the task's own partition of `side`'s topic.
    pub(super) fn own(side: Side, task: Partition) -> Self {
        Stream {
            side,
            task,
            source: task,
        }
    }
}

/// The input topics and how they are spread over tasks.
#[derive(Debug, Clone)]
pub(super) struct Inputs {
    /// Every input's topic, in input order (two, or a star join's fact and dimensions).
    pub topics: Vec<String>,
    /// The broadcast inputs and their topics' partition counts.
    pub broadcast: Vec<(Side, i32)>,
}

impl Inputs {
    /// The inputs the plan's tasks read.
    pub(super) fn of(plan: &crate::plan::Plan) -> Self {
        Inputs {
            topics: plan.sources.iter().map(|s| s.topic.clone()).collect(),
            broadcast: plan.broadcasts().map(|b| (b.side, b.partitions)).collect(),
        }
    }

    /// Every input's position, in order.
    pub(super) fn sides(&self) -> impl Iterator<Item = Side> {
        Side::first(self.topics.len())
    }

    pub(super) fn topic(&self, side: Side) -> &str {
        &self.topics[side.index()]
    }

    /// Whether `side` is consumed through the consumer group (not broadcast).
    pub(super) fn grouped(&self, side: Side) -> bool {
        !self.broadcast.iter().any(|(b, _)| *b == side)
    }

    /// The sides consumed through the group.
    pub(super) fn group_sides(&self) -> Vec<Side> {
        self.sides().filter(|s| self.grouped(*s)).collect()
    }

    /// The side whose topic is `topic`.
    pub(super) fn side_of(&self, topic: &str) -> Option<Side> {
        self.sides().find(|s| self.topic(*s) == topic)
    }

    /// Every input of `task`, left side first.
    pub(super) fn streams(&self, task: Partition) -> Vec<Stream> {
        let mut all = Vec::new();
        for side in self.sides() {
            match self.broadcast.iter().find(|(b, _)| *b == side) {
                Some((_, n)) => all.extend((0..*n).map(|source| Stream { side, task, source })),
                None => all.push(Stream::own(side, task)),
            }
        }
        all
    }

    /// Names of offsets only another topology stores (`SIDEJOIN_BROADCAST` set or not, or on
    /// the other side): state holding one was written by a join whose tasks read other input.
    pub(super) fn foreign_items(&self) -> Vec<String> {
        self.sides()
            .map(|side| {
                let topic = self.topic(side);
                if self.grouped(side) {
                    format!("{topic}#0")
                } else {
                    topic.to_owned()
                }
            })
            .collect()
    }

    /// The name under which the task's state stores the stream's next offset.
    pub(super) fn item(&self, s: &Stream) -> String {
        let topic = self.topic(s.side);
        if self.grouped(s.side) {
            topic.to_owned()
        } else {
            format!("{topic}#{}", s.source)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(broadcast: Option<(Side, i32)>) -> Inputs {
        Inputs {
            topics: vec!["orders".into(), "users".into()],
            broadcast: broadcast.into_iter().collect(),
        }
    }

    #[test]
    fn a_co_partitioned_task_reads_its_own_partition_of_both_topics() {
        let i = inputs(None);
        assert_eq!(
            i.streams(3),
            vec![Stream::own(Side::Left, 3), Stream::own(Side::Right, 3)]
        );
        assert_eq!(i.item(&Stream::own(Side::Right, 3)), "users");
        assert_eq!(i.group_sides(), vec![Side::Left, Side::Right]);
    }

    #[test]
    fn a_broadcast_side_feeds_every_task_from_all_its_partitions() {
        let i = inputs(Some((Side::Right, 2)));
        let s = i.streams(5);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0], Stream::own(Side::Left, 5));
        assert_eq!(
            s[2],
            Stream {
                side: Side::Right,
                task: 5,
                source: 1
            }
        );
        assert_eq!(i.item(&s[0]), "orders");
        assert_eq!(i.item(&s[1]), "users#0");
        assert_eq!(i.item(&s[2]), "users#1");
        assert_eq!(i.group_sides(), vec![Side::Left]);
        assert_eq!(i.side_of("users"), Some(Side::Right));
        assert_eq!(i.foreign_items(), vec!["orders#0", "users"]);
        assert_eq!(inputs(None).foreign_items(), vec!["orders#0", "users#0"]);
    }
}
