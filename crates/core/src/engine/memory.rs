//! In-memory `JoinState`, used by replay, tests, benchmarks and `run` without durable state.
//! Nothing is persisted.
//!
//! Most groups hold one item (a primary-key row under its join key), so those live in one
//! allocation each — the value, then the group and item keys — behind a hash table of thin
//! pointers: about 64 bytes plus the row per stored row. Groups with more items (multiset
//! sides, hot keys, time and TTL indexes) live in `groups::Groups`, sorted. A group is in
//! exactly one of the two.

use std::alloc::{alloc, dealloc, handle_alloc_error, Layout};
use std::hash::BuildHasher;
use std::ptr::NonNull;

use hashbrown::HashTable;

use super::groups::Groups;
use super::keyhash::KeyHasher;
use super::state::{JoinState, StateError, StateValue};
use crate::change::Partition;

/// Where the keys start in a single's allocation.
const KEYS: usize = std::mem::size_of::<StateValue>() + 4;

/// A group with one item, in one allocation: `[value][group len u16][item len u16][group][item]`.
struct Single(NonNull<u8>);

// SAFETY: a `Single` owns its allocation alone, and `StateValue` is `Send` and `Sync`.
unsafe impl Send for Single {}
unsafe impl Sync for Single {}

impl Single {
    fn layout(keys: usize) -> Layout {
        Layout::from_size_align(KEYS + keys, std::mem::align_of::<StateValue>())
            .expect("a small layout")
    }

    /// `None` when a key is too long to be described by a `u16`.
    fn new(group: &[u8], item: &[u8], value: StateValue) -> Result<Single, StateValue> {
        let (Ok(glen), Ok(ilen)) = (u16::try_from(group.len()), u16::try_from(item.len())) else {
            return Err(value);
        };
        let layout = Self::layout(group.len() + item.len());
        // SAFETY: the layout has a non-zero size; every field is written before use, at
        // offsets aligned for its type (the value at 0, the lengths at 32 and 34).
        unsafe {
            let p = alloc(layout);
            let Some(p) = NonNull::new(p) else {
                handle_alloc_error(layout)
            };
            p.as_ptr().cast::<StateValue>().write(value);
            p.as_ptr().add(KEYS - 4).cast::<u16>().write(glen);
            p.as_ptr().add(KEYS - 2).cast::<u16>().write(ilen);
            std::ptr::copy_nonoverlapping(group.as_ptr(), p.as_ptr().add(KEYS), group.len());
            std::ptr::copy_nonoverlapping(
                item.as_ptr(),
                p.as_ptr().add(KEYS + group.len()),
                item.len(),
            );
            Ok(Single(p))
        }
    }

    fn lens(&self) -> (usize, usize) {
        // SAFETY: written by `new`.
        unsafe {
            (
                self.0.as_ptr().add(KEYS - 4).cast::<u16>().read() as usize,
                self.0.as_ptr().add(KEYS - 2).cast::<u16>().read() as usize,
            )
        }
    }

    fn group(&self) -> &[u8] {
        let (g, _) = self.lens();
        // SAFETY: `g` bytes were copied there by `new` and live as long as `self`.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(KEYS), g) }
    }

    fn item(&self) -> &[u8] {
        let (g, i) = self.lens();
        // SAFETY: as `group`.
        unsafe { std::slice::from_raw_parts(self.0.as_ptr().add(KEYS + g), i) }
    }

    fn value(&self) -> &StateValue {
        // SAFETY: written by `new`, aligned, and owned by `self`.
        unsafe { &*self.0.as_ptr().cast::<StateValue>() }
    }

    fn value_mut(&mut self) -> &mut StateValue {
        // SAFETY: as `value`; `&mut self` is the only access.
        unsafe { &mut *self.0.as_ptr().cast::<StateValue>() }
    }

    /// Takes the value out, freeing the allocation.
    fn into_value(self) -> StateValue {
        let (g, i) = self.lens();
        let p = self.0;
        std::mem::forget(self);
        // SAFETY: the value is read once and the allocation freed with its own layout.
        unsafe {
            let v = p.as_ptr().cast::<StateValue>().read();
            dealloc(p.as_ptr(), Self::layout(g + i));
            v
        }
    }
}

impl Drop for Single {
    fn drop(&mut self) {
        let (g, i) = self.lens();
        // SAFETY: the value was written by `new` and is dropped once; the allocation is freed
        // with the layout it was made with.
        unsafe {
            std::ptr::drop_in_place(self.0.as_ptr().cast::<StateValue>());
            dealloc(self.0.as_ptr(), Self::layout(g + i));
        }
    }
}

impl std::fmt::Debug for Single {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Single")
            .field("group", &self.group())
            .field("item", &self.item())
            .field("value", self.value())
            .finish()
    }
}

/// A `JoinState` held entirely in memory.
#[derive(Debug, Default)]
pub struct MemoryState {
    singles: HashTable<Single>,
    groups: Groups<StateValue>,
}

impl MemoryState {
    /// Group keys hashed with `KeyHasher`'s fixed default key (replay, tests).
    pub fn new() -> Self {
        Self::default()
    }

