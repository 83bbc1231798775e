//! `sidejoin replay` of a star join configured by SQL (SPEC §10, §14): input lines name their
//! input by the SQL table's name (or alias) as well as by `left`/`right`/`dim2`; any other name
//! is a bad line that lists the names it may be.

use sidejoin::config::{self, Mode};
use sidejoin::engine::MemoryState;
use sidejoin::replay::{self, ReplayError, ReplayOptions};

const SEED_001: &str = "CREATE TABLE A (a1 STRING, a2 STRING) WITH ('connector' = 'kafka', 'topic' = 'A', 'format' = 'json');
CREATE TABLE B (b1 STRING, b2 STRING) WITH ('connector' = 'kafka', 'topic' = 'B', 'format' = 'json');
CREATE TABLE C (c1 STRING, c2 STRING) WITH ('connector' = 'kafka', 'topic' = 'C', 'format' = 'json');
CREATE TABLE O (a2 STRING, b2 STRING, c2 STRING) WITH ('connector' = 'kafka', 'topic' = 'O', 'format' = 'json');
INSERT INTO O SELECT /*+ BROADCAST(A, C) */ a2, b2, c2 FROM A JOIN B ON a1 = b1 JOIN C ON a1 = c1;";

fn replay_lines(lines: &str) -> (Result<(), ReplayError>, String) {
    let cfg = config::load(vec![("SIDEJOIN_SQL".into(), SEED_001.into())], Mode::Replay)
        .expect("the seed's query configures a star join");
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = replay::replay(
        &cfg,
        MemoryState::new(),
        lines.as_bytes(),
        &mut out,
        &mut err,
        ReplayOptions::default(),
    );
    (result, String::from_utf8(out).expect("UTF-8"))
}

#[test]
fn lines_name_their_input_by_the_sql_tables_names() {
    let (result, out) = replay_lines(
        r#"{"side": "A", "key": null, "value": {"a1": "k1", "a2": "x"}}
{"side": "b", "key": null, "value": {"b1": "k1", "b2": "y"}}
{"side": "dim2", "key": null, "value": {"c1": "k1", "c2": "z"}}"#,
    );
    result.expect("replayed");
    assert_eq!(
        out.trim(),
        r#"{"op":"+I","row":{"a2":"x","b2":"y","c2":"z"},"cause":3}"#
    );
}

#[test]
fn an_unknown_input_name_lists_the_names_it_may_be() {
    let (result, _) = replay_lines(r#"{"side": "D", "key": null, "value": {}}"#);
    let e = result.expect_err("refused").to_string();
    for name in [
        "\"left\"",
        "\"right\"",
        "\"dim2\"",
        "\"a\"",
        "\"b\"",
        "\"c\"",
    ] {
        assert!(e.contains(name), "{name} is listed in: {e}");
    }
    assert!(e.starts_with("line 1: `side` must be one of"), "{e}");
}
