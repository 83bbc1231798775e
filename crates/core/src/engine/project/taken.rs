//! The output names of a star layout (`Projection::layout`): each input column under its first
//! free name.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

/// The output names a star layout has given so far. Sets of names the rows chose: ordered (no
/// hashing an input could flood), and each base name's next suffix to try is remembered, so
/// that naming n columns costs O(n log n) comparisons, not a search per column per suffix.
#[derive(Default)]
pub(super) struct Taken {
    pub(super) names: BTreeSet<Vec<u8>>,
    next_suffix: BTreeMap<Vec<u8>, u64>,
}

impl Taken {
    /// The first free name among `base`, `base0`, `base1`, … (names outside `reserved`); it is
    /// taken. Names are only ever added, so a base's first free suffix never moves back.
    pub(super) fn free_name(&mut self, base: &[u8], reserved: &[Vec<u8>]) -> Vec<u8> {
        let taken = |names: &BTreeSet<Vec<u8>>, n: &[u8]| {
            names.contains(n) || reserved.iter().any(|r| r == n)
        };
        let mut name = base.to_vec();
        if taken(&self.names, base) {
            let next = self.next_suffix.entry(base.to_vec()).or_insert(0);
            loop {
                name.truncate(base.len());
                write!(name, "{next}").expect("writing to a Vec cannot fail");
                *next += 1;
                if !taken(&self.names, &name) {
                    break;
                }
            }
        }
        self.names.insert(name.clone());
        name
    }
}
