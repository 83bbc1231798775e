//! Configuration errors through the real binary: exit code 2, and a message naming the variable
//! and its bad value; several problems are reported together.

use crate::common::bin::sidejoin;

pub(crate) const BASE: [(&str, &str); 2] =
    [("SIDEJOIN_LEFT_KEY", "k"), ("SIDEJOIN_RIGHT_KEY", "k")];

/// Runs `sidejoin <cmd>` with exactly `env` (plus the base keys unless overridden) and returns
/// stderr, asserting exit code 2.
pub(crate) fn config_error(cmd: &str, env: &[(&str, &str)], with_base: bool) -> String {
    let base = if with_base { &BASE[..] } else { &[] };
    let mut c = sidejoin(cmd, base.iter().chain(env).copied());
    if cmd == "replay" {
        c.arg("/dev/null");
    }
    let out = c.output().expect("run sidejoin");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "expected exit 2 for {env:?}; stderr:\n{stderr}"
    );
    stderr
}

pub(crate) fn assert_names(stderr: &str, needles: &[&str]) {
    for n in needles {
        assert!(stderr.contains(n), "stderr lacks {n:?}:\n{stderr}");
    }
}

#[test]
fn join_type() {
    let e = config_error("check", &[("SIDEJOIN_JOIN_TYPE", "middle")], true);
    assert_names(
        &e,
        &["SIDEJOIN_JOIN_TYPE=\"middle\"", "inner, left, right, full"],
    );
}

#[test]
fn keys_missing_and_count_mismatch() {
    let e = config_error("check", &[("SIDEJOIN_RIGHT_KEY", "k")], false);
    assert_names(&e, &["SIDEJOIN_LEFT_KEY", "required"]);
    let e = config_error(
        "check",
        &[("SIDEJOIN_LEFT_KEY", "a,b"), ("SIDEJOIN_RIGHT_KEY", "a")],
        false,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_RIGHT_KEY=\"a\"",
            "has 1 column(s) but SIDEJOIN_LEFT_KEY has 2",
        ],
    );
    let e = config_error(
        "check",
        &[("SIDEJOIN_LEFT_KEY", "a,,b"), ("SIDEJOIN_RIGHT_KEY", "a")],
        false,
    );
    assert_names(&e, &["SIDEJOIN_LEFT_KEY=\"a,,b\"", "no empty entry"]);
}

#[test]
fn primary_keys() {
    let e = config_error("check", &[("SIDEJOIN_LEFT_PRIMARY_KEY", "id,id")], true);
    assert_names(&e, &["SIDEJOIN_LEFT_PRIMARY_KEY=\"id,id\"", "listed twice"]);
}

#[test]
fn formats() {
    let e = config_error("check", &[("SIDEJOIN_LEFT_FORMAT", "protobuf")], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_LEFT_FORMAT=\"protobuf\"",
            "json, upsert-json, debezium-json",
        ],
    );
    let e = config_error("check", &[("SIDEJOIN_RIGHT_FORMAT", "upsert-json")], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_RIGHT_FORMAT=\"upsert-json\"",
            "needs SIDEJOIN_RIGHT_PRIMARY_KEY",
        ],
    );
}

#[test]
fn select_grammar_prefix_and_duplicates() {
    let e = config_error("check", &[("SIDEJOIN_SELECT", "l.a AS")], true);
    assert_names(&e, &["SIDEJOIN_SELECT=\"l.a AS\"", "expected"]);
    let e = config_error("check", &[("SIDEJOIN_SELECT", "l.a, x.b")], true);
    assert_names(
        &e,
        &["SIDEJOIN_SELECT=\"l.a, x.b\"", "unknown side prefix `x`"],
    );
    let e = config_error("check", &[("SIDEJOIN_SELECT", "l.a AS n, r.b AS n")], true);
    assert_names(&e, &["duplicate output name `n`"]);
}

