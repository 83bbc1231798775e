//! Input positions kept in the state itself, so that state and position are one unit of a
//! checkpoint (the invariant of `durable`). A task's state records, under its meta group, the
//! next offset of each of its input streams (`streams::Inputs::item`: the topic name, or
//! `topic#partition` for a broadcast partition) as 8 big-endian bytes; beside it, local-only,
//! the changelog positions the local copy reflects (`position_name`). Only `durable` reads or
//! writes these.

use std::collections::BTreeMap;

use sidejoin_store::Checkpointed;

use crate::change::{Partition, Side};
use crate::engine::layout;
use crate::engine::state::{StateError, StateValue};

/// `(item, task)` → the next offset to consume there.
pub(crate) type Offsets = BTreeMap<(String, Partition), i64>;

/// The local-only name under which a task's state records the changelog position of `side`
/// it reflects.
pub(super) fn position_name(side: Side) -> &'static [u8] {
    const NAMES: [&[u8]; sidejoin_core::config::MAX_SOURCES] = [
        b"changelog/left",
        b"changelog/right",
        b"changelog/dim2",
        b"changelog/dim3",
        b"changelog/dim4",
        b"changelog/dim5",
        b"changelog/dim6",
        b"changelog/dim7",
    ];
    NAMES[side.index()]
}

/// Writes `offsets` into the state (into the open checkpoint).
pub(super) fn write<S: Checkpointed + ?Sized>(state: &mut S, offsets: &Offsets) {
    let mut group = Vec::new();
    for ((item, task), offset) in offsets {
        layout::meta_group(&mut group, *task);
        state.put(
            &group,
            &layout::offset_item(item),
            StateValue::Bytes(offset.to_be_bytes().to_vec()),
        );
    }
}

/// The next offset of `item` that `task`'s state reflects, if it records one.
pub(super) fn read<S: Checkpointed + ?Sized>(
    state: &mut S,
    item: &str,
    task: Partition,
) -> Result<Option<i64>, StateError> {
    let mut group = Vec::new();
    layout::meta_group(&mut group, task);
    Ok(state
        .get(&group, &layout::offset_item(item))?
        .and_then(|v| v.as_i64()))
}

/// Whether `task`'s state records the position of any of `items`.
pub(super) fn any<S: Checkpointed + ?Sized>(
    state: &mut S,
    task: Partition,
    items: &[String],
) -> Result<Option<String>, StateError> {
    for item in items {
        if read(state, item, task)?.is_some() {
            return Ok(Some(item.clone()));
        }
    }
    Ok(None)
}
