//! Random chains and **consistent** changelogs for the differential: a retraction (a `-D`, an
//! update's `-U`) always names a row its input holds at that moment, and a primary-key input
//! never gets an insert (or an update to) an id it holds. Flink's join does not drop retractions
//! of absent rows as sidejoin's normalisation does (SPEC §2), so only consistent input compares.
//! Small value domains make keys collide; lookup and key columns are sometimes null.

use crate::cases::{Case, ChangeKind, Dim, Op, Topology, Values};

/// Ids are 0..ID_DOMAIN, so a primary-key input holds at most that many rows.
const ID_DOMAIN: i64 = 4;
/// Join columns take 0..KEY_DOMAIN or null.
const KEY_DOMAIN: u64 = 2;

/// SplitMix64: a seeded generator, so a seed names one run.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// `count` chains: even ones of 3 inputs, odd ones of 4; the first dimension is looked up on the
/// fact, every later one on the fact or an earlier dimension (only on a dimension in half of
/// the topologies, so both kinds are always there); joins INNER or LEFT, inputs with or without
/// primary key at random.
pub(crate) fn topologies(rng: &mut Rng, count: usize) -> Vec<Topology> {
    (0..count)
        .map(|number| {
            let inputs = 3 + number % 2;
            let dims = (0..inputs - 1)
                .map(|d| Dim {
                    outer: rng.chance(50),
                    on: match d {
                        0 => 0,
                        _ if number % 4 < 2 => 1 + rng.index(d),
                        _ => rng.index(d + 1),
                    },
                    column: if rng.chance(50) { "a" } else { "b" },
                })
                .collect();
            Topology {
                number,
                pk: (0..inputs).map(|_| rng.chance(50)).collect(),
                dims,
            }
        })
        .collect()
}

/// Case `number` of topology `t`: one insert into every input (in random order), then 6 to 35
/// random inserts, updates and deletes on random inputs.
pub(crate) fn case(rng: &mut Rng, t: &Topology, number: u64) -> Case {
    let mut gen = CaseGen {
        rng,
        pk: &t.pk,
        tables: vec![Vec::new(); t.pk.len()],
        ops: Vec::new(),
    };
    let mut first: Vec<usize> = (0..t.pk.len()).collect();
    for i in (1..first.len()).rev() {
        first.swap(i, gen.rng.index(i + 1));
    }
    for source in first {
        gen.insert(source);
    }
    let more = 6 + gen.rng.below(30);
    for _ in 0..more {
        let source = gen.rng.index(t.pk.len());
        match gen.rng.below(100) {
            _ if gen.tables[source].is_empty() => gen.insert(source),
            0..45 => gen.insert(source),
            45..80 => gen.update(source),
            _ => gen.delete(source),
        }
    }
    Case {
        topology: t.number,
        number,
        ops: gen.ops,
    }
}

struct CaseGen<'a> {
    rng: &'a mut Rng,
    pk: &'a [bool],
    /// Each input's rows now.
    tables: Vec<Vec<Values>>,
    ops: Vec<Op>,
}

impl CaseGen<'_> {
    fn key(&mut self) -> Option<i64> {
        (!self.rng.chance(12)).then(|| self.rng.below(KEY_DOMAIN) as i64)
    }

    fn row(&mut self, id: i64) -> Values {
        let v = self.rng.below(2) as i64;
        [Some(id), self.key(), self.key(), self.key(), Some(v)]
    }

    /// An id no row of a primary-key `source` has.
    fn free_id(&mut self, source: usize) -> Option<i64> {
        let free: Vec<i64> = (0..ID_DOMAIN)
            .filter(|id| !self.tables[source].iter().any(|r| r[0] == Some(*id)))
            .collect();
        (!free.is_empty()).then(|| free[self.rng.index(free.len())])
    }

    fn push(&mut self, source: usize, kind: ChangeKind, values: Values) {
        self.ops.push(Op {
            source,
            kind,
            values,
        });
    }

    fn insert(&mut self, source: usize) {
        let table = &self.tables[source];
        let row = if self.pk[source] {
            match self.free_id(source) {
                Some(id) => self.row(id),
                None => return self.update(source),
            }
        } else if !table.is_empty() && self.rng.chance(15) {
            // An equal copy of a row the multiset holds.
            table[self.rng.index(table.len())]
        } else {
            let id = self.rng.below(ID_DOMAIN as u64) as i64;
            self.row(id)
        };
        self.tables[source].push(row);
        self.push(source, ChangeKind::Insert, row);
    }

    fn update(&mut self, source: usize) {
        let i = self.rng.index(self.tables[source].len());
        let before = self.tables[source][i];
        let id = if !self.pk[source] {
            self.rng.below(ID_DOMAIN as u64) as i64
        } else if self.rng.chance(20) {
            // A changed primary key moves to a free id (or stays when there is none).
            self.free_id(source).or(before[0]).unwrap_or_default()
        } else {
            before[0].unwrap_or_default()
        };
        let after = self.row(id);
        self.tables[source][i] = after;
        self.push(source, ChangeKind::UpdateBefore, before);
        self.push(source, ChangeKind::UpdateAfter, after);
    }

    fn delete(&mut self, source: usize) {
        let i = self.rng.index(self.tables[source].len());
        let row = self.tables[source].remove(i);
        self.push(source, ChangeKind::Delete, row);
    }
}
