//! A star join's own settings (SPEC §14): the fact and first dimension's keys and join type as a
//! two-way join has them, each further dimension's `SIDEJOIN_DIM<N>_KEY`, `_ON` and
//! `_JOIN_TYPE`, the list form of `SIDEJOIN_BROADCAST`, and the SELECT list.

use super::error::Result;
use super::output::{select_list, side_prefix, Projected};
use super::query::{at, Join};
use super::settings::Settings;
use super::star::Star;

/// Writes the star join's settings.
pub(super) fn settings(
    s: &mut Settings,
    join: &Join,
    star: &Star,
    select: &[Projected],
    output_names: Option<&[String]>,
) -> Result<()> {
    for (i, d) in star.dims.iter().enumerate() {
        let link = &join.links[d.link];
        let (on, on_at) = (link.condition.to_string(), at(link.condition));
        let kind_at = at(link.relation);
        let construct = format!("{} JOIN", d.kind.to_ascii_uppercase());
        if i == 0 {
            s.set("JOIN_TYPE", d.kind, kind_at, &construct)?;
            s.set("LEFT_KEY", d.lookup.join(","), on_at, &on)?;
            s.set("RIGHT_KEY", d.key.join(","), on_at, &on)?;
            continue;
        }
        let v = d.side.var();
        s.set(&format!("{v}_JOIN_TYPE"), d.kind, kind_at, &construct)?;
        s.set(&format!("{v}_KEY"), d.key.join(","), on_at, &on)?;
        let p = side_prefix(d.on);
        let lookup: Vec<String> = d.lookup.iter().map(|c| format!("{p}.{c}")).collect();
        s.set(&format!("{v}_ON"), lookup.join(","), on_at, &on)?;
    }
    if let Some((hint_at, text)) = &star.broadcast_hint {
        let names: Vec<&str> = star.broadcast.iter().map(|b| b.name()).collect();
        s.set("BROADCAST", names.join(","), *hint_at, text)?;
    }
    select_list(s, join, select, output_names)
}
