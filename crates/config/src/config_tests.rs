use super::*;

fn load_vars(pairs: &[(&str, &str)]) -> Result<Config, ConfigErrors> {
    load(
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())),
        Mode::Replay,
    )
}

#[test]
fn minimal_config_has_defaults() {
    let c = load_vars(&[("SIDEJOIN_LEFT_KEY", "id"), ("SIDEJOIN_RIGHT_KEY", "id")]).unwrap();
    assert_eq!(c.join.join_type, JoinType::Inner);
    assert!(c.join.allow_generated_retracts);
    assert_eq!(c.output.mode, OutputMode::Changelog);
    assert_eq!(c.kafka.dlq_topic, "sidejoin.dlq");
    assert_eq!(c.process.http_addr.port(), 9464);
    assert_eq!(c.output.key[0].name, "id");
}

#[test]
fn instance_id_takes_what_kafka_accepts() {
    let base = [("SIDEJOIN_LEFT_KEY", "id"), ("SIDEJOIN_RIGHT_KEY", "id")];
    let with = |id: &str| load_vars(&[base[0], base[1], ("SIDEJOIN_INSTANCE_ID", id)]);
    let c = with("sidejoin-0").unwrap();
    assert_eq!(c.kafka.instance_id.as_deref(), Some("sidejoin-0"));
    assert_eq!(load_vars(&base).unwrap().kafka.instance_id, None);
    for bad in ["", "pod/0", "a b", &"x".repeat(250)] {
        let e = with(bad).unwrap_err();
        assert_eq!(e.0[0].var, "SIDEJOIN_INSTANCE_ID", "{bad:?}");
        assert!(e.0[0].message.contains("1 to 249 characters"), "{}", e.0[0]);
    }
    let e = load_vars(&[base[0], base[1], ("SIDEJOIN_KAFKA_GROUP_INSTANCE_ID", "x")]).unwrap_err();
    assert_eq!(e.0[0].var, "SIDEJOIN_KAFKA_GROUP_INSTANCE_ID");
}

#[test]
fn kafka_properties_for_one_client_are_apart() {
    let c = load_vars(&[
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_KAFKA_SECURITY_PROTOCOL", "ssl"),
        ("SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS", "6000"),
        ("SIDEJOIN_KAFKA_PRODUCER_COMPRESSION_TYPE", "lz4"),
    ])
    .unwrap();
    let pairs = |v: &[(String, String)]| {
        v.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(pairs(&c.kafka.properties), ["security.protocol=ssl"]);
    assert_eq!(
        pairs(&c.kafka.consumer_properties),
        ["session.timeout.ms=6000"]
    );
    assert_eq!(
        pairs(&c.kafka.producer_properties),
        ["compression.type=lz4"]
    );
    for (var, problem) in [
        ("SIDEJOIN_KAFKA_CONSUMER_GROUP_ID", "set by sidejoin itself"),
        (
            "SIDEJOIN_KAFKA_PRODUCER_TRANSACTIONAL_ID",
            "set by sidejoin itself",
        ),
        (
            "SIDEJOIN_KAFKA_CONSUMER_",
            "SIDEJOIN_KAFKA_CONSUMER_<PROPERTY>",
        ),
    ] {
        let e = load_vars(&[
            ("SIDEJOIN_LEFT_KEY", "id"),
            ("SIDEJOIN_RIGHT_KEY", "id"),
            (var, "x"),
        ])
        .unwrap_err();
        assert_eq!(e.0[0].var, var);
        assert!(e.0[0].message.contains(problem), "{}", e.0[0]);
    }
}

#[test]
fn owned_kafka_property_is_refused_without_echoing_the_value() {
    let e = load_vars(&[
        ("SIDEJOIN_LEFT_KEY", "id"),
        ("SIDEJOIN_RIGHT_KEY", "id"),
        ("SIDEJOIN_KAFKA_GROUP_ID", "secret-ish"),
    ])
    .unwrap_err();
    assert_eq!(e.0[0].var, "SIDEJOIN_KAFKA_GROUP_ID");
    assert!(!e.to_string().contains("secret-ish"));
}
