//! Chains of joins as star joins (SPEC §14): the settings and the exact `JoinSpec` they mean,
//! and every refusal with its position.

use super::translate;
use crate::select::SelectItem;
use crate::{load, DimensionSpec, JoinType, Mode, Side};

const KAFKA: &str = "'connector' = 'kafka', 'format' = 'json'";

/// Tables A, B, C, D on lines 1 … 4 (each with `id`, a join column and a payload); the query
/// goes on line 5.
fn tables() -> String {
    let t = |name: &str, cols: &str| {
        format!(
            "CREATE TABLE {name} ({cols}) WITH ({KAFKA}, 'topic' = 't{}');\n",
            name.to_ascii_lowercase()
        )
    };
    [
        t("A", "a1 INT, a2 STRING, ts TIMESTAMP(3)"),
        t("B", "b1 INT, b2 STRING, bk INT"),
        t("C", "c1 INT, c2 STRING"),
        t("D", "d1 INT, d2 STRING"),
    ]
    .concat()
}

fn settings(query: &str) -> Vec<(String, String)> {
    let sql = format!("{}{query}", tables());
    translate(&sql)
        .unwrap_or_else(|e| panic!("{e}\n{sql}"))
        .settings
        .items
        .into_iter()
        .map(|s| (s.var.trim_start_matches("SIDEJOIN_").to_owned(), s.value))
        .filter(|(k, _)| !k.ends_with("_FORMAT"))
        .collect()
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn join_spec(query: &str) -> crate::JoinSpec {
    let sql = format!("{}{query}", tables());
    load([("SIDEJOIN_SQL".to_owned(), sql)], Mode::Replay)
        .unwrap_or_else(|e| panic!("{e}"))
        .join
}

fn dim(n: usize) -> Side {
    Side::at(n).unwrap()
}

fn cols(side: Side, names: &[&str]) -> Vec<SelectItem> {
    names
        .iter()
        .map(|c| SelectItem::Column {
            side,
            column: c.to_string(),
            alias: None,
        })
        .collect()
}

const SEED: &str =
    "SELECT /*+ BROADCAST(A, C) */ a2, b2, c2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1";

#[test]
fn the_seed_query_reads_b_as_the_fact() {
    assert_eq!(
        settings(SEED),
        pairs(&[
            ("LEFT_TOPIC", "tb"),
            ("RIGHT_TOPIC", "ta"),
            ("DIM2_TOPIC", "tc"),
            ("JOIN_TYPE", "inner"),
            ("LEFT_KEY", "b1"),
            ("RIGHT_KEY", "a1"),
            ("DIM2_JOIN_TYPE", "inner"),
            ("DIM2_KEY", "c1"),
            ("DIM2_ON", "r.a1"),
            ("BROADCAST", "right,dim2"),
            ("SELECT", "r.a2, l.b2, dim2.c2"),
        ])
    );
    let j = join_spec(SEED);
    assert_eq!(j.join_type, JoinType::Inner);
    assert_eq!(
        (j.left.key.clone(), j.left.topic.as_deref()),
        (vec!["b1".to_owned()], Some("tb"))
    );
    assert_eq!(
        (j.right.key.clone(), j.right.topic.as_deref()),
        (vec!["a1".to_owned()], Some("ta"))
    );
    assert_eq!(j.broadcast, Some(Side::Right));
    let mut c = j.right.clone();
    c.side = dim(2);
    c.key = vec!["c1".into()];
    c.topic = Some("tc".into());
    assert_eq!(
        j.dimensions,
        vec![DimensionSpec {
            source: c,
            join_type: JoinType::Inner,
            on: Side::Right,
            lookup: vec!["a1".into()],
            broadcast: true,
        }]
    );
    let mut select = cols(Side::Right, &["a2"]);
    select.extend(cols(Side::Left, &["b2"]));
    select.extend(cols(dim(2), &["c2"]));
    assert_eq!(j.select, select);
    assert_eq!(
        j.aliases,
        [
            ("b".to_owned(), Side::Left),
            ("a".into(), Side::Right),
            ("c".into(), dim(2))
        ]
    );
}

/// Fact A (alias f), B co-partitioned, C broadcast and looked up on B's `bk`, D (alias dd)
/// co-partitioned; LEFT, INNER and LEFT joins.
const FOUR_WAY: &str =
    "SELECT /*+ BROADCAST(C), OPTIONS('duplicate.dd'='true') */ f.a2, C.c2 AS label \
     FROM A AS f LEFT JOIN B ON f.a1 = B.b1 JOIN C ON B.bk = C.c1 LEFT JOIN D dd ON dd.d1 = f.a1";

#[test]
fn four_way_chain_with_a_dimension_keyed_on_another_and_left_joins() {
    let s = settings(FOUR_WAY);
    let get = |k: &str| s.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("JOIN_TYPE"), Some("left"));
    assert_eq!(
        (get("LEFT_KEY"), get("RIGHT_KEY")),
        (Some("a1"), Some("b1"))
    );
    assert_eq!(
        (get("DIM2_KEY"), get("DIM2_ON")),
        (Some("c1"), Some("r.bk"))
    );
    assert_eq!(get("DIM2_JOIN_TYPE"), Some("inner"));
    assert_eq!(
        (get("DIM3_KEY"), get("DIM3_ON")),
        (Some("d1"), Some("l.a1"))
    );
    assert_eq!(get("DIM3_JOIN_TYPE"), Some("left"));
    assert_eq!(get("BROADCAST"), Some("dim2"));
    assert_eq!(get("DEDUP_DIM3"), Some("true"));
    assert_eq!(get("SELECT"), Some("l.a2, dim2.c2 AS label"));
}

