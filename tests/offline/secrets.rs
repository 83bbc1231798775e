//! Secrets are never printed (issue 26), offline: `sidejoin check` of a configuration full of
//! them (Kafka passthrough values from the environment and from the SQL, the registry password),
//! the `{:?}` of the configuration and of the SQL's translation, the error for a SQL option sidejoin does not know
//! (`'value.avro-confluent.basic-auth.user-info' = 'user:password'`) and for an owned property;
//! and basic auth to an `http://` registry is warned about.

use sidejoin::config::{self, Mode};

use crate::common::bin::sidejoin;
use crate::common::secure::assert_no_secret;

const SASL: &str = "sasl-pw-0d1e2f";
const KEY_PEM: &str = "key-pem-3a4b5c";
const OAUTH: &str = "oauth-cfg-6d7e8f";
const REGISTRY: &str = "registry-pw-9a0b1c";
const USER_INFO: &str = "user-info-pw-2d3e4f";

fn sql(extra_option: &str) -> String {
    format!(
        "CREATE TABLE a (id INT, v STRING) WITH ('connector' = 'kafka', 'topic' = 'a', 'format' = 'json', \
           'properties.sasl.password' = '{SASL}'{extra_option});\n\
         CREATE TABLE b (id INT, w STRING) WITH ('connector' = 'kafka', 'topic' = 'b', 'format' = 'json');\n\
         SELECT a.v, b.w FROM a JOIN b ON a.id = b.id"
    )
}

fn env(sql: &str) -> Vec<(String, String)> {
    [
        ("SIDEJOIN_SQL", sql),
        ("SIDEJOIN_KAFKA_SSL_KEY_PEM", KEY_PEM),
        ("SIDEJOIN_KAFKA_CONSUMER_SASL_OAUTHBEARER_CONFIG", OAUTH),
        ("SIDEJOIN_SCHEMA_REGISTRY_URL", "http://registry:8081"),
        ("SIDEJOIN_SCHEMA_REGISTRY_USERNAME", "sidejoin"),
        ("SIDEJOIN_SCHEMA_REGISTRY_PASSWORD", REGISTRY),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn output(out: std::process::Output) -> (Option<i32>, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn check_and_debug_show_no_secret_and_warn_of_basic_auth_over_http() {
    let env = env(&sql(""));
    let (code, checked) = output(sidejoin("check", env.clone()).output().unwrap());
    assert_eq!(code, Some(0), "{checked}");
    // The settings are there by name.
    for name in ["SIDEJOIN_KAFKA_SASL_PASSWORD", "configuration is valid"] {
        assert!(checked.contains(name), "no {name:?} in:\n{checked}");
    }
    assert!(
        checked.contains("warning: SIDEJOIN_SCHEMA_REGISTRY_USERNAME/_PASSWORD with an http://"),
        "{checked}"
    );
    let cfg = config::load(env, Mode::Check).unwrap();
    let translated = config::sql::translate(&sql("")).unwrap();
    let debug = format!(
        "{cfg:?} {:?} {:?} {translated:?}",
        cfg.kafka, cfg.kafka.registry
    );
    for name in [
        "ssl.key.pem",
        "sasl.oauthbearer.config",
        "SIDEJOIN_KAFKA_SASL_PASSWORD",
    ] {
        assert!(debug.contains(name), "no {name:?} in {debug}");
    }
    assert_no_secret(
        &[SASL, KEY_PEM, OAUTH, REGISTRY],
        &[
            ("sidejoin check", &checked),
            ("the configuration's Debug", &debug),
        ],
    );
}

#[test]
fn an_unknown_sql_option_is_named_without_its_value() {
    let option = format!(", 'value.avro-confluent.basic-auth.user-info' = 'u:{USER_INFO}'");
    let (code, error) = output(sidejoin("check", env(&sql(&option))).output().unwrap());
    assert_eq!(code, Some(2), "{error}");
    for needle in [
        "'value.avro-confluent.basic-auth.user-info' = '…'",
        "unsupported option for a source table",
        "SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
    ] {
        assert!(error.contains(needle), "no {needle:?} in:\n{error}");
    }
    assert_no_secret(&[USER_INFO, SASL], &[("the SQL error", &error)]);
}

#[test]
fn an_owned_property_from_the_sql_is_refused_without_its_value() {
    let option = format!(", 'properties.transactional.id' = '{USER_INFO}'");
    let (code, error) = output(sidejoin("check", env(&sql(&option))).output().unwrap());
    assert_eq!(code, Some(2), "{error}");
    assert!(error.contains("transactional.id"), "{error}");
    assert_no_secret(&[USER_INFO, SASL], &[("the error", &error)]);
}
