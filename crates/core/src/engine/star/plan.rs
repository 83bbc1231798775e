//! What the star join needs to know about its inputs (SPEC §14), derived once from the settings:
//! every input's `SidePlan` (the fact stored under the columns the first dimension is looked up
//! by) and, per dimension, how it is looked up and whether that needs an index.

use crate::change::Side;
use crate::config::{JoinSpec, JoinType};

use super::super::column::Column;
use super::super::plan::{SidePlan, UsedColumns};
use super::super::project::Projection;

/// How one dimension joins the chain.
#[derive(Debug, Clone)]
pub struct DimPlan {
    pub side: Side,
    /// A `LEFT` join: a chain row without a match keeps going null-padded (else it ends).
    pub outer: bool,
    /// The input whose row gives the lookup key: the fact or an earlier dimension.
    pub on: Side,
    /// Those columns, in the order of the dimension's own key.
    pub lookup: Vec<Column>,
    /// `on` is stored under exactly these columns, so its rows with a lookup key are found
    /// directly; else the star join keeps a lookup index (`layout::LOOKUP`).
    pub direct: bool,
}

/// The whole star join as the engine sees it.
#[derive(Debug, Clone)]
pub struct StarPlan {
    /// Every input, by `Side::index()`: the fact first.
    pub sources: Vec<SidePlan>,
    /// The dimensions in join order (`dims[i]` is input `i + 1`).
    pub dims: Vec<DimPlan>,
    pub projection: Projection,
}

impl StarPlan {
    pub fn new(spec: &JoinSpec) -> Self {
        let projection = Projection::new(spec.select.clone());
        let mut dims = vec![DimPlan {
            side: Side::Right,
            outer: spec.join_type == JoinType::Left,
            on: Side::Left,
            lookup: Column::list(&spec.left.key),
            direct: false,
        }];
        for d in &spec.dimensions {
            dims.push(DimPlan {
                side: d.source.side,
                outer: d.join_type == JoinType::Left,
                on: d.on,
                lookup: Column::list(&d.lookup),
                direct: false,
            });
        }
        let lookups_on = |side: Side| -> Vec<String> {
            let mut cols = Vec::new();
            for d in dims.iter().filter(|d| d.on == side) {
                cols.extend(d.lookup.iter().map(|c| c.name().to_owned()));
            }
            cols
        };
        let sources: Vec<SidePlan> = spec
            .sources()
            .map(|s| {
                let used = UsedColumns::of(&projection, s.side, &s.key, &lookups_on(s.side));
                // Only the fact's rows are preserved; a dimension's unmatched rows emit nothing.
                SidePlan::new(s, false, used)
            })
            .collect();
        for d in &mut dims {
            d.direct = sources[d.on.index()].key == d.lookup;
        }
        StarPlan {
            sources,
            dims,
            projection,
        }
    }

    pub fn source(&self, side: Side) -> &SidePlan {
        &self.sources[side.index()]
    }

    pub fn dim(&self, side: Side) -> &DimPlan {
        &self.dims[side.index() - 1]
    }

    /// The dimensions looked up on `side`'s rows through an index.
    pub fn indexed_children(&self, side: Side) -> impl Iterator<Item = &DimPlan> {
        self.dims.iter().filter(move |d| d.on == side && !d.direct)
    }
}
