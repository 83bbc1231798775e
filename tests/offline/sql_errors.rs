//! Scripts outside sidejoin's SQL subset are refused with an error that quotes the construct and
//! gives its line and column (issue 14, acceptance 3); so are a variable that contradicts the
//! SQL and an unqualified column both tables have. Positions are counted by hand from the
//! scripts below (1-based, as editors show them).

use sidejoin::config::{self, Mode};

/// Two JSON tables (lines 1 and 2) and the query on line 3.
pub(crate) const TABLES: &str = "CREATE TABLE a (id INT, v STRING, t TIMESTAMP(3)) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json');\n\
CREATE TABLE b (id INT, w STRING, v STRING, t TIMESTAMP(3)) WITH ('connector' = 'kafka', 'topic' = 'b', 'format' = 'json');\n";

pub(crate) fn load(
    sql: &str,
    extra: &[(&str, &str)],
    mode: Mode,
) -> Result<config::Config, String> {
    let mut env = vec![("SIDEJOIN_SQL".to_owned(), sql.to_owned())];
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    config::load(env, mode).map_err(|e| e.to_string())
}

pub(crate) fn error_of(sql: &str) -> String {
    match load(sql, &[], Mode::Replay) {
        Ok(_) => panic!("accepted:\n{sql}"),
        Err(e) => e,
    }
}

/// The query on line 3 is refused at `column`, quoting `construct`, saying `why`.
pub(crate) fn refused(query: &str, column: u64, construct: &str, why: &str) {
    let e = error_of(&format!("{TABLES}{query}"));
    let at = format!("line 3, column {column}: `{construct}`");
    assert!(e.contains(&at), "expected {at:?} in:\n{e}");
    assert!(e.contains(why), "expected {why:?} in:\n{e}");
    assert!(
        e.contains("SIDEJOIN_SQL"),
        "the error names the variable:\n{e}"
    );
}

#[test]
fn group_by() {
    refused(
        "SELECT a.v FROM a JOIN b ON a.id = b.id GROUP BY a.v",
        50,
        "GROUP BY a.v",
        "GROUP BY is not supported",
    );
}

#[test]
fn a_function_in_the_select_list() {
    refused(
        "SELECT UPPER(a.v) FROM a JOIN b ON a.id = b.id",
        8,
        "UPPER(a.v)",
        "expressions and functions are not supported",
    );
}

#[test]
fn a_non_equality_join_condition() {
    refused(
        "SELECT a.v FROM a JOIN b ON a.id <> b.id",
        29,
        "a.id <> b.id",
        "unsupported join condition",
    );
}

#[test]
fn an_unknown_hint() {
    refused(
        "SELECT /*+ FOO(a) */ a.v FROM a JOIN b ON a.id = b.id",
        12,
        "FOO(a)",
        "unknown hint",
    );
}

#[test]
fn an_unknown_join_option() {
    refused(
        "SELECT /*+ OPTIONS('foo'='1') */ a.v FROM a JOIN b ON a.id = b.id",
        20,
        "OPTIONS('foo'='1')",
        "unknown join option `foo`",
    );
}

#[test]
fn an_unknown_dynamic_table_option() {
    refused(
        "SELECT a.v FROM a JOIN /*+ OPTIONS('foo'='1') */ b ON a.id = b.id",
        36,
        // Quoted without its value: an option sidejoin does not know may hold a secret.
        "'foo' = '…'",
        "unsupported option for a source table",
    );
}

#[test]
fn a_where_filter() {
    refused(
        "SELECT a.v FROM a JOIN b ON a.id = b.id WHERE a.v = 'x'",
        47,
        "a.v = 'x'",
        "WHERE filters are not supported",
    );
}

#[test]
fn a_subquery() {
    refused(
        "SELECT x.v FROM (SELECT * FROM a) x JOIN b ON x.id = b.id",
        // sqlparser's span of a derived table starts inside the parenthesis.
        18,
        "(SELECT * FROM a) x",
        "subqueries",
    );
}

#[test]
fn using_and_cross_joins() {
    refused(
        "SELECT a.v FROM a JOIN b USING (id)",
        24,
        "b",
        "USING, NATURAL and CROSS joins are not supported",
    );
    refused(
        "SELECT a.v FROM a CROSS JOIN b",
        30,
        "b",
        "unsupported join kind",
    );
    refused("SELECT a.v FROM a, b", 20, "b", "FROM a, b needs WHERE");
}

#[test]
fn an_unsupported_statement_and_setting() {
    refused("DROP TABLE a", 1, "DROP TABLE a", "unsupported statement");
    refused(
        "SET 'parallelism.default' = '2'",
        1,
        "SET 'parallelism.default' = '2'",
        "unsupported setting",
    );
}

