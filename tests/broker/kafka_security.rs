//! Kafka security on a real endpoint (issue 26): the broker's SASL_SSL listener (SCRAM-SHA-512
//! behind a private CA, `scripts/kafka.sh` with `LOCAL_KAFKA_SASL_SSL=1`). A join through it
//! with the credentials in `SIDEJOIN_KAFKA_*` equals replay; a wrong password is named as an
//! authentication failure, keeps the instance not ready and stops the start with exit 2 once
//! refused for the bound (retrying cannot fix it). No secret shows in the process's log (at
//! debug level), `/metrics`, `sidejoin check`'s output, an error or the configuration's `{:?}`.

use std::process::Output;
use std::time::{Duration, Instant};

use sidejoin::config::{self, Mode};

use crate::common::bin;
use crate::common::kafka::{self, Sidejoin};
use crate::common::secure::{self, assert_no_secret};
use crate::common::upsert;

/// A left join's variables on fresh topics, reached through the SASL_SSL listener with
/// `password`.
fn secure_join_env(name: &str, password: &str) -> Vec<(String, String)> {
    let (left, right, output) = kafka::join_topics(name, [1, 1, 1]);
    let app = kafka::unique(&format!("{name}-app"));
    let env = kafka::with(
        kafka::base_env(&app, &left, &right, &output),
        &upsert::left_join_env(),
    );
    kafka::with(env, &secure::sasl_env(password))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_join_through_sasl_ssl_equals_replay_and_prints_no_secret() {
    let password = secure::var("TEST_KAFKA_SASL_PASSWORD");
    let mut extra = secure::sasl_env(&password);
    // Debug logging: more lines that could leak.
    extra.push(("RUST_LOG".into(), "debug".into()));
    let mut sj = crate::kafka_e2e::seed_end_to_end_with("seed004_inner_join", &extra);
    let metrics = sj.get("/metrics").1;
    let logs = sj.logs();
    assert!(
        logs.contains(&secure::var("TEST_KAFKA_SASL_BOOTSTRAP")),
        "the process did not go through the SASL_SSL listener:\n{logs}"
    );

    let env = secure_join_env("sasl-check", &password);
    let check = bin::sidejoin("check", env.iter().cloned())
        .output()
        .unwrap();
    let checked = text(&check);
    assert_eq!(check.status.code(), Some(0), "{checked}");
    assert!(checked.contains("topology"), "{checked}");
    let debug = format!("{:?}", config::load(env, Mode::Run).unwrap());
    assert!(debug.contains("sasl.password"), "{debug}");

    assert_no_secret(
        &[&password],
        &[
            ("the process log", &logs),
            ("/metrics", &metrics),
            ("sidejoin check", &checked),
            ("the configuration's Debug", &debug),
        ],
    );
}

#[test]
fn a_wrong_sasl_password_is_named_keeps_not_ready_and_exits_2() {
    let password = secure::var("TEST_KAFKA_SASL_PASSWORD");
    let wrong = format!("not-{}", kafka::unique("the-password"));
    let env = secure_join_env("sasl-wrong", &wrong);
    let started = Instant::now();
    let mut sj = Sidejoin::start("run", &env);
    wait_logged(&sj, "SASL authentication failed", Duration::from_secs(60));
    let (status, _) = sj.get("/readyz");
    assert_eq!(status, 503, "ready with a wrong password:\n{}", sj.logs());
    // The stated policy: refused for 30 s, then exit 2 (a configuration error).
    let code = sj.wait(Duration::from_secs(180));
    let logs = sj.logs();
    assert_eq!(code, 2, "{logs}");
    assert!(
        started.elapsed() >= Duration::from_secs(30),
        "gave up before the bound"
    );
    for needle in [
        "refused sidejoin's login",
        "SIDEJOIN_KAFKA_SASL_PASSWORD",
        "giving up",
    ] {
        assert!(logs.contains(needle), "no {needle:?} in:\n{logs}");
    }
    assert!(
        !logs.contains("is unreachable"),
        "a refused login reported as unreachable:\n{logs}"
    );

    let check = bin::sidejoin("check", env.iter().cloned())
        .output()
        .unwrap();
    let checked = text(&check);
    assert_eq!(check.status.code(), Some(2), "{checked}");
    assert!(checked.contains("SASL authentication failed"), "{checked}");

    assert_no_secret(
        &[&wrong, &password],
        &[("the process log", &logs), ("sidejoin check", &checked)],
    );
}

/// Waits until the process logged `needle`.
fn wait_logged(sj: &Sidejoin, needle: &str, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while !sj.logs().contains(needle) {
        assert!(
            Instant::now() < deadline,
            "no {needle:?} logged:\n{}",
            sj.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
