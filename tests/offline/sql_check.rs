//! `sidejoin check` with SQL prints the equivalent `SIDEJOIN_*` variables; replaying with those
//! variables instead of the SQL gives the same output on the same input (issue 14, acceptance
//! 2), for every golden fixture that has a `job.sql`.

use crate::common::fixtures::{self, Fixture};

/// The `NAME='value'` lines `check` printed, unquoted.
fn printed_variables(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("equivalent variables"))
        .skip(1)
        .take_while(|l| l.starts_with("SIDEJOIN_") || l.starts_with("# SIDEJOIN_"))
        .filter(|l| l.starts_with("SIDEJOIN_"))
        .map(|l| {
            let (k, v) = l.split_once('=').expect("NAME=value");
            let v = v
                .strip_prefix('\'')
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or_else(|| panic!("not single-quoted: {l}"));
            (k.to_owned(), v.replace("'\\''", "'"))
        })
        .collect()
}

fn check_output(f: &Fixture) -> String {
    let out = crate::common::bin::sidejoin("check", f.env.iter().cloned())
        .output()
        .expect("run sidejoin check");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn variables_printed_by_check_replay_like_the_sql() {
    let with_sql: Vec<Fixture> = fixtures::all()
        .into_iter()
        .filter(|f| f.dir.join("job.sql").exists())
        .collect();
    assert!(with_sql.len() >= 7, "SQL fixtures not found");
    // Each check tries the SQL's (absent) broker for a few seconds: run them side by side.
    let checks: Vec<_> = with_sql
        .iter()
        .cloned()
        .map(|f| std::thread::spawn(move || check_output(&f)))
        .collect();
    for (f, check) in with_sql.into_iter().zip(checks) {
        let vars = printed_variables(&check.join().unwrap());
        assert!(
            vars.iter().any(|(k, _)| k == "SIDEJOIN_LEFT_KEY"),
            "{}: check printed no join variables",
            f.name
        );
        let mut plain = f.clone();
        plain.env.retain(|(k, _)| k != "SIDEJOIN_SQL_FILE");
        plain.env.extend(vars);
        let by_sql = fixtures::run_binary(&f);
        let by_vars = fixtures::run_binary(&plain);
        assert_eq!(by_vars.exit, by_sql.exit, "{}: exit codes differ", f.name);
        assert_eq!(
            by_vars.stdout, by_sql.stdout,
            "{}: the printed variables replay differently from the SQL",
            f.name
        );
        fixtures::check(&plain, &by_vars).unwrap_or_else(|e| panic!("{}: {e}", f.name));
    }
}

/// `check` prints each side's placement and why (issue 24): seed 000's csv tables declare no
/// key, so both are re-keyed by the join key on topics of several partitions; the same job with
/// `'key.fields'` on the join column reads that side as it is.
#[test]
fn check_prints_each_sides_placement_with_the_reason() {
    let f = fixtures::load(&fixtures::fixtures_dir().join("sql_seed000_left_join"));
    let out = check_output(&f);
    for needle in [
        "placement left: re-keyed: csv declares no key on the join columns",
        "placement right: re-keyed: csv declares no key on the join columns",
        "repartition: the left topic `user_info_001` is re-keyed by user_id",
        "keys and partitioner chosen by sidejoin",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
    let sql = std::fs::read_to_string(f.dir.join("job.sql"))
        .unwrap()
        .replacen(
            "'value.format' = 'csv'",
            "'key.format' = 'csv', 'key.fields' = 'user_id', 'value.format' = 'csv'",
            1,
        );
    let mut keyed = f.clone();
    keyed.env.retain(|(k, _)| k != "SIDEJOIN_SQL_FILE");
    keyed.env.push(("SIDEJOIN_SQL".to_owned(), sql));
    let out = check_output(&keyed);
    for needle in [
        "placement left: read as it is: declared keyed by the join key",
        "placement right: re-keyed",
        "keys and partitioner learnt from the left topic's records",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
}

/// `check` prints a star join's N-way variables (SPEC §14): the seed query `FROM A JOIN B ON a1 =
/// b1 JOIN C ON a1 = c1` with A and C broadcast reads B as the fact.
#[test]
fn check_prints_a_star_joins_variables() {
    let table = |name: &str, cols: &str| {
        format!(
            "CREATE TABLE {name} ({cols}) WITH ('connector' = 'kafka', 'topic' = 't{name}', 'format' = 'json');\n"
        )
    };
    let sql = [
        table("A", "a1 INT, a2 STRING"),
        table("B", "b1 INT, b2 STRING"),
        table("C", "c1 INT, c2 STRING"),
        "SELECT /*+ BROADCAST(A, C) */ a2, b2, c2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1"
            .to_owned(),
    ]
    .concat();
    let out = crate::common::bin::sidejoin("check", [("SIDEJOIN_SQL", sql)])
        .output()
        .expect("run sidejoin check");
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let vars = printed_variables(&stdout);
    let get = |k: &str| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    assert_eq!(get("SIDEJOIN_LEFT_TOPIC"), Some("tB"));
    assert_eq!(get("SIDEJOIN_LEFT_KEY"), Some("b1"));
    assert_eq!(get("SIDEJOIN_RIGHT_KEY"), Some("a1"));
    assert_eq!(get("SIDEJOIN_DIM2_TOPIC"), Some("tC"));
    assert_eq!(get("SIDEJOIN_DIM2_KEY"), Some("c1"));
    assert_eq!(get("SIDEJOIN_DIM2_ON"), Some("r.a1"));
    assert_eq!(get("SIDEJOIN_DIM2_JOIN_TYPE"), Some("inner"));
    assert_eq!(get("SIDEJOIN_BROADCAST"), Some("right,dim2"));
    assert_eq!(get("SIDEJOIN_SELECT"), Some("r.a2, l.b2, dim2.c2"));
    // The printed variables configure the same join without the SQL.
    let again = crate::common::bin::sidejoin("check", vars.clone())
        .output()
        .expect("run sidejoin check");
    assert_eq!(
        again.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}
