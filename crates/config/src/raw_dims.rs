//! A star join's further dimensions as given (SPEC §14): the `SIDEJOIN_DIM<N>_*` variables and
//! `SIDEJOIN_DEDUP_DIM<N>`, for `N` = 2 … 7, read with envy into one `RawDim` each. Their names
//! are known variables (`known`); what they mean is `star.rs`'s.

use serde::Deserialize;

use crate::side::MAX_SOURCES;

/// The first dimension number with its own variables (`SIDEJOIN_DIM2_*`; dimension 1 is the
/// right side).
pub(crate) const FIRST_DIM: usize = 2;

/// The variables of one further dimension, without their `SIDEJOIN_DIM<N>_` prefix,
/// lower-cased; `dedup` is `SIDEJOIN_DEDUP_DIM<N>` (as `SIDEJOIN_DEDUP_LEFT`). No `Debug`, as
/// `RawConfig`.
#[derive(Default, Deserialize)]
pub(crate) struct RawDim {
    pub topic: Option<String>,
    pub key: Option<String>,
    pub on: Option<String>,
    pub join_type: Option<String>,
    pub primary_key: Option<String>,
    pub format: Option<String>,
    pub state_ttl: Option<String>,
    pub hash_by: Option<String>,
    pub dedup: Option<String>,
    pub columns: Option<String>,
    pub csv_field_delimiter: Option<String>,
    pub csv_quote_character: Option<String>,
    pub csv_disable_quote_character: Option<String>,
    pub csv_escape_character: Option<String>,
    pub csv_null_literal: Option<String>,
    pub csv_ignore_parse_errors: Option<String>,
}

impl RawDim {
    /// Whether any of its variables is set.
    pub(crate) fn is_set(&self) -> bool {
        self.all().iter().any(|(_, v)| v.is_some())
    }

    /// Every variable, as `(field, value)` in declaration order.
    pub(crate) fn all(&self) -> [(&'static str, &Option<String>); 16] {
        [
            ("topic", &self.topic),
            ("key", &self.key),
            ("on", &self.on),
            ("join_type", &self.join_type),
            ("primary_key", &self.primary_key),
            ("format", &self.format),
            ("state_ttl", &self.state_ttl),
            ("hash_by", &self.hash_by),
            ("dedup", &self.dedup),
            ("columns", &self.columns),
            ("csv_field_delimiter", &self.csv_field_delimiter),
            ("csv_quote_character", &self.csv_quote_character),
            (
                "csv_disable_quote_character",
                &self.csv_disable_quote_character,
            ),
            ("csv_escape_character", &self.csv_escape_character),
            ("csv_null_literal", &self.csv_null_literal),
            ("csv_ignore_parse_errors", &self.csv_ignore_parse_errors),
        ]
    }

    /// The csv settings, in `csv.rs`'s order: columns, delimiter, quote, disable-quote, escape,
    /// null literal, ignore-parse-errors.
    pub(crate) fn csv(&self) -> [&Option<String>; 7] {
        [
            &self.columns,
            &self.csv_field_delimiter,
            &self.csv_quote_character,
            &self.csv_disable_quote_character,
            &self.csv_escape_character,
            &self.csv_null_literal,
            &self.csv_ignore_parse_errors,
        ]
    }
}

/// The variable of `field` (a `RawDim` field name) for dimension `n`.
pub(crate) fn var_of(n: usize, field: &str) -> String {
    if field == "dedup" {
        format!("SIDEJOIN_DEDUP_DIM{n}")
    } else {
        format!("SIDEJOIN_DIM{n}_{}", field.to_ascii_uppercase())
    }
}

/// The dimension numbers with their own variables: 2 … 7.
pub(crate) fn numbers() -> std::ops::Range<usize> {
    FIRST_DIM..MAX_SOURCES
}

/// Every dimension variable, `(n, field, name)`.
pub(crate) fn known() -> Vec<(usize, &'static str, String)> {
    let fields = RawDim::default().all().map(|(f, _)| f);
    numbers()
        .flat_map(|n| fields.iter().map(move |f| (n, *f, var_of(n, f))))
        .collect()
}

/// The dimensions' variables among `vars` (`(name, value)`, every name known) as one `RawDim`
/// per dimension number (index 0 is `dim2`); an error when envy cannot read them.
pub(crate) fn read(vars: &[(String, String)]) -> Result<Vec<RawDim>, envy::Error> {
    let known = known();
    numbers()
        .map(|n| {
            let mine = vars.iter().filter_map(|(name, value)| {
                known
                    .iter()
                    .find(|(m, _, k)| *m == n && k == name)
                    .map(|(_, f, _)| (format!("D_{}", f.to_ascii_uppercase()), value.clone()))
            });
            envy::prefixed("D_").from_iter::<_, RawDim>(mine)
        })
        .collect()
}
