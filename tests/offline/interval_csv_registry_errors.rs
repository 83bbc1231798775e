//! Configuration errors of the interval join, the CSV format and the schema registry settings,
//! through the real binary (as `config_errors`: exit code 2 and a message naming the variable).

use super::config_errors::{assert_names, config_error, BASE};
use crate::common::bin::sidejoin;

#[test]
fn interval_bounds() {
    let e = config_error("check", &[("SIDEJOIN_INTERVAL_LOWER", "-10m")], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_INTERVAL_UPPER",
            "required when SIDEJOIN_INTERVAL_LOWER is set",
        ],
    );
    let e = config_error("check", &[("SIDEJOIN_INTERVAL_UPPER", "10m")], true);
    assert_names(
        &e,
        &[
            "SIDEJOIN_INTERVAL_LOWER",
            "required when SIDEJOIN_INTERVAL_UPPER is set",
        ],
    );
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_INTERVAL_LOWER", "5m"),
            ("SIDEJOIN_INTERVAL_UPPER", "-5m"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_INTERVAL_LOWER=\"5m\"",
            "must not be greater than SIDEJOIN_INTERVAL_UPPER (-5m)",
        ],
    );
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_INTERVAL_LOWER", "-10 m"),
            ("SIDEJOIN_INTERVAL_UPPER", "10m"),
        ],
        true,
    );
    assert_names(
        &e,
        &["SIDEJOIN_INTERVAL_LOWER=\"-10 m\"", "signed duration"],
    );
}

#[test]
fn interval_needs_insert_only_inputs_without_ttl_or_dedup() {
    let bounds = [
        ("SIDEJOIN_INTERVAL_LOWER", "-1m"),
        ("SIDEJOIN_INTERVAL_UPPER", "1m"),
    ];
    let with = |extra: (&'static str, &'static str)| {
        let mut env = bounds.to_vec();
        env.push(extra);
        config_error("check", &env, true)
    };
    assert_names(
        &with(("SIDEJOIN_LEFT_FORMAT", "debezium-json")),
        &["SIDEJOIN_LEFT_FORMAT=\"debezium-json\"", "insert-only"],
    );
    assert_names(
        &with(("SIDEJOIN_RIGHT_PRIMARY_KEY", "k")),
        &["SIDEJOIN_RIGHT_PRIMARY_KEY=\"k\"", "insert-only"],
    );
    assert_names(
        &with(("SIDEJOIN_DEDUP_LEFT", "true")),
        &["SIDEJOIN_DEDUP_LEFT=\"true\"", "interval"],
    );
    assert_names(
        &with(("SIDEJOIN_STATE_TTL", "1h")),
        &["SIDEJOIN_STATE_TTL=\"1h\"", "watermarks bound"],
    );
    assert_names(
        &with(("SIDEJOIN_RIGHT_STATE_TTL", "5m")),
        &["SIDEJOIN_RIGHT_STATE_TTL=\"5m\""],
    );
}

#[test]
fn interval_accepts_zero_ttl_and_false_dedup() {
    let out = sidejoin("check", BASE)
        .envs([
            ("SIDEJOIN_INTERVAL_LOWER", "-1m"),
            ("SIDEJOIN_INTERVAL_UPPER", "1m"),
            ("SIDEJOIN_STATE_TTL", "0"),
            ("SIDEJOIN_DEDUP_LEFT", "false"),
            ("SIDEJOIN_OUTPUT_MODE", "append"),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn csv_settings() {
    let e = config_error("check", &[("SIDEJOIN_LEFT_FORMAT", "csv")], true);
    assert_names(&e, &["SIDEJOIN_LEFT_COLUMNS: required by the csv format"]);
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_LEFT_FORMAT", "csv"),
            ("SIDEJOIN_LEFT_COLUMNS", "k INT, m MAP<STRING, INT>"),
            ("SIDEJOIN_LEFT_CSV_FIELD_DELIMITER", "::"),
            ("SIDEJOIN_LEFT_CSV_IGNORE_PARSE_ERRORS", "maybe"),
            ("SIDEJOIN_RIGHT_CSV_NULL_LITERAL", "NULL"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_LEFT_COLUMNS=\"k INT, m MAP<STRING, INT>\": column `m`: type `MAP<STRING` cannot be read from csv",
            "SIDEJOIN_LEFT_CSV_FIELD_DELIMITER=\"::\": expected exactly one ASCII character",
            "SIDEJOIN_LEFT_CSV_IGNORE_PARSE_ERRORS=\"maybe\": expected true or false",
            "SIDEJOIN_RIGHT_CSV_NULL_LITERAL: only applies to the csv format (SIDEJOIN_RIGHT_FORMAT=csv)",
        ],
    );
}

#[test]
fn schema_registry() {
    let e = config_error(
        "check",
        &[
            ("SIDEJOIN_SCHEMA_REGISTRY_URL", "registry:8081"),
            ("SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT", "soon"),
        ],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            "registry:8081",
            "http://",
            "SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT",
        ],
    );
    // Credentials belong in their own variables; the URL holding them is not echoed.
    let e = config_error(
        "check",
        &[(
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            "https://u:secret@registry:8081",
        )],
        true,
    );
    assert_names(&e, &["SIDEJOIN_SCHEMA_REGISTRY_USERNAME"]);
    assert!(!e.contains("secret"), "{e}");
    let e = config_error(
        "check",
        &[("SIDEJOIN_SCHEMA_REGISTRY_PASSWORD", "pw")],
        true,
    );
    assert_names(
        &e,
        &[
            "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
            "needs SIDEJOIN_SCHEMA_REGISTRY_URL",
        ],
    );
    assert!(!e.contains("pw\n") && !e.contains("\"pw\""), "{e}");
    // `run` with an Avro side needs the registry.
    let e = config_error(
        "run",
        &[
            ("SIDEJOIN_BOOTSTRAP_SERVERS", "127.0.0.1:1"),
            ("SIDEJOIN_LEFT_TOPIC", "l"),
            ("SIDEJOIN_RIGHT_TOPIC", "r"),
            ("SIDEJOIN_OUTPUT_TOPIC", "o"),
            ("SIDEJOIN_LEFT_FORMAT", "debezium-avro"),
        ],
        true,
    );
    assert_names(
        &e,
        &["SIDEJOIN_LEFT_FORMAT", "SIDEJOIN_SCHEMA_REGISTRY_URL"],
    );
}