#[test]
fn an_interval_in_months() {
    refused(
        "SELECT a.v FROM a JOIN b ON a.id = b.id AND a.t BETWEEN b.t - INTERVAL '1' MONTH AND b.t",
        // sqlparser's span of an INTERVAL starts at its value ('1', column 72), not at the
        // keyword (column 63).
        72,
        "INTERVAL '1' MONTH",
        "expected INTERVAL 'n' SECOND|MINUTE|HOUR|DAY",
    );
}

#[test]
fn a_second_query() {
    let e = error_of(&format!(
        "{TABLES}SELECT a.v FROM a JOIN b ON a.id = b.id;\n  SELECT a.id FROM a JOIN b ON a.id = b.id"
    ));
    assert!(e.contains("line 4, column 3: `SELECT a.id FROM a"), "{e}");
    assert!(
        e.contains(
            "a second query: sidejoin runs one join (the first query is at line 3, column 1)"
        ),
        "{e}"
    );
}

/// Errors in the DDL point into it.
fn refused_ddl(ddl: &str, line: u64, column: u64, construct: &str, why: &str) {
    let sql = format!("{ddl}\nSELECT a.id FROM a JOIN b ON a.id = b.id");
    let e = error_of(&sql);
    let at = format!("line {line}, column {column}: `{construct}`");
    assert!(e.contains(&at), "expected {at:?} in:\n{e}");
    assert!(e.contains(why), "expected {why:?} in:\n{e}");
}

const B: &str =
    "CREATE TABLE b (id INT) WITH ('connector' = 'kafka', 'topic' = 'b', 'format' = 'json');";

#[test]
fn ddl_constructs() {
    refused_ddl(
        &format!("CREATE TABLE a (\n  id INT,\n  ts TIMESTAMP(3) METADATA FROM 'timestamp'\n) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json');\n{B}"),
        3,
        19,
        "METADATA",
        "unsupported column option",
    );
    refused_ddl(
        &format!("CREATE TABLE a (id INT, v AS id + 1) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json');\n{B}"),
        1,
        30,
        "id + 1",
        "computed columns are not supported",
    );
    refused_ddl(
        &format!("CREATE TABLE a (id INT) WITH (\n  'connector' = 'hudi',\n  'path' = 'x');\n{B}"),
        2,
        3,
        "'connector' = 'hudi'",
        "unsupported connector",
    );
    refused_ddl(
        &format!("CREATE TABLE a (id INT) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json', 'scan.startup.mode' = 'timestamp');\n{B}"),
        1,
        88,
        "'scan.startup.mode' = 'timestamp'",
        "supported startup modes",
    );
    refused_ddl(
        &format!("CREATE TABLE a (id INT) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'protobuf');\n{B}"),
        1,
        69,
        "'format' = 'protobuf'",
        "unsupported format",
    );
}

#[test]
fn an_unqualified_column_both_tables_have() {
    refused(
        "SELECT v FROM a JOIN b ON a.id = b.id",
        8,
        "v",
        "ambiguous column: both a and b have `v`",
    );
    // Unqualified names that only one table has are fine (seed 001's `a2, b2` form).
    let c = load(
        &format!("{TABLES}SELECT w FROM a, b WHERE a.id = b.id"),
        &[],
        Mode::Replay,
    )
    .unwrap();
    assert_eq!(
        c.sql_settings
            .iter()
            .find(|(k, _)| k == "SIDEJOIN_SELECT")
            .unwrap()
            .1,
        "r.w"
    );
}

#[test]
fn a_variable_that_contradicts_the_sql() {
    let sql = format!("{TABLES}SELECT a.v FROM a\n  LEFT JOIN b ON a.id = b.id");
    let e = load(&sql, &[("SIDEJOIN_JOIN_TYPE", "inner")], Mode::Replay).unwrap_err();
    assert!(
        e.contains("SIDEJOIN_JOIN_TYPE=\"inner\": contradicts SIDEJOIN_SQL: `LEFT JOIN` at line 4, column 13 means SIDEJOIN_JOIN_TYPE=\"left\""),
        "{e}"
    );
    // The same value, in any case, is no contradiction; variables the SQL leaves alone apply.
    let c = load(
        &sql,
        &[
            ("SIDEJOIN_JOIN_TYPE", "LEFT"),
            ("SIDEJOIN_STATE_DIR", "/tmp/x"),
        ],
        Mode::Replay,
    )
    .unwrap();
    assert_eq!(c.process.state_dir.to_str(), Some("/tmp/x"));
    // Topics are case-sensitive: another case is another topic.
    let e = load(&sql, &[("SIDEJOIN_LEFT_TOPIC", "A")], Mode::Replay).unwrap_err();
    assert!(
        e.contains("SIDEJOIN_LEFT_TOPIC=\"A\": contradicts SIDEJOIN_SQL: `'topic' = 'a'` at line 1, column 80"),
        "{e}"
    );
}

