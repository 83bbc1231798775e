//! A star join's part of the settings (SPEC §14): its further dimensions and the ways to walk
//! every input of a join, two or more.

use crate::{JoinSpec, JoinType, Side, SideSpec};

/// One further dimension of a star join (SPEC §14): `… [LEFT] JOIN <source> ON
/// <on>.<lookup> = <source>.<key>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DimensionSpec {
    /// The dimension's own settings; `source.side` is its position (`dim2`…) and `source.key`
    /// its join columns.
    pub source: SideSpec,
    /// `Inner` or `Left` (the fact's rows are preserved).
    pub join_type: JoinType,
    /// The input whose columns the lookup reads: the fact or an earlier dimension.
    pub on: Side,
    /// Those columns, one per column of `source.key`, in its order.
    pub lookup: Vec<String>,
    /// Every task reads all of it (else it is co-partitioned with the fact).
    pub broadcast: bool,
}

impl JoinSpec {
    /// A star join: more than one dimension (SPEC §14).
    pub fn is_star(&self) -> bool {
        !self.dimensions.is_empty()
    }

    /// Every input's position, in order: left (fact), right, then the further dimensions.
    pub fn inputs(&self) -> impl Iterator<Item = Side> {
        Side::first(2 + self.dimensions.len())
    }

    /// Every input, in order: left (fact), right, then the further dimensions.
    pub fn sources(&self) -> impl Iterator<Item = &SideSpec> {
        [&self.left, &self.right]
            .into_iter()
            .chain(self.dimensions.iter().map(|d| &d.source))
    }

    /// The input named `name`: its own name (`left`, `dim2`…) or an alias, ignoring case.
    pub fn source_named(&self, name: &str) -> Option<Side> {
        let lower = name.to_ascii_lowercase();
        Side::named(&lower)
            .filter(|s| s.index() < 2 + self.dimensions.len())
            .or_else(|| {
                self.aliases
                    .iter()
                    .find(|(a, _)| *a == lower)
                    .map(|(_, s)| *s)
            })
    }
}
