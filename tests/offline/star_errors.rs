//! A star join's refusals (SPEC §14) through the configuration: a chain of joins in
//! `SIDEJOIN_SQL` that would preserve a dimension or is not co-partitioned, quoted with its line
//! and column, and the variables' settings-only refusals, reported together with exit 2.

use crate::config_errors::{assert_names, config_error};
use crate::sql_errors::{error_of, refused, TABLES};

/// A chain of joins is a star join (SPEC §14) now; its third table must be declared like any.
#[test]
fn a_second_join_of_an_undeclared_table() {
    refused(
        "SELECT a.v FROM a JOIN b ON a.id = b.id JOIN c ON a.id = c.id",
        46,
        "c",
        "unknown table: declare it with CREATE TABLE first",
    );
}

/// A third table `c` (line 3) and the chain's query on line 4.
fn chain_refused(query: &str, column: u64, construct: &str, why: &str) {
    let c = "CREATE TABLE c (cid INT, x STRING) WITH ('connector' = 'kafka', 'topic' = 'c', 'format' = 'json');\n";
    let e = error_of(&format!("{TABLES}{c}{query}"));
    let at = format!("line 4, column {column}: `{construct}`");
    assert!(e.contains(&at), "expected {at:?} in:\n{e}");
    assert!(e.contains(why), "expected {why:?} in:\n{e}");
    assert!(
        e.contains("SIDEJOIN_SQL"),
        "the error names the variable:\n{e}"
    );
}

#[test]
fn star_joins_that_would_preserve_a_dimension() {
    chain_refused(
        "SELECT /*+ BROADCAST(a, c) */ a.v FROM a LEFT JOIN b ON a.id = b.id JOIN c ON a.id = c.cid",
        52,
        "b",
        "the preserved side of a LEFT join in a star join must be the fact",
    );
    chain_refused(
        "SELECT a.v FROM a JOIN b ON a.id = b.id FULL JOIN c ON a.id = c.cid",
        51,
        "c",
        "a FULL JOIN in a chain of joins would preserve a dimension's rows",
    );
    chain_refused(
        "SELECT a.v FROM a JOIN b ON a.id = b.id JOIN c ON b.w = c.x",
        51,
        "b.w = c.x",
        "`c` is not broadcast, so it is co-partitioned with the fact `a`",
    );
}

/// A star join's settings-only refusals (SPEC §14) are reported together, each naming its
/// variable, before any connection (exit 2).
#[test]
fn star_join_refusals_name_their_variables() {
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_LEFT_KEY", "k"),
            ("SIDEJOIN_RIGHT_KEY", "k"),
            ("SIDEJOIN_JOIN_TYPE", "right"),
            ("SIDEJOIN_DIM2_KEY", "id"),
            ("SIDEJOIN_DIM2_ON", "l.other"),
            ("SIDEJOIN_DIM3_KEY", "id"),
            ("SIDEJOIN_DIM3_ON", "dim3.x"),
            ("SIDEJOIN_DIM5_KEY", "id"),
            ("SIDEJOIN_BROADCAST", "dim3"),
        ],
        false,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_DIM5_KEY: dimensions are numbered without gaps: dim5 needs dim4",
            "SIDEJOIN_JOIN_TYPE=\"right\": a star join keeps the fact's (left) rows only",
            "SIDEJOIN_DIM2_ON=\"l.other\": dim2 is not broadcast, so it must be co-partitioned with the fact",
            "SIDEJOIN_DIM3_ON=\"dim3.x\": reads dim3, which is dim3 itself or joined after it",
            "4 problems",
        ],
    );
}
