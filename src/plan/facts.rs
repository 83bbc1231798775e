//! What the cluster holds, as far as planning needs it: the topics that exist with their
//! partition counts, and how many brokers there are (the replication of created topics).
//! Read from metadata by `kafka::topics`; plain data here, so planning is tested without Kafka.

use std::collections::BTreeMap;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// Topic → partition count, for topics that exist and have partitions.
    pub partitions: BTreeMap<String, i32>,
    pub brokers: usize,
}

impl Facts {
    /// The partition count of `topic`, if it exists.
    pub(crate) fn partitions(&self, topic: &str) -> Option<i32> {
        self.partitions.get(topic).copied()
    }

    /// A cluster of `brokers` brokers holding `topics` (tests).
    #[cfg(test)]
    pub(crate) fn of(brokers: usize, topics: &[(&str, i32)]) -> Self {
        Facts {
            partitions: topics.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect(),
            brokers,
        }
    }
}
