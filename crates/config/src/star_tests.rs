//! The env-var form of a star join (SPEC §14): `SIDEJOIN_DIM<N>_*` → the exact `JoinSpec`, and
//! every refusal with its variable and message.

use super::*;
use crate::select::SelectItem;

fn load_vars(pairs: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
    load(
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        Mode::Replay,
    )
}

fn dim(n: usize) -> Side {
    Side::at(n).unwrap()
}

fn side(side: Side, key: &str, topic: &str) -> SideSpec {
    SideSpec {
        side,
        key: key.split(',').map(str::to_owned).collect(),
        primary_key: None,
        format: Format::Json,
        dedup: false,
        ttl_ms: 0,
        time: TimeSource::RecordTimestamp,
        hash_by: HashBy::Auto,
        topic: Some(topic.to_owned()),
        csv: None,
    }
}

/// Fact `orders` (key `customer_id`), `customers` co-partitioned on it, `products` broadcast
/// and looked up on the fact's `product_id`.
const THREE_WAY: [(&str, &str); 9] = [
    ("SIDEJOIN_LEFT_TOPIC", "orders"),
    ("SIDEJOIN_LEFT_KEY", "customer_id"),
    ("SIDEJOIN_RIGHT_TOPIC", "customers"),
    ("SIDEJOIN_RIGHT_KEY", "id"),
    ("SIDEJOIN_DIM2_TOPIC", "products"),
    ("SIDEJOIN_DIM2_KEY", "pid"),
    ("SIDEJOIN_DIM2_ON", "l.product_id"),
    ("SIDEJOIN_DIM2_JOIN_TYPE", "LEFT"),
    ("SIDEJOIN_BROADCAST", "dim2"),
];

fn with(
    base: &[(&'static str, &'static str)],
    more: &[(&'static str, &'static str)],
) -> Vec<(&'static str, &'static str)> {
    let mut v: Vec<_> = base
        .iter()
        .filter(|(k, _)| !more.iter().any(|(m, _)| m == k))
        .copied()
        .collect();
    v.extend_from_slice(more);
    v
}

#[test]
fn three_way_env_config() {
    let c = load_vars(&THREE_WAY).unwrap();
    let want = JoinSpec {
        join_type: JoinType::Inner,
        left: side(Side::Left, "customer_id", "orders"),
        right: side(Side::Right, "id", "customers"),
        null_keys_match: false,
        allow_generated_retracts: true,
        select: vec![
            SelectItem::All(Side::Left),
            SelectItem::All(Side::Right),
            SelectItem::All(dim(2)),
        ],
        interval: None,
        broadcast: None,
        dimensions: vec![DimensionSpec {
            source: side(dim(2), "pid", "products"),
            join_type: JoinType::Left,
            on: Side::Left,
            lookup: vec!["product_id".into()],
            broadcast: true,
        }],
        aliases: Vec::new(),
    };
    assert_eq!(c.join, want);
    assert!(c.join.is_star());
    // The default output key is the fact's join key (no primary key anywhere).
    assert_eq!(c.output.key[0].name, "customer_id");
    assert_eq!(
        c.output.key[0].source,
        KeySource::Input(Side::Left, "customer_id".into())
    );
}

