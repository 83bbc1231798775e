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

#[path = "star_refusal_tests.rs"]
mod refusals;
