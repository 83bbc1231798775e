//! SELECT projection (SPEC §3) as byte concatenation: the output row for a left and a right row
//! (either may be missing: null padding) is written as compact JSON straight from the input rows'
//! stored text, and the output key (SPEC §5) from the same values. No tree is built.
//!
//! Output names follow `config::select`: fixed lists have their names (and the `"name":`
//! fragments) decided once; with a `*` item they are decided per output row, a column taking the
//! first free suffix when its name is already taken in that row.

use std::cell::RefCell;
use std::ops::Range;

mod taken;

use super::column::Column;
use crate::change::Side;
use crate::config::select::{Select, SelectItem};
use crate::row::shape::UNKNOWN;
use crate::row::{escape_name, Row};
use taken::Taken;

/// Where one column of a projected output row is, in the output buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutCol {
    pub name: Range<usize>,
    pub value: Range<usize>,
}

/// Where an output column's value comes from.
#[derive(Debug, Clone)]
enum Source {
    /// The column of that name (fixed lists: looked up per row, with a position hint).
    Named(Column),
    /// The `i`-th column of the row (star lists: the row's shape is known).
    At(usize),
    /// Columns `from..=to` of the row, copied with their own names (the prefix is only `{` or
    /// `,`).
    Run(usize, usize),
    /// Nothing: `null`.
    Null,
}

/// One output column: `{"name":` (first) or `,"name":` (others), and its value's source.
#[derive(Debug, Clone)]
struct Part {
    prefix: Vec<u8>,
    side: Side,
    source: Source,
}

fn part(first: bool, name: &[u8], side: Side, source: Source) -> Part {
    let mut prefix = Vec::with_capacity(name.len() + 4);
    prefix.extend_from_slice(if first { b"{\"" } else { b",\"" });
    prefix.extend_from_slice(name);
    prefix.extend_from_slice(b"\":");
    Part {
        prefix,
        side,
        source,
    }
}

#[derive(Debug, Clone)]
enum Item {
    Column {
        side: Side,
        column: Column,
        /// The escaped `AS` name.
        alias: Option<Vec<u8>>,
    },
    All(Side),
}

/// The shape of one side's row as a layout knows it.
#[derive(Debug, Clone, PartialEq)]
enum Shape {
    Absent,
    /// A shape number (`row::shape`).
    Id(u32),
    /// The column names of a row whose shape has no number.
    Names(Vec<Box<[u8]>>),
}

/// The output columns of a star list for rows of one shape each.
#[derive(Debug, Clone)]
struct Layout {
    /// One per input row (two for a two-way join).
    shapes: Vec<Shape>,
    parts: Vec<Part>,
}

/// Output columns are worked out once per pair of row shapes (star lists: their names depend on
/// the rows' column names; all lists: where each value is) and reused; a few are remembered.
#[derive(Debug, Clone, Default)]
struct Layouts {
    recent: Vec<Layout>,
    next: usize,
}

const LAYOUTS: usize = 4;

#[inline]
fn same_shape(shape: &Shape, row: Option<&Row>) -> bool {
    match (shape, row) {
        (Shape::Absent, None) => true,
        (Shape::Id(id), Some(r)) => r.shape() == *id,
        (Shape::Names(names), Some(r)) => r.shape() == UNKNOWN && r.has_names(names),
        _ => false,
    }
}

fn shape_of(row: Option<&Row>) -> Shape {
    match row {
        None => Shape::Absent,
        Some(r) if r.shape() != UNKNOWN => Shape::Id(r.shape()),
        Some(r) => Shape::Names(r.columns().map(|(n, _)| n.into()).collect()),
    }
}

/// A compiled SELECT list.
#[derive(Debug, Clone)]
pub struct Projection {
    select: Select,
    /// The output columns of a list without `*` items.
    fixed: Option<Vec<Part>>,
    items: Vec<Item>,
    /// Escaped `AS` names, which other columns must not take.
    reserved: Vec<Vec<u8>>,
    layouts: RefCell<Layouts>,
}