#[test]
fn four_way_chain_join_spec() {
    let j = join_spec(FOUR_WAY);
    assert_eq!(j.broadcast, None);
    let d: Vec<_> = j
        .dimensions
        .iter()
        .map(|d| {
            (
                d.source.side,
                d.join_type,
                d.on,
                d.lookup.clone(),
                d.broadcast,
                d.source.dedup,
            )
        })
        .collect();
    assert_eq!(
        d,
        [
            (
                dim(2),
                JoinType::Inner,
                Side::Right,
                vec!["bk".to_owned()],
                true,
                false
            ),
            (
                dim(3),
                JoinType::Left,
                Side::Left,
                vec!["a1".to_owned()],
                false,
                true
            ),
        ]
    );
    assert_eq!(j.source_named("DD"), Some(dim(3)));
    assert_eq!(j.source_named("f"), Some(Side::Left));
}

#[test]
fn a_fact_joined_third_is_placed_first_and_star_keeps_from_order() {
    let q = "SELECT /*+ BROADCAST(A, B, D) */ * FROM A JOIN B ON A.a1 = B.bk \
             JOIN C ON C.c1 = B.b1 LEFT JOIN D ON D.d1 = C.c1";
    let s = settings(q);
    let get = |k: &str| s.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    // C is the fact; B is reached through C's join, A through B's.
    assert_eq!(get("LEFT_TOPIC"), Some("tc"));
    assert_eq!(
        (get("LEFT_KEY"), get("RIGHT_KEY")),
        (Some("c1"), Some("b1"))
    );
    assert_eq!(
        (get("DIM2_TOPIC"), get("DIM2_KEY"), get("DIM2_ON")),
        (Some("ta"), Some("a1"), Some("r.bk"))
    );
    assert_eq!(
        (get("DIM3_TOPIC"), get("DIM3_ON"), get("DIM3_JOIN_TYPE")),
        (Some("td"), Some("l.c1"), Some("left"))
    );
    assert_eq!(get("JOIN_TYPE"), Some("inner"));
    assert_eq!(get("BROADCAST"), Some("right,dim2,dim3"));
    assert_eq!(
        get("SELECT"),
        Some("dim2.a1, dim2.a2, dim2.ts, r.b1, r.b2, r.bk, l.c1, l.c2, dim3.d1, dim3.d2")
    );
}

