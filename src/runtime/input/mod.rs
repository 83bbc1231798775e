//! Reading partitions in timestamp order, one mechanism for every reader: `Lanes` (a consumer's
//! partition queues) feeds a `Merge` (the deterministic timestamp merge of each task's
//! streams) with `Record`s.

mod lanes;
mod merge;
mod record;

pub(super) use lanes::{LaneSpec, Lanes, Served};
pub(super) use merge::Merge;
pub(super) use record::Record;