pub(super) fn escaped(name: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len());
    escape_name(name, &mut out);
    out
}

pub(super) fn pick<'r>(side: Side, rows: &[Option<&'r Row>]) -> Option<&'r Row> {
    rows.get(side.index()).copied().flatten()
}

impl Projection {
    pub fn new(items: Vec<SelectItem>) -> Self {
        let select = Select::new(items);
        let fixed = select.fixed().map(|names| {
            names
                .iter()
                .enumerate()
                .map(|(i, (name, side, column))| {
                    part(
                        i == 0,
                        &escaped(name),
                        *side,
                        Source::Named(Column::new(column.as_str())),
                    )
                })
                .collect()
        });
        let items = select
            .items()
            .iter()
            .map(|i| match i {
                SelectItem::Column {
                    side,
                    column,
                    alias,
                } => Item::Column {
                    side: *side,
                    column: Column::new(column.as_str()),
                    alias: alias.as_deref().map(escaped),
                },
                SelectItem::All(side) => Item::All(*side),
            })
            .collect();
        let reserved: Vec<Vec<u8>> = select.reserved().iter().map(|r| escaped(r)).collect();
        Projection {
            select,
            fixed,
            items,
            reserved,
            layouts: RefCell::new(Layouts::default()),
        }
    }

    pub fn select(&self) -> &Select {
        &self.select
    }

    /// Appends the output row for a left and a right row (a missing side is null-padded) to
    /// `out` as compact JSON, and, when `cols` is given, where each of its columns is.
    pub fn project_into(
        &self,
        left: Option<&Row>,
        right: Option<&Row>,
        out: &mut Vec<u8>,
        cols: Option<&mut Vec<OutCol>>,
    ) {
        self.project_rows_into(&[left, right], out, cols);
    }

    /// `project_into` for the rows of every input in order (a star join's fact and dimensions;
    /// a missing one is null-padded).
    pub fn project_rows_into(
        &self,
        rows: &[Option<&Row>],
        out: &mut Vec<u8>,
        cols: Option<&mut Vec<OutCol>>,
    ) {
        // Rows of known shapes take a layout with each column's position; a fixed list has its
        // parts by name for rows of shapes without a number.
        let unknown = |r: &Option<&Row>| r.is_some_and(|r| r.shape() == UNKNOWN);
        if let (Some(parts), true) = (&self.fixed, rows.iter().any(unknown)) {
            return write(parts, rows, out, cols);
        }
        let mut layouts = self.layouts.borrow_mut();
        let found = layouts.recent.iter().position(|l| {
            l.shapes.len() == rows.len()
                && l.shapes.iter().zip(rows).all(|(s, r)| same_shape(s, *r))
        });
        let at = match found {
            Some(i) => i,
            None => {
                let layout = self.layout(rows);
                let l = &mut *layouts;
                if l.recent.len() < LAYOUTS {
                    l.recent.push(layout);
                    l.recent.len() - 1
                } else {
                    let i = l.next;
                    l.recent[i] = layout;
                    l.next = (i + 1) % LAYOUTS;
                    i
                }
            }
        };
        write(&layouts.recent[at].parts, rows, out, cols);
    }