    /// Group keys hashed with `hasher` (the runtime's, keyed at random: `keyhash`).
    pub fn with_hasher(hasher: KeyHasher) -> Self {
        MemoryState {
            singles: HashTable::new(),
            groups: Groups::with_hasher(hasher),
        }
    }

    fn hash(&self, group: &[u8]) -> u64 {
        self.groups.hasher().hash_one(group)
    }

    /// Number of items over all groups (for tests and diagnostics).
    pub fn len(&self) -> usize {
        self.singles.len() + self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.singles.is_empty() && self.groups.is_empty()
    }
}

impl JoinState for MemoryState {
    fn get(&mut self, group: &[u8], item: &[u8]) -> Result<Option<StateValue>, StateError> {
        Ok(
            match self.singles.find(self.hash(group), |s| s.group() == group) {
                Some(s) => (s.item() == item).then(|| s.value().clone()),
                None => self.groups.get(group, item).cloned(),
            },
        )
    }

    fn put(&mut self, group: &[u8], item: &[u8], value: StateValue) {
        let h = self.hash(group);
        if let Ok(entry) = self.singles.find_entry(h, |s| s.group() == group) {
            if entry.get().item() == item {
                let mut entry = entry;
                *entry.get_mut().value_mut() = value;
                return;
            }
            // A second item: the group moves to the sorted groups.
            let (single, _) = entry.remove();
            let old_item = single.item().to_vec();
            self.groups.put(group, &old_item, single.into_value());
            self.groups.put(group, item, value);
            return;
        }
        if self.groups.group(group).is_some() {
            self.groups.put(group, item, value);
            return;
        }
        match Single::new(group, item, value) {
            Ok(single) => {
                self.singles
                    .insert_unique(h, single, |s| self.groups.hasher().hash_one(s.group()));
            }
            Err(value) => {
                self.groups.put(group, item, value);
            }
        }
    }

    fn delete(&mut self, group: &[u8], item: &[u8]) {
        match self
            .singles
            .find_entry(self.hash(group), |s| s.group() == group)
        {
            Ok(entry) => {
                if entry.get().item() == item {
                    entry.remove();
                }
            }
            Err(_) => {
                self.groups.delete(group, item);
            }
        }
    }

    fn release_partition(&mut self, partition: Partition) {
        let prefix = partition.to_be_bytes();
        self.singles.retain(|s| !s.group().starts_with(&prefix));
        self.groups.release_partition(partition);
    }

    fn scan_from(
        &mut self,
        group: &[u8],
        from: &[u8],
        visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
    ) -> Result<(), StateError> {
        if let Some(s) = self.singles.find(self.hash(group), |s| s.group() == group) {
            if s.item() >= from {
                visit(s.item(), s.value());
            }
            return Ok(());
        }
        if let Some(g) = self.groups.group(group) {
            for (k, v) in g.range_from(from) {
                if !visit(k, v) {
                    break;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(b: &[u8]) -> StateValue {
        StateValue::Bytes(b.to_vec())
    }

    fn get(s: &mut MemoryState, group: &[u8], item: &[u8]) -> Option<StateValue> {
        s.get(group, item).expect("memory reads do not fail")
    }

    fn scan(s: &mut MemoryState, group: &[u8], from: &[u8]) -> Vec<(Vec<u8>, StateValue)> {
        let mut out = Vec::new();
        s.scan_from(group, from, &mut |k, v| {
            out.push((k.to_vec(), v.clone()));
            true
        })
        .expect("memory reads do not fail");
        out
    }

    #[test]
    fn groups_move_between_singles_and_sorted_groups() {
        let mut s = MemoryState::new();
        s.put(b"g", b"b", bytes(b"1"));
        assert_eq!(get(&mut s, b"g", b"b"), Some(bytes(b"1")));
        assert_eq!(get(&mut s, b"g", b"a"), None);
        s.put(b"g", b"b", bytes(b"2"));
        assert_eq!(s.len(), 1);
        s.put(b"g", b"a", bytes(b"3"));
        assert_eq!(s.len(), 2);
        assert_eq!(
            scan(&mut s, b"g", b""),
            [(b"a".to_vec(), bytes(b"3")), (b"b".to_vec(), bytes(b"2"))]
        );
        assert_eq!(scan(&mut s, b"g", b"b").len(), 1);
        s.delete(b"g", b"a");
        s.delete(b"g", b"b");
        assert!(s.is_empty());
        // Keys too long for a single go to the sorted groups.
        let long = vec![7u8; 70_000];
        s.put(&long, b"i", bytes(b"x"));
        assert_eq!(get(&mut s, &long, b"i"), Some(bytes(b"x")));
        s.put(b"\0\0\0\x02g", b"i", bytes(b"y"));
        s.put(b"\0\0\0\x03g", b"i", bytes(b"z"));
        s.release_partition(2);
        assert_eq!(get(&mut s, b"\0\0\0\x02g", b"i"), None);
        assert_eq!(get(&mut s, b"\0\0\0\x03g", b"i"), Some(bytes(b"z")));
    }

    #[test]
    fn a_single_is_one_64_byte_allocation_for_a_primary_key_row() {
        assert_eq!(std::mem::size_of::<StateValue>(), 32);
        // 4-byte partition, tag, side, length and a 9-byte integer key; a 9-byte item.
        assert_eq!(Single::layout(19 + 9).size(), 64);
    }
}
