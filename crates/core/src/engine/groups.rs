//! A two-level map in memory, `group → (item → V)`, items in byte order: what the in-memory
//! store holds and what the durable store buffers in front of RocksDB.
//!
//! Groups live in a hash map; a group's items in a sorted small vector while the group is small
//! (the common case: one row per key, stored inline without a further allocation) and in a B-tree
//! once it grows, so that big groups (hot keys, time indexes) keep logarithmic inserts. Keys up to
//! 24 bytes are stored inline.

use std::collections::BTreeMap;
use std::ops::Bound;

use std::collections::HashMap;

use smallvec::SmallVec;

use super::keyhash::KeyHasher;
use crate::change::Partition;

/// Items a group keeps in a sorted vector before it moves to a B-tree.
const SMALL_GROUP: usize = 32;

/// A group or item key; short keys need no allocation of their own.
pub type Key = SmallVec<[u8; 24]>;

#[derive(Debug, Clone)]
pub enum Group<V> {
    Small(SmallVec<[(Key, V); 1]>),
    Large(BTreeMap<Key, V>),
}

impl<V> Default for Group<V> {
    fn default() -> Self {
        Group::Small(SmallVec::new())
    }
}

impl<V> Group<V> {
    pub fn get(&self, item: &[u8]) -> Option<&V> {
        match self {
            Group::Small(v) => v
                .binary_search_by(|(k, _)| (**k).cmp(item))
                .ok()
                .map(|i| &v[i].1),
            Group::Large(m) => m.get(item),
        }
    }

    /// Sets `item` to `value`; returns the value it replaces.
    pub fn put(&mut self, item: &[u8], value: V) -> Option<V> {
        match self {
            Group::Small(v) => match v.binary_search_by(|(k, _)| (**k).cmp(item)) {
                Ok(i) => Some(std::mem::replace(&mut v[i].1, value)),
                Err(i) if v.len() < SMALL_GROUP => {
                    v.insert(i, (Key::from_slice(item), value));
                    None
                }
                Err(_) => {
                    let mut map: BTreeMap<Key, V> = std::mem::take(v).into_iter().collect();
                    map.insert(Key::from_slice(item), value);
                    *self = Group::Large(map);
                    None
                }
            },
            Group::Large(m) => match m.get_mut(item) {
                Some(slot) => Some(std::mem::replace(slot, value)),
                None => m.insert(Key::from_slice(item), value),
            },
        }
    }

    /// Removes `item`; returns its value.
    pub fn delete(&mut self, item: &[u8]) -> Option<V> {
        match self {
            Group::Small(v) => v
                .binary_search_by(|(k, _)| (**k).cmp(item))
                .ok()
                .map(|i| v.remove(i).1),
            Group::Large(m) => m.remove(item),
        }
    }

    pub fn is_empty(&self) -> bool {
        match self {
            Group::Small(v) => v.is_empty(),
            Group::Large(m) => m.is_empty(),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Group::Small(v) => v.len(),
            Group::Large(m) => m.len(),
        }
    }

    /// The items not below `from`, in order.
    pub fn range_from<'a>(&'a self, from: &[u8]) -> Range<'a, V> {
        match self {
            Group::Small(v) => {
                let start = v.partition_point(|(k, _)| &**k < from);
                Range::Small(v[start..].iter())
            }
            Group::Large(m) => {
                Range::Large(m.range::<[u8], _>((Bound::Included(from), Bound::Unbounded)))
            }
        }
    }

    pub fn iter(&self) -> Range<'_, V> {
        self.range_from(&[])
    }
}

/// Items of a group in order.
pub enum Range<'a, V> {
    Small(std::slice::Iter<'a, (Key, V)>),
    Large(std::collections::btree_map::Range<'a, Key, V>),
}

impl<'a, V> Iterator for Range<'a, V> {
    type Item = (&'a [u8], &'a V);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Range::Small(i) => i.next().map(|(k, v)| (&**k, v)),
            Range::Large(i) => i.next().map(|(k, v)| (&**k, v)),
        }
    }
}

/// Groups by their key.
#[derive(Debug, Clone)]
pub struct Groups<V> {
    map: HashMap<Key, Group<V>, KeyHasher>,
}

impl<V> Default for Groups<V> {
    fn default() -> Self {
        Self::with_hasher(KeyHasher::default())
    }
}

impl<V> Groups<V> {
    /// Empty, hashing group keys with `hasher` (`keyhash`: the runtime's is keyed at random).
    pub fn with_hasher(hasher: KeyHasher) -> Self {
        Groups {
            map: HashMap::with_hasher(hasher),
        }
    }

    /// The hasher of the group keys.
    pub fn hasher(&self) -> &KeyHasher {
        self.map.hasher()
    }

    pub fn group(&self, group: &[u8]) -> Option<&Group<V>> {
        self.map.get(group)
    }

    pub fn get(&self, group: &[u8], item: &[u8]) -> Option<&V> {
        self.map.get(group)?.get(item)
    }

    /// Sets `(group, item)` to `value`; returns the value it replaces.
    pub fn put(&mut self, group: &[u8], item: &[u8], value: V) -> Option<V> {
        match self.map.get_mut(group) {
            Some(g) => g.put(item, value),
            None => {
                let mut items = SmallVec::new();
                items.push((Key::from_slice(item), value));
                self.map.insert(Key::from_slice(group), Group::Small(items));
                None
            }
        }
    }

    /// Removes `(group, item)` (and the group when it empties); returns its value.
    pub fn delete(&mut self, group: &[u8], item: &[u8]) -> Option<V> {
        let g = self.map.get_mut(group)?;
        let old = g.delete(item);
        if g.is_empty() {
            self.map.remove(group);
        }
        old
    }

    /// Drops every group of `partition` (its groups start with the partition's 4 bytes).
    pub fn release_partition(&mut self, partition: Partition) {
        let prefix = partition.to_be_bytes();
        self.map.retain(|g, _| !g.starts_with(&prefix));
    }

    /// Number of items over all groups.
    pub fn len(&self) -> usize {
        self.map.values().map(Group::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Every group with its items.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &Group<V>)> {
        self.map.iter().map(|(k, g)| (&**k, g))
    }

    pub fn clear(&mut self) {
        self.map.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_groups_grow_into_trees_and_keep_order() {
        let mut g: Groups<u32> = Groups::default();
        for i in (0..100u32).rev() {
            assert_eq!(g.put(b"g", &i.to_be_bytes(), i), None);
        }
        assert_eq!(g.put(b"g", &7u32.to_be_bytes(), 70), Some(7));
        assert_eq!(g.len(), 100);
        let from = 95u32.to_be_bytes();
        let tail: Vec<u32> = g
            .group(b"g")
            .unwrap()
            .range_from(&from)
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(tail, [95, 96, 97, 98, 99]);
        for i in 0..100u32 {
            g.delete(b"g", &i.to_be_bytes());
        }
        assert!(g.is_empty(), "an emptied group is removed");
    }
}
