//! How the SQL front end places the sides: `BROADCAST` and `HASH_BY_KEY` hints, and a table's
//! `'key.fields'` declaring its topic keyed by the join key (SPEC §6).

use sidejoin::config::{HashBy, Mode};

use super::sql_errors::{load, TABLES};

#[test]
fn broadcast_and_hash_by_key_hints_set_their_variables() {
    let sql = format!(
        "{TABLES}SELECT /*+ BROADCAST(b), HASH_BY_KEY('a'='v') */ a.v FROM a JOIN b ON a.id = b.id"
    );
    let run = [
        ("SIDEJOIN_BOOTSTRAP_SERVERS", "localhost:9092"),
        ("SIDEJOIN_OUTPUT_TOPIC", "out"),
    ];
    let cfg = load(&sql, &run, Mode::Run).expect("MRS's combination is accepted");
    assert_eq!(cfg.join.broadcast, Some(sidejoin::change::Side::Right));
    assert_eq!(cfg.join.left.hash_by, HashBy::Columns(vec!["v".to_owned()]));
}

#[test]
fn key_fields_naming_the_join_columns_declare_a_side_keyed_and_others_do_not() {
    let table = |name: &str, fields: &str| {
        format!(
            "CREATE TABLE {name} (id INT, v STRING) WITH ('connector' = 'kafka', 'topic' = '{name}', \
             'key.format' = 'json', 'key.fields' = '{fields}', 'value.format' = 'json');\n"
        )
    };
    let sql = format!(
        "{}{}SELECT a.v FROM a JOIN b ON a.id = b.id",
        table("a", "id"),
        table("b", "v")
    );
    let cfg = load(&sql, &[], Mode::Replay).expect("valid");
    assert_eq!(
        cfg.join.left.hash_by,
        HashBy::Keyed,
        "keyed by the join key"
    );
    assert_eq!(
        cfg.join.right.hash_by,
        HashBy::Auto,
        "keyed by another column"
    );
    let e = load(&sql, &[("SIDEJOIN_LEFT_HASH_BY", "id")], Mode::Replay).unwrap_err();
    assert!(
        e.contains("SIDEJOIN_LEFT_HASH_BY") && e.contains("contradicts SIDEJOIN_SQL"),
        "{e}"
    );
}