#[test]
fn durations() {
    let e = config_error("check", &[("SIDEJOIN_STATE_TTL", "10x")], true);
    assert_names(&e, &["SIDEJOIN_STATE_TTL=\"10x\"", "expected a duration"]);
    let e = config_error("check", &[("SIDEJOIN_SHUTDOWN_TIMEOUT", "-1s")], true);
    assert_names(&e, &["SIDEJOIN_SHUTDOWN_TIMEOUT=\"-1s\""]);
    let e = config_error("check", &[("SIDEJOIN_LEFT_STATE_TTL", "1.5h")], true);
    assert_names(&e, &["SIDEJOIN_LEFT_STATE_TTL=\"1.5h\""]);
}

#[test]
fn workers() {
    for bad in ["0", "-2", "two", "257"] {
        let e = config_error("check", &[("SIDEJOIN_WORKERS", bad)], true);
        assert_names(&e, &[&format!("SIDEJOIN_WORKERS=\"{bad}\"")]);
    }
    let e = config_error("check", &[("SIDEJOIN_WORKERS", "257")], true);
    assert_names(&e, &["at most 256"]);
}

#[test]
fn booleans() {
    let e = config_error("check", &[("SIDEJOIN_DEDUP_LEFT", "yes")], true);
    assert_names(
        &e,
        &["SIDEJOIN_DEDUP_LEFT=\"yes\"", "expected true or false"],
    );
    let e = config_error("check", &[("SIDEJOIN_ALLOW_GENERATED_RETRACTS", "0")], true);
    assert_names(&e, &["SIDEJOIN_ALLOW_GENERATED_RETRACTS=\"0\""]);
}

#[test]
fn output_mode_and_key() {
    let e = config_error("check", &[("SIDEJOIN_OUTPUT_MODE", "stream")], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_OUTPUT_MODE=\"stream\"",
            "changelog, upsert, append",
        ],
    );
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_OUTPUT_MODE", "upsert"),
            ("SIDEJOIN_SELECT", "l.v AS v, r.w AS w"),
        ],
        true,
    );
    assert_names(&e, &["SIDEJOIN_OUTPUT_MODE=\"upsert\"", "needs a key"]);
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_OUTPUT_KEY", "nope"),
            ("SIDEJOIN_SELECT", "l.k AS k, r.w AS w"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_OUTPUT_KEY=\"nope\"",
            "`nope` is not an output column (output columns: k, w)",
        ],
    );
}

#[test]
fn append_refusal_names_what_produces_updates() {
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_OUTPUT_MODE", "append"),
            ("SIDEJOIN_LEFT_PRIMARY_KEY", "k"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_OUTPUT_MODE=\"append\"",
            "SIDEJOIN_LEFT_PRIMARY_KEY=k",
        ],
    );
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_OUTPUT_MODE", "append"),
            ("SIDEJOIN_JOIN_TYPE", "full"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_JOIN_TYPE=full",
            "SIDEJOIN_ALLOW_GENERATED_RETRACTS=false",
        ],
    );
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_OUTPUT_MODE", "append"),
            ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
        ],
        true,
    );
    assert_names(
        &e,
        &["SIDEJOIN_LEFT_FORMAT=debezium-json produces updates and deletes"],
    );
}

#[test]
fn unknown_variable_suggests_the_nearest() {
    let e = config_error("check", &[("SIDEJOIN_JION_TYPE", "left")], true);
    assert_names(
        &e,
        &["SIDEJOIN_JION_TYPE", "did you mean SIDEJOIN_JOIN_TYPE?"],
    );
    let e = config_error("check", &[("SIDEJOIN_DEDUP_RIHGT", "true")], true);
    assert_names(&e, &["did you mean SIDEJOIN_DEDUP_RIGHT?"]);
}

#[test]
fn owned_kafka_property_is_refused_and_secrets_are_not_echoed() {
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_KAFKA_ENABLE_AUTO_COMMIT", "true"),
            ("SIDEJOIN_KAFKA_SASL_PASSWORD", "hunter2"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_KAFKA_ENABLE_AUTO_COMMIT",
            "`enable.auto.commit` is set by sidejoin",
        ],
    );
    assert!(!e.contains("hunter2"));
}

