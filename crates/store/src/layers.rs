//! Reading through the store's layers: the buffered writes of several checkpoints, newest first,
//! merged into one sorted stream of a group's items (each item once, from the newest layer that
//! holds it; `None` = deleted), and that stream laid over a base (the cache or RocksDB).

use std::iter::Peekable;

use smallvec::SmallVec;

use crate::engine::groups::{Group, Groups, Range};
use crate::engine::state::StateValue;

type Layer<'a> = Peekable<Range<'a, Option<StateValue>>>;

/// The buffered items of one group, from `from` on, newest layer winning.
pub(crate) struct Buffered<'a> {
    layers: SmallVec<[Layer<'a>; 4]>,
}

impl<'a> Buffered<'a> {
    /// `newest_first`: the write buffers, the open one first.
    pub(crate) fn new(
        newest_first: impl Iterator<Item = &'a Groups<Option<StateValue>>>,
        group: &[u8],
        from: &[u8],
    ) -> Self {
        Buffered {
            layers: newest_first
                .filter_map(|g| g.group(group))
                .map(|g| g.range_from(from).peekable())
                .collect(),
        }
    }
}

impl<'a> Iterator for Buffered<'a> {
    type Item = (&'a [u8], &'a Option<StateValue>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut best: Option<(usize, &'a [u8])> = None;
        for (i, layer) in self.layers.iter_mut().enumerate() {
            if let Some(&(k, _)) = layer.peek() {
                // Strictly smaller only: on equal keys the newer (earlier) layer stays chosen.
                if best.is_none_or(|(_, b)| k < b) {
                    best = Some((i, k));
                }
            }
        }
        let (winner, key) = best?;
        let item = self.layers[winner].next();
        for (i, layer) in self.layers.iter_mut().enumerate() {
            if i != winner && layer.peek().is_some_and(|&(k, _)| k == key) {
                layer.next();
            }
        }
        item
    }
}

/// `overlay` over the items of a group the cache holds completely, from `from` on.
pub(crate) fn overlay_cached<'a>(
    over: Buffered<'a>,
    items: &Group<Option<StateValue>>,
    from: &[u8],
    visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
) -> bool {
    let base = items
        .range_from(from)
        .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)));
    overlay(over, base, visit)
}

/// Visits `base` items laid under `over` (which wins on equal items and hides deleted ones), in
/// item order, while `visit` returns true; returns whether it ran to the end.
pub(crate) fn overlay<'a, 'b>(
    over: impl Iterator<Item = (&'a [u8], &'a Option<StateValue>)>,
    base: impl Iterator<Item = (&'b [u8], &'b StateValue)>,
    visit: &mut dyn FnMut(&[u8], &StateValue) -> bool,
) -> bool {
    let mut over = over.peekable();
    let mut base = base.peekable();
    loop {
        let take_over = match (over.peek(), base.peek()) {
            (None, None) => return true,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((o, _)), Some((b, _))) => o <= b,
        };
        let (k, v) = if take_over {
            let (k, v) = over.next().expect("peeked");
            if base.peek().is_some_and(|(b, _)| *b == k) {
                base.next();
            }
            (k, v.as_ref())
        } else {
            let (k, v) = base.next().expect("peeked");
            (k, Some(v))
        };
        if let Some(v) = v {
            if !visit(k, v) {
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(b: &[u8]) -> StateValue {
        StateValue::Bytes(b.to_vec())
    }

    #[test]
    fn newest_layer_wins_and_deletes_hide() {
        let mut old: Groups<Option<StateValue>> = Groups::default();
        old.put(b"g", b"a", Some(bytes(b"old a")));
        old.put(b"g", b"b", Some(bytes(b"old b")));
        old.put(b"g", b"d", Some(bytes(b"old d")));
        let mut new: Groups<Option<StateValue>> = Groups::default();
        new.put(b"g", b"b", None);
        new.put(b"g", b"c", Some(bytes(b"new c")));
        let merged: Vec<(Vec<u8>, Option<StateValue>)> =
            Buffered::new([&new, &old].into_iter(), b"g", b"")
                .map(|(k, v)| (k.to_vec(), v.clone()))
                .collect();
        assert_eq!(
            merged,
            [
                (b"a".to_vec(), Some(bytes(b"old a"))),
                (b"b".to_vec(), None),
                (b"c".to_vec(), Some(bytes(b"new c"))),
                (b"d".to_vec(), Some(bytes(b"old d"))),
            ]
        );
        let base = [
            (&b"a"[..], bytes(b"disk a")),
            (b"b", bytes(b"disk b")),
            (b"e", bytes(b"disk e")),
        ];
        let mut seen = Vec::new();
        let done = overlay(
            Buffered::new([&new, &old].into_iter(), b"g", b""),
            base.iter().map(|(k, v)| (*k, v)),
            &mut |k, v| {
                seen.push((k.to_vec(), v.clone()));
                true
            },
        );
        assert!(done);
        let keys: Vec<&[u8]> = seen.iter().map(|(k, _)| &k[..]).collect();
        assert_eq!(keys, [&b"a"[..], b"c", b"d", b"e"]);
        assert_eq!(seen[0].1, bytes(b"old a"));
    }
}
