//! In-memory `JoinState`, used by replay, tests and benchmarks.
//!
//! Groups live in a hash map; a group's items in a sorted small vector while the group is small
//! (the common case: one row per key, stored inline without a further allocation) and in a B-tree
//! once it grows, so that big groups (hot keys, time indexes) keep logarithmic inserts. Keys up to
//! 24 bytes are stored inline. Nothing is persisted.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::state::{JoinState, StateValue};
use crate::changelog::Partition;

/// Items a group keeps in a sorted vector before it moves to a B-tree.
const SMALL_GROUP: usize = 32;

/// A group or item key; short keys need no allocation of their own.
type Key = SmallVec<[u8; 24]>;

type Item = (Key, StateValue);

#[derive(Debug)]
enum Group {
    Small(SmallVec<[Item; 1]>),
    Large(BTreeMap<Key, StateValue>),
}

impl Group {
    fn get(&self, item: &[u8]) -> Option<&StateValue> {
        match self {
            Group::Small(v) => v
                .binary_search_by(|(k, _)| (**k).cmp(item))
                .ok()
                .map(|i| &v[i].1),
            Group::Large(m) => m.get(item),
        }
    }

    fn put(&mut self, item: &[u8], value: StateValue) {
        match self {
            Group::Small(v) => match v.binary_search_by(|(k, _)| (**k).cmp(item)) {
                Ok(i) => v[i].1 = value,
                Err(i) if v.len() < SMALL_GROUP => v.insert(i, (Key::from_slice(item), value)),
                Err(_) => {
                    let mut map: BTreeMap<Key, StateValue> =
                        std::mem::take(v).into_iter().collect();
                    map.insert(Key::from_slice(item), value);
                    *self = Group::Large(map);
                }
            },
            Group::Large(m) => {
                if let Some(slot) = m.get_mut(item) {
                    *slot = value;
                } else {
                    m.insert(Key::from_slice(item), value);
                }
            }
        }
    }

    fn delete(&mut self, item: &[u8]) {
        match self {
            Group::Small(v) => {
                if let Ok(i) = v.binary_search_by(|(k, _)| (**k).cmp(item)) {
                    v.remove(i);
                }
            }
            Group::Large(m) => {
                m.remove(item);
            }
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Group::Small(v) => v.is_empty(),
            Group::Large(m) => m.is_empty(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Group::Small(v) => v.len(),
            Group::Large(m) => m.len(),
        }
    }
}

/// A `JoinState` held entirely in memory.
#[derive(Debug, Default)]
pub struct MemoryState {
    groups: FxHashMap<Key, Group>,
}

impl MemoryState {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of items over all groups (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.groups.values().map(Group::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }
}

impl JoinState for MemoryState {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Option<StateValue> {
        self.groups.get(group)?.get(item).cloned()
    }

    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        match self.groups.get_mut(group) {
            Some(g) => g.put(item, value),
            None => {
                let mut items = SmallVec::new();
                items.push((Key::from_slice(item), value));
                self.groups
                    .insert(Key::from_slice(group), Group::Small(items));
            }
        }
    }

    fn delete(&mut self, group: &[u8], item: &[u8]) {
        if let Some(g) = self.groups.get_mut(group) {
            g.delete(item);
            if g.is_empty() {
                self.groups.remove(group);
            }
        }
    }

    fn release_partition(&mut self, partition: Partition) {
        let prefix = partition.to_be_bytes();
        self.groups.retain(|g, _| !g.starts_with(&prefix));
    }

    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) {
        match self.groups.get(group) {
            None => {}
            Some(Group::Small(v)) => {
                let start = v.partition_point(|(k, _)| &**k < from);
                for (k, val) in &v[start..] {
                    if !visit(k, val) {
                        break;
                    }
                }
            }
            Some(Group::Large(m)) => {
                let range = (std::ops::Bound::Included(from), std::ops::Bound::Unbounded);
                for (k, val) in m.range::<[u8], _>(range) {
                    if !visit(k, val) {
                        break;
                    }
                }
            }
        }
    }
}
