//! The changelog topics as the protocol writes them: one record per net change of a stored key
//! (its value, or a tombstone), to the side's topic and the key's task partition; the
//! positions a committed transaction reached, recorded beside the state.

use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, BaseRecord};
use sidejoin_store::Checkpointed;

use crate::change::{Partition, Side};
use crate::engine::layout;
use crate::kafka::deliveries::{changelog_opaque, Deliveries};

use super::super::RunError;
use super::positions::position_name;
use super::Protocol;

/// A changelog record of `key` (a stored state key) is sent to its side's topic, to the
/// partition the key belongs to.
pub(super) fn send(
    producer: &BaseProducer<Deliveries>,
    topics: &[String],
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(), KafkaError> {
    let side = layout::mirror_side(key);
    let partition = layout::partition_of(key).unwrap_or(0);
    let mut record: BaseRecord<'_, [u8], [u8], usize> =
        BaseRecord::with_opaque_to(&topics[side.index()], changelog_opaque(side))
            .key(key)
            .partition(partition);
    if let Some(v) = value {
        record = record.payload(v);
    }
    super::super::output::send_when_room(producer, record, "changelog")
}

impl<S: Checkpointed> Protocol<S> {
    /// Mirrors a task's local entries into its (empty) changelog topics in one committed
    /// transaction (a state directory older than its changelog), and records the positions.
    pub(super) fn mirror_local(&mut self, task: Partition) -> Result<u64, RunError> {
        let Some(topics) = self.changelog.clone() else {
            return Ok(0);
        };
        self.begin()?;
        let mut n = 0u64;
        let mut failed = None;
        let producer = self.txn().producer().clone();
        self.state.entries(task, &mut |k, v| {
            if failed.is_none() {
                n += 1;
                failed = send(&producer, &topics, k, Some(v)).err();
            }
        })?;
        if let Some(e) = failed {
            return Err(self.abort(format!("a changelog record could not be sent: {e}")));
        }
        self.commit_transaction()?;
        self.record_positions()?;
        self.begin()?;
        Ok(n)
    }

    /// Records, beside the local state, the changelog positions the committed transaction
    /// reached (after its checkpoint is persisted: a position never runs ahead of the state).
    pub(super) fn record_positions(&mut self) -> Result<(), RunError> {
        let positions = self.txn().deliveries().take_changelog_positions();
        for ((side, partition), next) in positions {
            let Some(side) = Side::at(side) else {
                continue;
            };
            self.state.set_local(partition, position_name(side), next)?;
        }
        Ok(())
    }
}