#[test]
fn a_co_partitioned_dimension_takes_the_facts_key_order() {
    let sql = "CREATE TABLE F (x INT, y INT) WITH ('connector' = 'kafka', 'format' = 'json');\n\
               CREATE TABLE G (gx INT, gy INT) WITH ('connector' = 'kafka', 'format' = 'json');\n\
               CREATE TABLE H (hx INT, hy INT) WITH ('connector' = 'kafka', 'format' = 'json');\n\
               SELECT F.x FROM F JOIN G ON F.x = G.gx AND F.y = G.gy JOIN H ON H.hy = F.y AND H.hx = F.x";
    let s = translate(sql).unwrap().settings;
    assert_eq!(s.get("SIDEJOIN_LEFT_KEY").unwrap().value, "x,y");
    assert_eq!(s.get("SIDEJOIN_DIM2_KEY").unwrap().value, "hx,hy");
    assert_eq!(s.get("SIDEJOIN_DIM2_ON").unwrap().value, "l.x,l.y");
    assert!(s.get("SIDEJOIN_BROADCAST").is_none());
}

/// The query on line 5 is refused at `column`, quoting `construct`, saying `why`.
fn refused(query: &str, column: u64, construct: &str, why: &str) {
    let sql = format!("{}{query}", tables());
    let e = translate(&sql).map(|_| ()).unwrap_err();
    let text = e.to_string();
    assert_eq!((e.at.line, e.at.column), (5, column), "{text}");
    assert_eq!(e.construct, construct, "{text}");
    assert!(e.message.contains(why), "expected {why:?} in {text}");
}

/// A query (line 5), the column it is refused at, the construct quoted and part of the reason.
type Refusal = (&'static str, u64, &'static str, &'static str);

const REFUSALS: [Refusal; 12] = [
    (
        "SELECT /*+ BROADCAST(A, C) */ a2 FROM A LEFT JOIN B ON a1 = b1 JOIN C ON a1 = c1",
        51,
        "B",
        "the preserved side of a LEFT join in a star join must be the fact: `B` (the first table not broadcast) is this LEFT JOIN's right operand",
    ),
    (
        "SELECT /*+ BROADCAST(A, B, D) */ a2 FROM A LEFT JOIN B ON a1 = b1 JOIN C ON b1 = c1 JOIN D ON d1 = c1",
        54,
        "B",
        "this LEFT JOIN comes before the fact `C`",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 RIGHT JOIN C ON a1 = c1",
        47,
        "C",
        "a RIGHT JOIN in a chain of joins would preserve a dimension's rows",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 FULL OUTER JOIN C ON a1 = c1",
        52,
        "C",
        "a FULL JOIN in a chain of joins",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1 AND b2 = c2",
        58,
        "b2 = c2",
        "reads `A` and `B`: in a star join each table is looked up on the columns of one earlier table",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = b1",
        46,
        "a1 = b1",
        "compares two earlier tables",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1 AND A.ts > A.ts",
        58,
        "A.ts > A.ts",
        "an interval condition is not supported in a chain of joins",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 JOIN C ON a2 = c2",
        46,
        "a2 = c2",
        "`C` is not broadcast, so it is co-partitioned with the fact `A` and must be joined on exactly the fact's key columns (a1)",
    ),
    (
        "SELECT /*+ BROADCAST(A, B), BROADCAST(C) */ a2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1",
        12,
        "BROADCAST(A, B)",
        "every table of the chain is broadcast",
    ),
    (
        "SELECT /*+ BROADCAST(A, C), OPTIONS('duplicate.left'='true') */ a2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1",
        37,
        "OPTIONS('duplicate.left'='true')",
        "`duplicate.left` is ambiguous in a chain of joins",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 JOIN A ON a1 = a1",
        41,
        "A",
        "a self-join is not supported",
    ),
    (
        "SELECT a2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1 WHERE a2 = 'x'",
        60,
        "a2 = 'x'",
        "WHERE filters are not supported",
    ),
];

#[test]
fn refusals_name_the_construct() {
    for (query, column, construct, why) in REFUSALS {
        refused(query, column, construct, why);
    }
}
