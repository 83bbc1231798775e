//! The env-var form's refusals of a star join (SPEC §14), each with its variable and message.

use super::*;

/// The problems of `pairs`, as `(variable, message)`.
fn problems(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    load_vars(pairs)
        .unwrap_err()
        .0
        .into_iter()
        .map(|e| (e.var, e.message))
        .collect()
}

/// `pairs` are refused with a problem naming `var` whose message contains `needle`.
fn refused(pairs: &[(&str, &str)], var: &str, needle: &str) {
    let all = problems(pairs);
    assert!(
        all.iter().any(|(v, m)| v == var && m.contains(needle)),
        "expected {var}: …{needle}… among {all:#?}"
    );
}

#[test]
fn whole_join_refusals_are_reported_together() {
    let all = problems(&with(
        &THREE_WAY,
        &[
            ("SIDEJOIN_JOIN_TYPE", "full"),
            ("SIDEJOIN_INTERVAL_LOWER", "-1m"),
            ("SIDEJOIN_INTERVAL_UPPER", "1m"),
            ("SIDEJOIN_NULL_KEYS_MATCH", "true"),
            ("SIDEJOIN_BROADCAST", "left,dim2"),
        ],
    ));
    let vars: Vec<&str> = all.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        vars,
        [
            "SIDEJOIN_INTERVAL_LOWER",
            "SIDEJOIN_JOIN_TYPE",
            "SIDEJOIN_BROADCAST",
            "SIDEJOIN_NULL_KEYS_MATCH"
        ],
        "{all:#?}"
    );
    assert!(all[0]
        .1
        .contains("a star join (SIDEJOIN_DIM2_* set) is a regular join"));
    assert!(all[1]
        .1
        .contains("would preserve the first dimension's rows"));
    assert!(all[2]
        .1
        .contains("the fact (left) of a star join cannot be broadcast"));
    assert!(all[3].1.contains("not supported by a star join yet"));
}

