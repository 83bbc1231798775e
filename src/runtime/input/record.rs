//! One consumed record, owned (copied out of librdkafka's message), with where it came from.

use rdkafka::message::{BorrowedMessage, Headers, Message};

use crate::change::{Partition, Side};

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub side: Side,
    /// The task it feeds: its partition, except on a broadcast side, whose every partition
    /// feeds every task.
    pub task: Partition,
    /// The partition of its topic it was read from.
    pub source: Partition,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(String, Option<Vec<u8>>)>,
}

impl Record {
    /// A copy of `msg`, read for `side`; it feeds the task of its own partition. `now` stands in
    /// for a missing timestamp.
    pub(crate) fn copy(msg: &BorrowedMessage<'_>, side: Side, now: i64) -> Self {
        let headers = msg
            .headers()
            .map(|h| {
                h.iter()
                    .map(|hd| (hd.key.to_owned(), hd.value.map(<[u8]>::to_vec)))
                    .collect()
            })
            .unwrap_or_default();
        Record {
            side,
            task: msg.partition(),
            source: msg.partition(),
            offset: msg.offset(),
            timestamp: msg.timestamp().to_millis().unwrap_or(now),
            key: msg.key().map(<[u8]>::to_vec),
            value: msg.payload().map(<[u8]>::to_vec),
            headers,
        }
    }
}
