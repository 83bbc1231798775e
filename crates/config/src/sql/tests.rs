//! What the accepted forms translate to, setting by setting.

use super::translate;

const KAFKA: &str =
    "'connector' = 'kafka', 'properties.bootstrap.servers' = 'k:9092', 'properties.group.id' = 'g'";

fn settings(sql: &str) -> Vec<(String, String)> {
    translate(sql)
        .unwrap_or_else(|e| panic!("{e}\n{sql}"))
        .settings
        .items
        .into_iter()
        .map(|s| (s.var.trim_start_matches("SIDEJOIN_").to_owned(), s.value))
        .collect()
}

fn get<'a>(s: &'a [(String, String)], k: &str) -> Option<&'a str> {
    s.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

fn tables(a_extra: &str) -> String {
    format!(
        "CREATE TABLE A (a1 INT, a2 STRING, ts TIMESTAMP(3){a_extra}) WITH ({KAFKA}, 'topic' = 'ta', 'format' = 'json');\n\
         CREATE TABLE B (b1 INT, b2 STRING, ts TIMESTAMP(3)) WITH ({KAFKA}, 'topic' = 'tb', 'format' = 'debezium-json');\n"
    )
}

#[test]
fn where_form_with_unqualified_columns_and_broadcast() {
    let s = settings(&format!(
        "{}SELECT /*+ BROADCAST(A) */ a2, b2 FROM A, B /*+ OPTIONS('topic'='tb2') */ WHERE a1 = b1",
        tables("")
    ));
    assert_eq!(get(&s, "JOIN_TYPE"), Some("inner"));
    assert_eq!(get(&s, "LEFT_KEY"), Some("a1"));
    assert_eq!(get(&s, "RIGHT_KEY"), Some("b1"));
    assert_eq!(get(&s, "SELECT"), Some("l.a2, r.b2"));
    assert_eq!(get(&s, "BROADCAST"), Some("left"));
    // A dynamic table option replaces the WITH option of the same key.
    assert_eq!(get(&s, "RIGHT_TOPIC"), Some("tb2"));
    assert_eq!(get(&s, "RIGHT_FORMAT"), Some("debezium-json"));
    assert_eq!(get(&s, "BOOTSTRAP_SERVERS"), Some("k:9092"));
    assert_eq!(get(&s, "APPLICATION_ID"), Some("g"));
}

#[test]
fn interval_written_from_the_right_side_is_mirrored() {
    // tr BETWEEN tl - 1 min AND tl + 2 min  ⇔  -2 min <= tl - tr <= 1 min
    let s = settings(&format!(
        "{}SELECT A.a2 FROM A RIGHT OUTER JOIN B ON A.a1 = B.b1 AND B.ts BETWEEN A.ts - INTERVAL '1' MINUTE AND A.ts + INTERVAL '2' MINUTE",
        tables(", WATERMARK FOR ts AS ts - INTERVAL '3' SECOND")
    ));
    assert_eq!(get(&s, "JOIN_TYPE"), Some("right"));
    assert_eq!(get(&s, "INTERVAL_LOWER"), Some("-2m"));
    assert_eq!(get(&s, "INTERVAL_UPPER"), Some("1m"));
    assert_eq!(get(&s, "LEFT_TIME"), Some("ts"));
    assert_eq!(get(&s, "WATERMARK_DELAY"), Some("3s"));
}

#[test]
fn comparisons_strict_bounds_and_state_ttl() {
    let s = settings(&format!(
        "SET 'table.exec.state.ttl' = '1 h';\n{}SELECT /*+ STATE_TTL('B'='1d') */ x.a2 AS name, y.* FROM A AS x FULL JOIN B y ON x.a1 = y.b1 AND x.ts > y.ts - INTERVAL '10' SECOND AND x.ts <= y.ts",
        tables("")
    ));
    assert_eq!(get(&s, "STATE_TTL"), Some("1h"));
    assert_eq!(get(&s, "RIGHT_STATE_TTL"), Some("1d"));
    assert_eq!(get(&s, "INTERVAL_LOWER"), Some("-9999ms"));
    assert_eq!(get(&s, "INTERVAL_UPPER"), Some("0"));
    assert_eq!(get(&s, "SELECT"), Some("l.a2 AS name, r.b1, r.b2, r.ts"));
}

#[test]
fn sinks_and_dynamic_table_options() {
    let sql = format!(
        "{}CREATE TABLE out (id INT, name STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('connector' = 'upsert-kafka', 'topic' = 'o', 'properties.bootstrap.servers' = 'k:9092', 'key.format' = 'json', 'value.format' = 'json');\n\
         INSERT INTO out SELECT A.a1, B.b2 FROM A /*+ OPTIONS('scan.startup.mode'='latest-offset') */ LEFT JOIN B ON A.a1 = B.b1",
        tables("")
    );
    let s = settings(&sql);
    assert_eq!(get(&s, "OUTPUT_MODE"), Some("upsert"));
    assert_eq!(get(&s, "OUTPUT_KEY"), Some("id"));
    assert_eq!(get(&s, "OUTPUT_TOPIC"), Some("o"));
    assert_eq!(get(&s, "SELECT"), Some("l.a1 AS id, r.b2 AS name"));
    assert_eq!(get(&s, "AUTO_OFFSET_RESET"), Some("latest"));
}

#[test]
fn two_tables_disagreeing_on_one_setting() {
    let sql = "CREATE TABLE A (a1 INT) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json', 'properties.bootstrap.servers' = 'one:9092');\n\
               CREATE TABLE B (b1 INT) WITH ('connector' = 'kafka', 'topic' = 'b', 'format' = 'json', 'properties.bootstrap.servers' = 'two:9092');\n\
               SELECT A.a1 FROM A JOIN B ON A.a1 = B.b1";
    let e = translate(sql).unwrap_err().to_string();
    assert!(
        e.contains("line 2, column 88: `'properties.bootstrap.servers' = 'two:9092'`: means SIDEJOIN_BOOTSTRAP_SERVERS=\"two:9092\", but `'properties.bootstrap.servers' = 'one:9092'` at line 1, column 88"),
        "{e}"
    );
}

#[test]
fn a_self_join_is_refused() {
    let e = translate(&format!(
        "{}SELECT x.a2 FROM A x JOIN A y ON x.a1 = y.a1",
        tables("")
    ))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("line 3, column 27: `A`: a self-join is not supported"),
        "{e}"
    );
}