/// Variables added to `THREE_WAY`, the variable refused and a part of the message.
type Refusal = (
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

#[test]
fn dimension_refusals() {
    let cases: [Refusal; 10] = [
        (
            &[("SIDEJOIN_DIM2_ON", "dim2.pid")],
            "SIDEJOIN_DIM2_ON",
            "reads dim2, which is dim2 itself or joined after it",
        ),
        (
            &[("SIDEJOIN_DIM2_ON", "dim3.x"), ("SIDEJOIN_DIM3_KEY", "x"), ("SIDEJOIN_DIM3_ON", "l.customer_id")],
            "SIDEJOIN_DIM2_ON",
            "reads dim3, which is dim2 itself or joined after it",
        ),
        (
            &[("SIDEJOIN_DIM2_ON", "l.a,l.b")],
            "SIDEJOIN_DIM2_ON",
            "has 2 column(s) but SIDEJOIN_DIM2_KEY has 1",
        ),
        (
            &[("SIDEJOIN_DIM2_ON", "l.a,r.b"), ("SIDEJOIN_DIM2_KEY", "x,y")],
            "SIDEJOIN_DIM2_ON",
            "reads both left and right",
        ),
        (
            &[("SIDEJOIN_DIM2_ON", "product_id")],
            "SIDEJOIN_DIM2_ON",
            "expected a qualified column such as `l.product_id`",
        ),
        (
            &[("SIDEJOIN_BROADCAST", "right")],
            "SIDEJOIN_DIM2_ON",
            "dim2 is not broadcast, so it must be co-partitioned with the fact: looked up on exactly the fact's key columns (l.customer_id",
        ),
        (
            &[("SIDEJOIN_DIM2_JOIN_TYPE", "right")],
            "SIDEJOIN_DIM2_JOIN_TYPE",
            "a right or full join would preserve this dimension's rows",
        ),
        (
            &[("SIDEJOIN_DIM2_HASH_BY", "pid")],
            "SIDEJOIN_DIM2_HASH_BY",
            "repartitioning a star join's dimension is not supported yet",
        ),
        (
            &[("SIDEJOIN_DIM4_KEY", "x")],
            "SIDEJOIN_DIM4_KEY",
            "dimensions are numbered without gaps: dim4 needs dim3",
        ),
        (
            &[("SIDEJOIN_SELECT", "l.a, dim3.b")],
            "SIDEJOIN_SELECT",
            "names dim3, which is not an input of this join",
        ),
    ];
    for (more, var, needle) in cases {
        refused(&with(&THREE_WAY, more), var, needle);
    }
}

#[test]
fn a_dimension_without_key_or_lookup_is_refused() {
    let all = problems(&[
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_DIM2_TOPIC", "t"),
    ]);
    assert_eq!(all.len(), 2, "{all:#?}");
    assert_eq!(all[0].0, "SIDEJOIN_DIM2_KEY");
    assert!(all[0].1.starts_with("required"));
    assert_eq!(all[1].0, "SIDEJOIN_DIM2_ON");
    assert!(all[1]
        .1
        .contains("required: the columns this dimension is looked up by"));
}

#[test]
fn broadcast_lists() {
    let base = [("SIDEJOIN_LEFT_KEY", "k"), ("SIDEJOIN_RIGHT_KEY", "k")];
    refused(
        &with(&base, &[("SIDEJOIN_BROADCAST", "left,right")]),
        "SIDEJOIN_BROADCAST",
        "a two-way join broadcasts one side",
    );
    refused(
        &with(&base, &[("SIDEJOIN_BROADCAST", "dim2")]),
        "SIDEJOIN_BROADCAST",
        "`dim2` is not an input of this join",
    );
    refused(
        &with(&THREE_WAY, &[("SIDEJOIN_BROADCAST", "dim2, dim2")]),
        "SIDEJOIN_BROADCAST",
        "`dim2` is listed twice",
    );
    refused(
        &with(&base, &[("SIDEJOIN_BROADCAST", "both")]),
        "SIDEJOIN_BROADCAST",
        "expected left or right",
    );
    // A two-way join still takes one side, the left one included.
    let c = load_vars(&with(&base, &[("SIDEJOIN_BROADCAST", "LEFT")])).unwrap();
    assert_eq!(c.join.broadcast, Some(Side::Left));
    let c = load_vars(&with(&THREE_WAY, &[("SIDEJOIN_BROADCAST", "right, dim2")])).unwrap();
    assert_eq!(c.join.broadcast, Some(Side::Right));
    assert!(c.join.dimensions[0].broadcast);
}

#[test]
fn append_output_with_a_left_dimension_is_refused() {
    let e = problems(&with(&THREE_WAY, &[("SIDEJOIN_OUTPUT_MODE", "append")]));
    assert_eq!(e.len(), 1, "{e:#?}");
    assert_eq!(e[0].0, "SIDEJOIN_OUTPUT_MODE");
    assert!(
        e[0].1
            .contains("SIDEJOIN_DIM2_JOIN_TYPE=left retracts null-padded rows"),
        "{}",
        e[0].1
    );
    let c = load_vars(&with(
        &THREE_WAY,
        &[
            ("SIDEJOIN_OUTPUT_MODE", "append"),
            ("SIDEJOIN_ALLOW_GENERATED_RETRACTS", "false"),
        ],
    ))
    .unwrap();
    assert_eq!(c.output.mode, OutputMode::Append);
}

#[test]
fn fact_hash_by_other_columns_needs_every_dimension_broadcast() {
    let co = with(
        &THREE_WAY,
        &[
            ("SIDEJOIN_BROADCAST", "right"),
            ("SIDEJOIN_DIM2_ON", "l.customer_id"),
            ("SIDEJOIN_LEFT_HASH_BY", "order_id"),
        ],
    );
    refused(
        &co,
        "SIDEJOIN_LEFT_HASH_BY",
        "a dimension of this star join is co-partitioned with the fact",
    );
    let all_broadcast = with(
        &THREE_WAY,
        &[
            ("SIDEJOIN_BROADCAST", "right,dim2"),
            ("SIDEJOIN_LEFT_HASH_BY", "order_id"),
        ],
    );
    let c = load_vars(&all_broadcast).unwrap();
    assert_eq!(
        c.join.left.hash_by,
        HashBy::Columns(vec!["order_id".into()])
    );
}

#[test]
fn run_needs_every_dimension_topic_apart() {
    let run = |pairs: &[(&str, &str)]| {
        load(
            pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
            Mode::Run,
        )
        .unwrap_err()
        .0
    };
    let base = with(
        &THREE_WAY,
        &[
            ("SIDEJOIN_BOOTSTRAP_SERVERS", "k:9092"),
            ("SIDEJOIN_OUTPUT_TOPIC", "out"),
        ],
    );
    let e = run(&with(&base, &[("SIDEJOIN_DIM2_TOPIC", "customers")]));
    assert_eq!(e[0].var, "SIDEJOIN_DIM2_TOPIC");
    assert!(
        e[0].message
            .contains("must differ from SIDEJOIN_RIGHT_TOPIC"),
        "{}",
        e[0]
    );
    let no_topic: Vec<_> = base
        .into_iter()
        .filter(|(k, _)| *k != "SIDEJOIN_DIM2_TOPIC")
        .collect();
    let e = run(&no_topic);
    assert_eq!(e[0].var, "SIDEJOIN_DIM2_TOPIC");
    assert!(
        e[0].message.contains("required by `sidejoin run`"),
        "{}",
        e[0]
    );
}

#[test]
fn unknown_dimension_variable_suggests_the_nearest() {
    refused(
        &with(&THREE_WAY, &[("SIDEJOIN_DIM2_DEDUP", "true")]),
        "SIDEJOIN_DIM2_DEDUP",
        "unknown variable; did you mean SIDEJOIN_DIM2_",
    );
    refused(
        &with(&THREE_WAY, &[("SIDEJOIN_DIM8_KEY", "x")]),
        "SIDEJOIN_DIM8_KEY",
        "unknown variable",
    );
}