#[test]
fn broadcast_rules() {
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_BROADCAST", "left"),
            ("SIDEJOIN_JOIN_TYPE", "left"),
        ],
        true,
    );
    assert_names(&e, &["SIDEJOIN_BROADCAST=\"left\"", "preserved side"]);
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_BROADCAST", "right"),
            ("SIDEJOIN_JOIN_TYPE", "full"),
        ],
        true,
    );
    assert_names(&e, &["SIDEJOIN_BROADCAST=\"right\"", "full join"]);
    // `run` refuses it the same way, before connecting: the small table on the right of a
    // RIGHT JOIN is its preserved side.
    let e = config_error(
        "run",
        &[
            ("SIDEJOIN_BROADCAST", "right"),
            ("SIDEJOIN_JOIN_TYPE", "right"),
            ("SIDEJOIN_BOOTSTRAP_SERVERS", "localhost:1"),
            ("SIDEJOIN_LEFT_TOPIC", "facts"),
            ("SIDEJOIN_RIGHT_TOPIC", "dims"),
            ("SIDEJOIN_OUTPUT_TOPIC", "out"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_BROADCAST=\"right\"",
            "preserved side",
            "broadcast the other side",
        ],
    );
}

#[test]
fn hash_by_rules() {
    // Without broadcast only the join key co-partitions.
    let e = config_error("check", &[("SIDEJOIN_LEFT_HASH_BY", "id")], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_LEFT_HASH_BY=\"id\"",
            "repartitioned by its join key (k",
            "broadcast",
        ],
    );
    // The broadcast side is not partitioned at all.
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_BROADCAST", "right"),
            ("SIDEJOIN_RIGHT_HASH_BY", "k"),
        ],
        true,
    );
    assert_names(&e, &["SIDEJOIN_RIGHT_HASH_BY=\"k\"", "is broadcast"]);
    // An upsert tombstone carries only the primary key.
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_LEFT_FORMAT", "upsert-json"),
            ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
            ("SIDEJOIN_LEFT_HASH_BY", "$join_key"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_LEFT_HASH_BY=\"k\"",
            "`k` is not a primary-key column (id)",
            "tombstone",
        ],
    );
}

#[test]
fn run_needs_kafka_settings() {
    let e = config_error("run", &[], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_BOOTSTRAP_SERVERS",
            "SIDEJOIN_LEFT_TOPIC",
            "SIDEJOIN_RIGHT_TOPIC",
            "SIDEJOIN_OUTPUT_TOPIC",
        ],
    );
}

#[test]
fn replay_reports_config_errors_with_exit_2() {
    let e = config_error("replay", &[("SIDEJOIN_JOIN_TYPE", "sideways")], true);
    assert_names(&e, &["SIDEJOIN_JOIN_TYPE=\"sideways\""]);
}

#[test]
fn every_problem_is_reported_together() {
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_JOIN_TYPE", "middle"),
            ("SIDEJOIN_LEFT_FORMAT", "protobuf"),
            ("SIDEJOIN_STATE_TTL", "soon"),
            ("SIDEJOIN_DEDUP_RIGHT", "maybe"),
            ("SIDEJOIN_SELECT", "q.x"),
            ("SIDEJOIN_OUTPUT_MODE", "everything"),
            ("SIDEJOIN_TYPO_VAR", "1"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "7 problems",
            "SIDEJOIN_JOIN_TYPE=\"middle\"",
            "SIDEJOIN_LEFT_FORMAT=\"protobuf\"",
            "SIDEJOIN_STATE_TTL=\"soon\"",
            "SIDEJOIN_DEDUP_RIGHT=\"maybe\"",
            "SIDEJOIN_SELECT=\"q.x\"",
            "SIDEJOIN_OUTPUT_MODE=\"everything\"",
            "SIDEJOIN_TYPO_VAR",
        ],
    );
}
