//! Reading the chain (SPEC §14) without storing it: a fact row's chained rows are computed from
//! the stored inputs on demand (`expand`), and the fact rows a dimension's key reaches are found
//! by walking the lookups back to the fact (`reaching`), through each input's own key or a lookup
//! index. This is what lets the state hold the inputs only, never an intermediate join result
//! (as Flink's MultiJoin, FLIP-516).
//!
//! The lookup index of a dimension looked up on columns its parent is not stored under is kept
//! here too (`index_row`): one entry per stored parent row, written and removed with the row.
//! An entry whose row is gone (state TTL removes rows without their entries) is skipped and
//! removed when it is next read.

use crate::change::{Row, Side};

use super::super::canonical::encode_key;
use super::super::layout;
use super::super::state::{JoinState, StateError, StateValue};
use super::super::table::{KeyBuf, Keys, Slot, Table};
use super::plan::{DimPlan, StarPlan};

/// One chained row: a row (or null padding) per input, by `Side::index()`, the fact first.
pub type Chain = Vec<Option<Row>>;

/// The chained rows of one copy of `fact`, as Flink's chained binary joins would hold them: for
/// each dimension in order, every chain so far is extended by each matching row (copies counted)
/// or, with none, null-padded (`LEFT`) or dropped (`INNER`). A lookup key with a null column
/// matches nothing.
pub fn expand<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    fact: &Row,
) -> Result<Vec<Chain>, StateError> {
    let mut chains: Vec<Chain> = vec![vec![Some(fact.clone())]];
    let mut slots = Vec::new();
    let mut key = Vec::new();
    for d in &plan.dims {
        let mut next = Vec::with_capacity(chains.len());
        for mut chain in chains {
            slots.clear();
            if let Some(parent) = &chain[d.on.index()] {
                key.clear();
                if !encode_key(parent, &d.lookup, &mut key) {
                    t.rows_of(plan.source(d.side), &key, &mut slots)?;
                }
            }
            if slots.is_empty() {
                if d.outer {
                    chain.push(None);
                    next.push(chain);
                }
                continue;
            }
            for s in &slots {
                for _ in 0..s.entry.copies {
                    let mut longer = chain.clone();
                    longer.push(Some(s.entry.row.clone()));
                    next.push(longer);
                }
            }
        }
        chains = next;
        if chains.is_empty() {
            break;
        }
    }
    Ok(chains)
}

/// The stored fact rows whose chains reach dimension `dim` with lookup key `key`, each once.
pub fn reaching<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    dim: Side,
    key: &[u8],
    out: &mut Vec<Slot>,
) -> Result<(), StateError> {
    let d = plan.dim(dim);
    let parents = parents_at(t, plan, d, key)?;
    if d.on == Side::Left {
        for p in parents {
            if !out
                .iter()
                .any(|o| o.join_key == p.join_key && o.item == p.item)
            {
                out.push(p);
            }
        }
        return Ok(());
    }
    let mut seen: Vec<KeyBuf> = Vec::new();
    for p in parents {
        if !seen.contains(&p.join_key) {
            reaching(t, plan, d.on, &p.join_key, out)?;
            seen.push(p.join_key);
        }
    }
    Ok(())
}

/// The stored rows of `d`'s parent whose lookup columns hold `key`.
fn parents_at<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    d: &DimPlan,
    key: &[u8],
) -> Result<Vec<Slot>, StateError> {
    let parent = plan.source(d.on);
    let mut slots = Vec::new();
    if d.direct {
        t.rows_of(parent, key, &mut slots)?;
        return Ok(slots);
    }
    let mut group = Vec::new();
    layout::lookup_group(&mut group, t.partition, d.side, key);
    let mut items: Vec<Vec<u8>> = Vec::new();
    t.state.scan(&group, &mut |item, _| {
        items.push(item.to_vec());
        true
    })?;
    for item in items {
        let Some((join_key, row_item)) = layout::split_lookup_item(&item) else {
            continue;
        };
        let keys = Keys {
            join: KeyBuf::from_slice(join_key),
            has_null: false,
            item: KeyBuf::from_slice(row_item),
        };
        match t.find_copy(parent, &keys)? {
            Some(slot) => slots.push(slot),
            // Expired with state TTL: the entry goes now.
            None => t.state.delete(&group, &item),
        }
    }
    Ok(slots)
}

/// Adds (`present`) or removes the lookup index entries of a row of `side` stored under
/// `(join_key, item)`: one per dimension looked up on `side` through an index.
pub fn index_row<S: JoinState + ?Sized>(
    t: &mut Table<'_, S>,
    plan: &StarPlan,
    side: Side,
    slot: (&[u8], &[u8], &Row),
    present: bool,
) {
    let (join_key, item, row) = slot;
    let mut key = Vec::new();
    let mut group = Vec::new();
    let mut entry = Vec::new();
    for d in plan.indexed_children(side) {
        key.clear();
        if encode_key(row, &d.lookup, &mut key) {
            continue; // a null lookup key reaches nothing
        }
        layout::lookup_group(&mut group, t.partition, d.side, &key);
        layout::lookup_item(&mut entry, join_key, item);
        if present {
            t.state.put(&group, &entry, StateValue::Bytes(Vec::new()));
        } else {
            t.state.delete(&group, &entry);
        }
    }
}
