//! The schema registry over https with basic auth (issue 26): Apicurio behind nginx with a
//! private CA and one user (`scripts/registry-tls.sh`). Avro in and out through it with
//! `SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION` and the credentials equals replay; a wrong password is
//! a clear error that stops the start (exit 2); no secret — the password or the basic-auth
//! token made of it — shows in the log (at debug level), `/metrics`, `sidejoin check`'s output,
//! an error or the configuration's `{:?}`.

use std::process::Output;
use std::time::Duration;

use sidejoin::config::{self, Mode};

use crate::avro_e2e::{cdc_env, cdc_scenario_with};
use crate::common::bin;
use crate::common::kafka::{self, Sidejoin};
use crate::common::secure::{self, assert_no_secret, basic_token};

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The CDC scenario's variables on fresh topics, with the https registry and `password`.
fn secure_env(name: &str, password: &str) -> Vec<(String, String)> {
    let (left, right, output) = kafka::join_topics(name, [1, 1, 1]);
    let app = kafka::unique(&format!("{name}-app"));
    kafka::with(
        cdc_env(&app, &left, &right, &output, true),
        &secure::registry_env(password),
    )
}

#[test]
fn the_basic_token_is_rfc_7617s() {
    assert_eq!(
        basic_token("Aladdin", "open sesame"),
        "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
    );
}

#[test]
fn avro_through_a_tls_and_basic_auth_registry_equals_replay_and_prints_no_secret() {
    let password = secure::var("TEST_REGISTRY_TLS_PASSWORD");
    let token = basic_token(&secure::var("TEST_REGISTRY_TLS_USERNAME"), &password);
    let mut extra = secure::registry_env(&password);
    extra.push(("RUST_LOG".into(), "debug".into()));
    let mut sj = cdc_scenario_with(true, &extra);
    let metrics = sj.get("/metrics").1;
    let logs = sj.logs();

    let env = secure_env("registry-tls-check", &password);
    let check = bin::sidejoin("check", env.iter().cloned())
        .output()
        .unwrap();
    let checked = text(&check);
    assert_eq!(check.status.code(), Some(0), "{checked}");
    let debug = format!("{:?}", config::load(env, Mode::Run).unwrap());
    assert!(debug.contains("<redacted>"), "{debug}");

    assert_no_secret(
        &[&password, &token],
        &[
            ("the process log", &logs),
            ("/metrics", &metrics),
            ("sidejoin check", &checked),
            ("the configuration's Debug", &debug),
        ],
    );
}

#[test]
fn a_wrong_registry_password_is_a_clear_error() {
    let password = secure::var("TEST_REGISTRY_TLS_PASSWORD");
    let wrong = format!("not-{}", kafka::unique("the-password"));
    let token = basic_token(&secure::var("TEST_REGISTRY_TLS_USERNAME"), &wrong);
    let env = secure_env("registry-wrong", &wrong);
    let mut sj = Sidejoin::start("run", &env);
    let code = sj.wait(Duration::from_secs(120));
    let logs = sj.logs();
    assert_eq!(code, 2, "a refused login is a configuration error:\n{logs}");
    for needle in [
        "HTTP 401",
        "refused the credentials",
        "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
    ] {
        assert!(logs.contains(needle), "no {needle:?} in:\n{logs}");
    }
    assert_no_secret(&[&wrong, &password, &token], &[("the process log", &logs)]);
}
