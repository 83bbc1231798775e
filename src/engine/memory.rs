//! In-memory `JoinState`, used by replay, tests, benchmarks and `run` without durable state:
//! the engine's groups held in `groups::Groups`. Nothing is persisted.

use super::groups::Groups;
use super::state::{JoinState, StateValue};
use crate::changelog::Partition;

/// A `JoinState` held entirely in memory.
#[derive(Debug, Default)]
pub struct MemoryState {
    groups: Groups<StateValue>,
}

impl MemoryState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of items over all groups (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

impl JoinState for MemoryState {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Option<StateValue> {
        self.groups.get(group, item).cloned()
    }

    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        self.groups.put(group, item, value);
    }

    fn delete(&mut self, group: &[u8], item: &[u8]) {
        self.groups.delete(group, item);
    }

    fn release_partition(&mut self, partition: Partition) {
        self.groups.release_partition(partition);
    }

    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) {
        if let Some(g) = self.groups.group(group) {
            for (k, v) in g.range_from(from) {
                if !visit(k, v) {
                    break;
                }
            }
        }
    }
}
