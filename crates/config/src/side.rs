//! The join inputs ("sources"), as settings and everything after them name them: the left and
//! right sides of a two-way join, and in a star join (SPEC §14) the fact (left), the first
//! dimension (right) and the further dimensions `dim2`, `dim3`, … in the order they are joined.

use std::fmt;

/// One join input, by its position: 0 is the left side (a star join's fact), 1 the right side
/// (its first dimension), 2.. a star join's further dimensions. Two-way code only ever sees the
/// first two (`BOTH`); arrays indexed by `index()` have `MAX_SOURCES` slots where a star join
/// reaches them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Side(u8);

/// The most inputs one join reads: the fact and seven dimensions.
pub const MAX_SOURCES: usize = 8;

const NAMES: [&str; MAX_SOURCES] = [
    "left", "right", "dim2", "dim3", "dim4", "dim5", "dim6", "dim7",
];
const VARS: [&str; MAX_SOURCES] = [
    "LEFT", "RIGHT", "DIM2", "DIM3", "DIM4", "DIM5", "DIM6", "DIM7",
];

#[allow(non_upper_case_globals)]
impl Side {
    /// The left side; a star join's fact.
    pub const Left: Side = Side(0);
    /// The right side; a star join's first dimension.
    pub const Right: Side = Side(1);

    pub const BOTH: [Side; 2] = [Side::Left, Side::Right];

    /// The input at `index` (0 left, 1 right, 2.. further dimensions), if there can be one.
    pub fn at(index: usize) -> Option<Side> {
        (index < MAX_SOURCES).then_some(Side(index as u8))
    }

    /// The first `n` inputs, in order.
    pub fn first(n: usize) -> impl Iterator<Item = Side> {
        (0..n.min(MAX_SOURCES)).map(|i| Side(i as u8))
    }

    /// The other side of a two-way join. A further dimension has none: it answers the fact
    /// (the side every dimension is joined to).
    pub fn other(self) -> Side {
        match self.0 {
            0 => Side::Right,
            _ => Side::Left,
        }
    }

    /// Lower-case name, as used in metrics labels, replay lines and internal topic names.
    pub fn name(self) -> &'static str {
        NAMES[self.index()]
    }

    /// Upper-case name, as used in `SIDEJOIN_<SIDE>_*` variables.
    pub fn var(self) -> &'static str {
        VARS[self.index()]
    }

    pub fn index(self) -> usize {
        usize::from(self.0)
    }

    /// One of a star join's dimensions (every input but the fact).
    pub fn is_dimension(self) -> bool {
        self.0 > 0
    }

    /// The input named `name` (`left`, `right`, `dim2`…), ignoring case.
    pub fn named(name: &str) -> Option<Side> {
        NAMES
            .iter()
            .position(|n| n.eq_ignore_ascii_case(name))
            .map(|i| Side(i as u8))
    }
}

/// `Left`, `Right`, `Dim2`…: as the enum this type once was printed.
impl fmt::Debug for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name();
        f.write_str(&name[..1].to_ascii_uppercase())?;
        f.write_str(&name[1..])
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