#[test]
fn a_hash_by_key_hint_off_the_join_key_without_broadcast_names_the_hint() {
    let sql =
        format!("{TABLES}SELECT /*+ HASH_BY_KEY('a'='v') */ a.v FROM a JOIN b ON a.id = b.id");
    let e = load(&sql, &[], Mode::Replay).unwrap_err();
    assert!(e.contains("SIDEJOIN_LEFT_HASH_BY"), "{e}");
    assert!(e.contains("repartitioned by its join key (id"), "{e}");
    assert!(
        e.contains("(set by the SQL: `HASH_BY_KEY('a'='v')` at line 3, column 12)"),
        "{e}"
    );
}

#[test]
fn a_script_that_does_not_parse_names_the_position() {
    let e = error_of(&format!(
        "{TABLES}SELECT a.v FROM a JOIN b ON a.id = = b.id"
    ));
    assert!(e.contains("line 3, column 36"), "{e}");
}

#[test]
fn seed001_broadcast_job_reads_a_hudi_table() {
    // Seed 001's BROADCAST/HASH_BY_KEY example joins a Hudi table, which sidejoin cannot read.
    let sql = "CREATE TABLE large_table (\n  user_id INT,\n  id INT,\n  u_name STRING,\n  PRIMARY KEY (user_id) NOT ENFORCED\n) WITH (\n 'connector' = 'hudi',\n 'path' = 'hdfs://hacluster/tmp/hudi/stream_mor',\n 'read.streaming.enabled' = 'true'\n);\n\
CREATE TABLE small_table(\n  id INT,\n  age int\n) WITH (\n  'connector' = 'kafka',\n  'topic' = 'small_table',\n  'properties.bootstrap.servers' = 'localhost:9092',\n  'scan.startup.mode' = 'latest-offset',\n  'format' = 'csv'\n);\n\
SELECT\n  /*+ BROADCAST(s),HASH_BY_KEY('l'='user_id') */\n  l.user_id,\n  s.id,\n  l.u_name,\n  s.age\nFROM\n  large_table l\n  JOIN small_table s ON l.id = s.id;";
    let e = error_of(sql);
    assert!(
        e.contains("line 7, column 2: `'connector' = 'hudi'`: unsupported connector here (supported: kafka, upsert-kafka)"),
        "{e}"
    );
}

#[test]
fn the_script_given_twice_or_unreadable() {
    let both = config::load(
        [
            ("SIDEJOIN_SQL".to_owned(), "SELECT 1".to_owned()),
            ("SIDEJOIN_SQL_FILE".to_owned(), "/x.sql".to_owned()),
        ],
        Mode::Replay,
    )
    .unwrap_err()
    .to_string();
    assert!(
        both.contains("SIDEJOIN_SQL and SIDEJOIN_SQL_FILE are both set"),
        "{both}"
    );
    let missing = config::load(
        [(
            "SIDEJOIN_SQL_FILE".to_owned(),
            "/nonexistent/job.sql".to_owned(),
        )],
        Mode::Replay,
    )
    .unwrap_err()
    .to_string();
    assert!(
        missing.contains("SIDEJOIN_SQL_FILE=\"/nonexistent/job.sql\": cannot read the SQL file"),
        "{missing}"
    );
    let empty = error_of("-- nothing but a comment\n");
    assert!(empty.contains("nothing to run"), "{empty}");
}

#[test]
fn kafka_properties_in_the_sql_are_never_shown() {
    let sql = format!(
        "{}SELECT a.v FROM a JOIN b ON a.id = b.id",
        TABLES.replace(
            "'format' = 'json');\nCREATE TABLE b",
            "'format' = 'json', 'properties.sasl.password' = 'hunter2');\nCREATE TABLE b"
        )
    );
    let c = load(&sql, &[], Mode::Replay).unwrap();
    assert!(c
        .sql_settings
        .contains(&("SIDEJOIN_KAFKA_SASL_PASSWORD".into(), "hunter2".into())));
    let plan = sidejoin::check::sql_variables(&c);
    assert!(
        plan.contains("# SIDEJOIN_KAFKA_SASL_PASSWORD: set by the SQL, value not shown"),
        "{plan}"
    );
    assert!(!plan.contains("hunter2"), "{plan}");
    let e = load(
        &sql,
        &[("SIDEJOIN_KAFKA_SASL_PASSWORD", "zz-env-secret")],
        Mode::Replay,
    )
    .unwrap_err();
    assert!(
        e.contains("SIDEJOIN_KAFKA_SASL_PASSWORD: contradicts SIDEJOIN_SQL"),
        "{e}"
    );
    assert!(
        !e.contains("hunter2") && !e.contains("zz-env-secret"),
        "{e}"
    );
}
