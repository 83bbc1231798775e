//! What the run loop does with each input record: the join (the same pipeline as replay), or
//! the passthrough that copies records unchanged — the physical limit sidejoin is measured
//! against, run by the very same consumer, producer and commit code.

use rdkafka::message::OwnedHeaders;

use crate::changelog::Side;
use crate::config::Config;
use crate::engine::JoinState;
use crate::format::{self, DecodeError};
use crate::metrics::Metrics;
use crate::pipeline::{Origin, Pipeline};
use crate::sink::OutChange;
use crate::stats::Stats;

use super::batch::Offsets;

/// One consumed record, borrowed from the consumer.
#[derive(Clone, Copy)]
pub struct InRecord<'a> {
    pub side: Side,
    pub partition: i32,
    /// Kafka record timestamp, epoch ms.
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    pub value: Option<&'a [u8]>,
    pub headers: Option<&'a rdkafka::message::BorrowedHeaders>,
}

/// One record to produce to the output topic.
#[derive(Debug, Clone)]
pub struct OutputRecord {
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Option<OwnedHeaders>,
    /// The timestamp of the input record that caused it (epoch ms).
    pub timestamp: i64,
}

pub trait Processor: Send {
    /// Handles one record at processing time `now` (epoch ms), appending what to produce.
    fn process(
        &mut self,
        rec: &InRecord<'_>,
        now: i64,
        out: &mut Vec<OutputRecord>,
    ) -> Result<(), DecodeError>;
    /// Processing time moved on without a record.
    fn tick(&mut self, now: i64, out: &mut Vec<OutputRecord>);
    /// The input partitions now owned (both sides).
    fn assigned(&mut self, partitions: &[u32], now: i64);
    /// Input partitions given up: their state is released.
    fn revoked(&mut self, partitions: &[u32]);
    /// A record was sent to the dead-letter topic.
    fn count_dlq(&mut self);
    /// Brings the metrics up to date.
    fn publish(&self, metrics: &Metrics);
    /// Input records handled so far.
    fn records_in(&self) -> u64;
    /// Makes the state durable together with the input `offsets` whose outputs are all
    /// acknowledged (a no-op without durable state).
    fn checkpoint(&mut self, offsets: &Offsets) -> Result<(), String>;
    /// Loads a newly assigned partition's state; returns the next offset of each of `topics`
    /// already reflected in it, where recorded.
    fn restore(&mut self, partition: u32, topics: &[&str], now: i64) -> Vec<Option<i64>>;
    /// Deletes a partition's local state, which is stale.
    fn delete(&mut self, partition: u32) -> Result<(), String>;
}

/// The join, over any state store.
pub struct JoinProcessor<S: JoinState> {
    config: Config,
    pipeline: Pipeline<S>,
}

impl<S: JoinState> JoinProcessor<S> {
    pub fn new(config: &Config, state: S) -> Self {
        JoinProcessor {
            config: config.clone(),
            pipeline: Pipeline::new(config, state),
        }
    }

    fn encode(&self, changes: Vec<OutChange>, timestamp: i64, out: &mut Vec<OutputRecord>) {
        for r in self.pipeline.records(changes) {
            out.push(OutputRecord {
                key: r.key,
                value: r
                    .value
                    .map(|v| serde_json::to_vec(&v).expect("JSON values always serialise")),
                headers: None,
                timestamp,
            });
        }
    }
}

impl<S: JoinState + Send> Processor for JoinProcessor<S> {
    fn process(
        &mut self,
        rec: &InRecord<'_>,
        now: i64,
        out: &mut Vec<OutputRecord>,
    ) -> Result<(), DecodeError> {
        let origin = Origin {
            side: rec.side,
            partition: rec.partition.max(0) as u32,
            timestamp: rec.timestamp,
            processing_time: now,
        };
        let spec = self.config.join.side(rec.side);
        let processed = match format::parse_record(spec, rec.key, rec.value) {
            Ok((k, v)) => self.pipeline.process(origin, k, v),
            Err(e) => self.pipeline.process_decoded(origin, Err(e)),
        };
        self.encode(processed.changes, rec.timestamp, out);
        processed.error.map_or(Ok(()), Err)
    }

    fn tick(&mut self, now: i64, out: &mut Vec<OutputRecord>) {
        let changes = self.pipeline.tick(now);
        self.encode(changes, now, out);
    }

    fn assigned(&mut self, partitions: &[u32], now: i64) {
        self.pipeline.set_partitions(partitions, now);
    }

    fn revoked(&mut self, partitions: &[u32]) {
        for p in partitions {
            self.pipeline.release_partition(*p);
        }
    }

    fn count_dlq(&mut self) {
        self.pipeline.stats_mut().dlq_records += 1;
    }

    fn records_in(&self) -> u64 {
        self.pipeline.stats().records_in.iter().sum()
    }

    fn checkpoint(&mut self, offsets: &Offsets) -> Result<(), String> {
        self.pipeline.checkpoint(offsets).map_err(|e| e.to_string())
    }

    fn restore(&mut self, partition: u32, topics: &[&str], now: i64) -> Vec<Option<i64>> {
        self.pipeline.restore_partition(partition, now);
        topics
            .iter()
            .map(|t| self.pipeline.persisted_offset(t, partition))
            .collect()
    }

    fn delete(&mut self, partition: u32) -> Result<(), String> {
        self.pipeline
            .delete_partition(partition)
            .map_err(|e| e.to_string())
    }

    fn publish(&self, metrics: &Metrics) {
        metrics.observe_stats(self.pipeline.stats());
        for side in Side::BOTH {
            if let Some(w) = self.pipeline.engine().watermark(side) {
                metrics.set_watermark(side, w);
            }
        }
    }
}

/// Copies every record unchanged (key, value, headers).
#[derive(Default)]
pub struct PassthroughProcessor {
    stats: Stats,
}

impl Processor for PassthroughProcessor {
    fn process(
        &mut self,
        rec: &InRecord<'_>,
        _now: i64,
        out: &mut Vec<OutputRecord>,
    ) -> Result<(), DecodeError> {
        use rdkafka::message::{Header, Headers};
        self.stats.records_in[rec.side.index()] += 1;
        let headers = rec.headers.map(|h| {
            h.iter().fold(OwnedHeaders::new(), |acc, hd| {
                acc.insert(Header {
                    key: hd.key,
                    value: hd.value,
                })
            })
        });
        out.push(OutputRecord {
            key: rec.key.map(<[u8]>::to_vec),
            value: rec.value.map(<[u8]>::to_vec),
            headers,
            timestamp: rec.timestamp,
        });
        Ok(())
    }

    fn tick(&mut self, _now: i64, _out: &mut Vec<OutputRecord>) {}

    fn assigned(&mut self, _partitions: &[u32], _now: i64) {}

    fn revoked(&mut self, _partitions: &[u32]) {}

    fn count_dlq(&mut self) {
        self.stats.dlq_records += 1;
    }

    fn publish(&self, metrics: &Metrics) {
        metrics.observe_stats(&self.stats);
    }

    fn records_in(&self) -> u64 {
        self.stats.records_in.iter().sum()
    }

    fn checkpoint(&mut self, _offsets: &Offsets) -> Result<(), String> {
        Ok(())
    }

    fn restore(&mut self, _partition: u32, topics: &[&str], _now: i64) -> Vec<Option<i64>> {
        vec![None; topics.len()]
    }

    fn delete(&mut self, _partition: u32) -> Result<(), String> {
        Ok(())
    }
}