/// Fact keyed `(a, b)`; `right` broadcast; `dim2` broadcast and looked up on the first
/// dimension's `region`; `dim3` csv, co-partitioned with the fact.
const FOUR_WAY: &[(&str, &str)] = &[
    ("SIDEJOIN_LEFT_KEY", "a,b"),
    ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
    ("SIDEJOIN_LEFT_FORMAT", "upsert-json"),
    ("SIDEJOIN_RIGHT_KEY", "ra,rb"),
    ("SIDEJOIN_RIGHT_PRIMARY_KEY", "ra,rb"),
    ("SIDEJOIN_JOIN_TYPE", "left"),
    ("SIDEJOIN_DIM2_KEY", "k"),
    ("SIDEJOIN_DIM2_ON", "r.region"),
    ("SIDEJOIN_DIM2_PRIMARY_KEY", "k"),
    ("SIDEJOIN_DIM2_STATE_TTL", "1h"),
    ("SIDEJOIN_DEDUP_DIM2", "true"),
    ("SIDEJOIN_DIM3_KEY", "x,y"),
    ("SIDEJOIN_DIM3_ON", "l.a,l.b"),
    ("SIDEJOIN_DIM3_FORMAT", "csv"),
    ("SIDEJOIN_DIM3_COLUMNS", "x STRING, y INT, z DOUBLE"),
    ("SIDEJOIN_DIM3_CSV_FIELD_DELIMITER", ";"),
    ("SIDEJOIN_BROADCAST", "Right,dim2"),
    (
        "SIDEJOIN_SELECT",
        "l.id, r.name, d2.label AS region, dim3.z",
    ),
    ("SIDEJOIN_STATE_TTL", "1d"),
];

#[test]
fn four_way_env_config_with_a_dimension_keyed_on_another() {
    let c = load_vars(FOUR_WAY).unwrap();
    let j = &c.join;
    assert_eq!(j.join_type, JoinType::Left);
    assert_eq!(j.broadcast, Some(Side::Right));
    assert_eq!(j.dimensions.len(), 2);
    let d2 = &j.dimensions[0];
    assert_eq!(
        (d2.on, d2.lookup.clone(), d2.join_type, d2.broadcast),
        (
            Side::Right,
            vec!["region".to_owned()],
            JoinType::Inner,
            true
        )
    );
    assert_eq!(d2.source.side, dim(2));
    assert_eq!(d2.source.primary_key, Some(vec!["k".to_owned()]));
    assert_eq!((d2.source.ttl_ms, d2.source.dedup), (3_600_000, true));
    let d3 = &j.dimensions[1];
    assert_eq!(
        (d3.on, d3.lookup.clone(), d3.broadcast),
        (Side::Left, vec!["a".to_owned(), "b".to_owned()], false)
    );
    assert_eq!(
        (d3.source.ttl_ms, d3.source.format),
        (86_400_000, Format::Csv)
    );
    let csv = d3.source.csv.as_ref().unwrap();
    assert_eq!(csv.delimiter, b';');
    assert_eq!(csv.columns[1].kind, ColumnKind::Integer);
    assert_eq!(
        j.select[2],
        SelectItem::Column {
            side: dim(2),
            column: "label".into(),
            alias: Some("region".into())
        }
    );
    assert_eq!(
        j.select[3],
        SelectItem::Column {
            side: dim(3),
            column: "z".into(),
            alias: None
        }
    );
    assert_eq!(j.source_named("DIM3"), Some(dim(3)));
    assert_eq!(j.source_named("dim4"), None);
    // The fact's primary key is the default key; dim3 has none, so it is not provably unique.
    assert_eq!(c.output.key[0].name, "id");
    let why = key_uniqueness(j, &c.output.key).unwrap_err();
    assert_eq!(
        why,
        "the dim3 side has no primary key, so one left row can match many"
    );
}

#[test]
fn star_output_key_is_unique_when_every_dimension_is_looked_up_by_its_primary_key() {
    let base = with(
        &THREE_WAY,
        &[
            ("SIDEJOIN_LEFT_PRIMARY_KEY", "oid"),
            ("SIDEJOIN_RIGHT_PRIMARY_KEY", "id"),
            ("SIDEJOIN_OUTPUT_MODE", "upsert"),
        ],
    );
    let c = load_vars(&base).unwrap();
    assert_eq!(c.output.key[0].name, "oid");
    assert_eq!(
        key_uniqueness(&c.join, &c.output.key).unwrap_err(),
        "the dim2 side has no primary key, so one left row can match many"
    );
    assert!(
        c.warnings[0].contains("not provably unique"),
        "{:?}",
        c.warnings
    );
    let c = load_vars(&with(&base, &[("SIDEJOIN_DIM2_PRIMARY_KEY", "pid")])).unwrap();
    assert_eq!(key_uniqueness(&c.join, &c.output.key), Ok(()));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
}

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