    /// Works out the output columns for rows shaped like `left` and `right`: `AS` names as
    /// given, every other column under its first free name (the names `Select` fixes, for lists
    /// without `*`), each with where its value is in those rows.
    fn layout(&self, rows: &[Option<&Row>]) -> Layout {
        let mut names = Taken::default();
        // (output name, side, source, whether the name is the input column's own)
        let mut columns: Vec<(Vec<u8>, Side, Source, bool)> = Vec::new();
        let mut add = |names: &mut Taken, base: &[u8], free: bool, side, source| {
            let name = if free {
                names.free_name(base, &self.reserved)
            } else {
                names.names.insert(base.to_vec());
                base.to_vec()
            };
            let own = free && name == base;
            columns.push((name, side, source, own));
        };
        for item in &self.items {
            match item {
                Item::Column {
                    side,
                    column,
                    alias,
                } => {
                    let source = pick(*side, rows)
                        .and_then(|r| r.find(column.escaped(), 0))
                        .map_or(Source::Null, |(i, _)| Source::At(i));
                    match alias {
                        Some(a) => add(&mut names, a, false, *side, source),
                        None => add(&mut names, column.escaped(), true, *side, source),
                    }
                }
                Item::All(side) => {
                    if let Some(r) = pick(*side, rows) {
                        for (i, (name, _)) in r.columns().enumerate() {
                            add(&mut names, name, true, *side, Source::At(i));
                        }
                    }
                }
            }
        }
        Layout {
            shapes: rows.iter().map(|r| shape_of(*r)).collect(),
            parts: runs(columns),
        }
    }

    /// The output row as a `Row` (tests and diagnostics; the hot path uses `project_into`).
    pub fn project(&self, left: Option<&Row>, right: Option<&Row>) -> Row {
        let mut out = Vec::new();
        self.project_into(left, right, &mut out, None);
        Row::from_compact(&out)
    }
}

/// The parts of a star layout: consecutive columns of one row that keep their own names become
/// one run, copied in one piece.
fn runs(columns: Vec<(Vec<u8>, Side, Source, bool)>) -> Vec<Part> {
    let mut parts: Vec<Part> = Vec::new();
    for (name, side, source, own) in columns {
        let first = parts.is_empty();
        if let (true, Source::At(i)) = (own, &source) {
            if let Some(Part {
                source: Source::Run(_, to),
                side: s,
                ..
            }) = parts.last_mut()
            {
                if *s == side && *to + 1 == *i {
                    *to = *i;
                    continue;
                }
            }
            parts.push(Part {
                prefix: if first { b"{".to_vec() } else { b",".to_vec() },
                side,
                source: Source::Run(*i, *i),
            });
            continue;
        }
        parts.push(part(first, &name, side, source));
    }
    parts
}

/// Writes the output row of `parts` for `rows`.
fn write(
    parts: &[Part],
    rows: &[Option<&Row>],
    out: &mut Vec<u8>,
    mut cols: Option<&mut Vec<OutCol>>,
) {
    if let Some(c) = cols.as_deref_mut() {
        c.clear();
    }
    if parts.is_empty() {
        out.push(b'{');
    }
    for p in parts {
        let row = pick(p.side, rows);
        if let (Source::Run(from, to), Some(r)) = (&p.source, row) {
            out.extend_from_slice(&p.prefix);
            let at = out.len();
            out.extend_from_slice(r.run(*from, *to));
            if let Some(c) = cols.as_deref_mut() {
                // The run starts at the opening quote of column `from`'s name.
                let base = r.column_ranges(*from).0.start - 1;
                for i in *from..=*to {
                    let (n, v) = r.column_ranges(i);
                    c.push(OutCol {
                        name: n.start - base + at..n.end - base + at,
                        value: v.start - base + at..v.end - base + at,
                    });
                }
            }
            continue;
        }
        let name = out.len() + 2..out.len() + p.prefix.len() - 2;
        out.extend_from_slice(&p.prefix);
        let start = out.len();
        let value = match &p.source {
            Source::Named(c) => row.and_then(|r| c.get(r)),
            Source::At(i) => row.map(|r| r.value_at(*i)),
            Source::Run(..) | Source::Null => None,
        };
        match value {
            Some(v) => out.extend_from_slice(v.as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
        if let Some(c) = cols.as_deref_mut() {
            c.push(OutCol {
                name,
                value: start..out.len(),
            });
        }
    }
    out.push(b'}');
}

#[cfg(test)]
#[path = "project_tests.rs"]
mod tests;
