//! State TTL in stream time (SPEC §3.5): a stored row expires once it has not been written for
//! longer than the TTL. Expiry walks the time-ordered TTL index from its oldest entry and stops at
//! the first live one, so its work is proportional to what expires, not to what is stored; and
//! it remembers that entry's stamp (a floor under every stamp in the index), so records that
//! cannot expire anything do not read the index at all. It emits nothing and leaves the other
//! side's match counts as they are (as Flink does).

use super::layout;
use super::plan::SidePlan;
use super::state::{JoinState, StateError, StateValue};
use super::table::Table;

/// Removes the rows of `plan`'s side that expired at the table's stream time. `floor` is a
/// stamp no entry of the side's index is below (`None`: unknown); it is kept up to date.
pub fn expire<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &SidePlan,
    floor: &mut Option<i64>,
) -> Result<(), StateError> {
    if plan.ttl_ms <= 0 {
        return Ok(());
    }
    // Expired when now - stamp > ttl, i.e. stamp < now - ttl.
    let Some(cutoff) = t.now.checked_sub(plan.ttl_ms) else {
        return Ok(());
    };
    if floor.is_some_and(|f| f >= cutoff) {
        return Ok(());
    }
    let mut group = Vec::new();
    layout::ttl_group(&mut group, t.partition, plan.side);
    let mut due: Vec<Vec<u8>> = Vec::new();
    // Every later write is stamped at least now: an empty index has that floor.
    let mut first_live = t.now;
    t.state
        .scan(&group, &mut |item, _| match layout::time_from_bytes(item) {
            Some(stamp) if stamp < cutoff => {
                due.push(item.to_vec());
                true
            }
            Some(stamp) => {
                first_live = stamp;
                false
            }
            None => false,
        })?;
    *floor = Some(first_live);
    for item in due {
        let Some((stamp, join_key, row_item)) = layout::split_ttl_item(&item, plan.key.len())
        else {
            continue;
        };
        let mut rows = Vec::new();
        layout::rows_group(&mut rows, t.partition, plan.side, join_key);
        let copies = match t.state.get(&rows, row_item)? {
            Some(StateValue::Row(e)) => e.copies,
            _ => 0,
        };
        t.remove(plan, join_key, row_item, stamp);
        let i = plan.side.index();
        t.stats.rows(t.partition, plan.side, -i64::from(copies));
        t.stats.state_expired[i] += u64::from(copies);
    }
    Ok(())
}
