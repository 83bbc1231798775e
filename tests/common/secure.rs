//! The secure endpoints `scripts/test.sh` starts beside the plain ones — the broker's SASL_SSL
//! listener (`TEST_KAFKA_SASL_*`, `scripts/kafka.sh` with `LOCAL_KAFKA_SASL_SSL=1`) and the
//! registry behind TLS and basic auth (`TEST_REGISTRY_TLS_*`, `scripts/registry-proxy.sh`) —
//! as sidejoin's variables, and the check that no secret shows in anything sidejoin printed.

/// A variable of the test run, or a panic saying how to get it.
pub(crate) fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!("{name} is not set: run these tests through scripts/test.sh, which starts the secure endpoints")
    })
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    (list.iter())
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The variables that take sidejoin to the broker's SASL_SSL listener (SCRAM-SHA-512, the test
/// CA) as the test user, with `password`.
pub(crate) fn sasl_env(password: &str) -> Vec<(String, String)> {
    pairs(&[
        (
            "SIDEJOIN_BOOTSTRAP_SERVERS",
            &var("TEST_KAFKA_SASL_BOOTSTRAP"),
        ),
        ("SIDEJOIN_KAFKA_SECURITY_PROTOCOL", "SASL_SSL"),
        ("SIDEJOIN_KAFKA_SASL_MECHANISM", "SCRAM-SHA-512"),
        (
            "SIDEJOIN_KAFKA_SASL_USERNAME",
            &var("TEST_KAFKA_SASL_USERNAME"),
        ),
        ("SIDEJOIN_KAFKA_SASL_PASSWORD", password),
        ("SIDEJOIN_KAFKA_SSL_CA_LOCATION", &var("TEST_KAFKA_SASL_CA")),
    ])
}

/// The variables that take sidejoin to the registry's https endpoint (the test CA) as the test
/// user, with `password`.
pub(crate) fn registry_env(password: &str) -> Vec<(String, String)> {
    pairs(&[
        (
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            &var("TEST_REGISTRY_TLS_URL"),
        ),
        (
            "SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION",
            &var("TEST_REGISTRY_TLS_CA"),
        ),
        (
            "SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
            &var("TEST_REGISTRY_TLS_USERNAME"),
        ),
        ("SIDEJOIN_SCHEMA_REGISTRY_PASSWORD", password),
    ])
}

/// The HTTP basic credentials of `user` and `password` as they cross the wire (base64): a
/// secret too.
pub(crate) fn basic_token(user: &str, password: &str) -> String {
    // Written out here (RFC 4648, padded), independent of the client's own encoder.
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{user}:{password}").into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (*b as u32) << (16 - 8 * i));
        for i in 0..4 {
            out.push(if i <= chunk.len() {
                ABC[(n >> (18 - 6 * i) & 63) as usize] as char
            } else {
                '='
            });
        }
    }
    out
}

/// Asserts that none of `secrets` occurs in any of `outputs` (`(what it is, its text)`); the
/// failure names the output, never the secret.
pub(crate) fn assert_no_secret(secrets: &[&str], outputs: &[(&str, &str)]) {
    for (what, text) in outputs {
        for (i, s) in secrets.iter().enumerate() {
            assert!(
                !s.is_empty(),
                "secret {i} is empty: nothing would be checked"
            );
            assert!(
                !text.contains(s),
                "secret {i} shows in {what} ({} bytes looked at)",
                text.len()
            );
        }
    }
}
