//! `SIDEJOIN_SQL` through config loading: no panic, and a secret given in a Kafka passthrough
//! variable is never echoed in an error or a warning (unless the script itself holds it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sidejoin_config::{load, Mode};

const SECRET: &str = "Zq8-canary-secret";

fuzz_target!(|data: &[u8]| {
    let Ok(sql) = std::str::from_utf8(data) else {
        return;
    };
    let env = [
        ("SIDEJOIN_SQL".to_string(), sql.to_string()),
        (
            "SIDEJOIN_KAFKA_SASL_PASSWORD".to_string(),
            SECRET.to_string(),
        ),
        (
            "SIDEJOIN_KAFKA_SASL_JAAS_CONFIG".to_string(),
            SECRET.to_string(),
        ),
    ];
    for mode in [Mode::Run, Mode::Check] {
        let text = match load(env.clone(), mode) {
            Ok(config) => config.warnings.join("\n"),
            Err(e) => e.to_string(),
        };
        assert!(
            sql.contains(SECRET) || !text.contains(SECRET),
            "the secret is echoed: {text}"
        );
    }
});
