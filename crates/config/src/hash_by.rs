//! `SIDEJOIN_<SIDE>_HASH_BY` as the settings say it; the plan decides the placement from it
//! (docs/src/operations/repartition.md).

/// `SIDEJOIN_<SIDE>_HASH_BY`: whether the side is re-keyed before the join (SPEC §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HashBy {
    /// Unset: the plan decides — read as it is when the side is declared keyed by its join key
    /// (an upsert/Debezium primary key equal to the join key) or needs no placement (one
    /// partition on both sides, the other side broadcast), else re-keyed by the join key.
    Auto,
    /// `none`: the user declares the topic keyed by the join key; read as it is, every record's
    /// key checked (`SIDEJOIN_ON_COPARTITION_VIOLATION`).
    Keyed,
    /// Re-keyed by these columns (`$join_key`, or any columns with the other side broadcast).
    Columns(Vec<String>),
}

impl HashBy {
    /// The columns of an explicit repartition.
    pub fn columns(&self) -> Option<&[String]> {
        match self {
            HashBy::Columns(c) => Some(c),
            _ => None,
        }
    }
}
