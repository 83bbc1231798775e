//! The Kafka settings (`SIDEJOIN_BOOTSTRAP_SERVERS`, `SIDEJOIN_KAFKA_*` passthrough properties,
//! the guarantee, the schema registry) validated into a `KafkaSpec`.

use crate::error::Problems;
use crate::raw::RawConfig;
use crate::values::parse_enum;
use crate::{
    duration, opt, ConfigError, Guarantee, KafkaSpec, OffsetReset, RegistrySpec,
    OWNED_KAFKA_PROPERTIES,
};

/// The Kafka settings among `raw`, with the passthrough properties `kafka` (name, variable,
/// value); credentials that would cross the network in clear text add a warning.
pub(crate) fn kafka_spec(
    p: &mut Problems,
    raw: &RawConfig,
    kafka: Vec<(String, String, String)>,
    warnings: &mut Vec<String>,
) -> KafkaSpec {
    let application_id = raw
        .application_id
        .clone()
        .unwrap_or_else(|| "sidejoin".to_owned());
    let (properties, consumer_properties, producer_properties) = kafka_properties(p, kafka);
    let spec = KafkaSpec {
        bootstrap_servers: raw.bootstrap_servers.clone(),
        dlq_topic: raw
            .dlq_topic
            .clone()
            .unwrap_or_else(|| format!("{application_id}.dlq")),
        application_id,
        instance_id: opt(p, &raw.instance_id, parse_instance_id),
        properties,
        consumer_properties,
        producer_properties,
        guarantee: opt(p, &raw.processing_guarantee, |v| {
            parse_enum(
                "SIDEJOIN_PROCESSING_GUARANTEE",
                v,
                &[
                    ("at_least_once", Guarantee::AtLeastOnce),
                    ("exactly_once", Guarantee::ExactlyOnce),
                ],
            )
        })
        .unwrap_or(Guarantee::AtLeastOnce),
        commit_interval_ms: duration(p, "COMMIT_INTERVAL", &raw.commit_interval, 100),
        max_task_idle_ms: duration(p, "MAX_TASK_IDLE", &raw.max_task_idle, 1_000),
        auto_offset_reset: opt(p, &raw.auto_offset_reset, |v| {
            parse_enum(
                "SIDEJOIN_AUTO_OFFSET_RESET",
                v,
                &[
                    ("earliest", OffsetReset::Earliest),
                    ("latest", OffsetReset::Latest),
                ],
            )
        })
        .unwrap_or(OffsetReset::Earliest),
        registry: registry(p, raw),
    };
    warnings.extend(cleartext_credentials(&spec));
    spec
}

/// Credentials configured to cross the network unencrypted: basic auth to an `http://` registry,
/// SASL PLAIN over a `sasl_plaintext` listener. Warned about, not refused: an in-cluster registry
/// or broker on a network of its own is a setup people choose knowingly.
fn cleartext_credentials(k: &KafkaSpec) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(r) = &k.registry {
        if r.username.is_some() && r.url.starts_with("http://") {
            out.push(
                "SIDEJOIN_SCHEMA_REGISTRY_USERNAME/_PASSWORD with an http:// SIDEJOIN_SCHEMA_REGISTRY_URL: \
                 the credentials cross the network unencrypted (use https://)"
                    .to_owned(),
            );
        }
    }
    let prop = |name: &str| {
        (k.properties.iter())
            .rev()
            .find(|(p, _)| p == name)
            .map(|(_, v)| v.to_ascii_lowercase())
    };
    let mechanism = prop("sasl.mechanism").or_else(|| prop("sasl.mechanisms"));
    if prop("security.protocol").as_deref() == Some("sasl_plaintext")
        && mechanism.as_deref().unwrap_or("gssapi") == "plain"
    {
        out.push(
            "SASL PLAIN over security.protocol=sasl_plaintext: the Kafka password crosses the network \
             unencrypted (use sasl_ssl, or SCRAM)"
                .to_owned(),
        );
    }
    out
}

/// `SIDEJOIN_SCHEMA_REGISTRY_*`: the registry, when its URL is set (the others need it).
fn registry(p: &mut Problems, raw: &RawConfig) -> Option<RegistrySpec> {
    let timeout_ms = duration(
        p,
        "SCHEMA_REGISTRY_TIMEOUT",
        &raw.schema_registry_timeout,
        10_000,
    );
    let retry_timeout_ms = duration(
        p,
        "SCHEMA_REGISTRY_RETRY_TIMEOUT",
        &raw.schema_registry_retry_timeout,
        15_000,
    );
    let Some(url) = raw.schema_registry_url.as_deref().map(str::trim) else {
        refuse_without_url(p, raw);
        return None;
    };
    check_url(p, url);
    if raw.schema_registry_password.is_some() && raw.schema_registry_username.is_none() {
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
            None,
            "needs SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
        );
    }
    if timeout_ms <= 0 {
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT",
            raw.schema_registry_timeout.as_deref(),
            "must be positive, e.g. 10s",
        );
    }
    Some(RegistrySpec {
        url: url.to_owned(),
        username: raw.schema_registry_username.clone(),
        password: raw.schema_registry_password.clone(),
        ca_location: raw.schema_registry_ca_location.clone(),
        timeout_ms,
        retry_timeout_ms,
    })
}

/// The registry's other variables, set without `SIDEJOIN_SCHEMA_REGISTRY_URL`.
fn refuse_without_url(p: &mut Problems, raw: &RawConfig) {
    for (name, v) in [
        (
            "SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
            &raw.schema_registry_username,
        ),
        (
            "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
            &raw.schema_registry_password,
        ),
        (
            "SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION",
            &raw.schema_registry_ca_location,
        ),
        (
            "SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT",
            &raw.schema_registry_retry_timeout,
        ),
    ] {
        if v.is_some() {
            p.add(name, None, "needs SIDEJOIN_SCHEMA_REGISTRY_URL");
        }
    }
}

/// `SIDEJOIN_SCHEMA_REGISTRY_URL`: http(s), a host, and no credentials.
fn check_url(p: &mut Problems, url: &str) {
    let scheme_ok = url.starts_with("http://") || url.starts_with("https://");
    let host = url.split_once("://").map_or("", |(_, rest)| rest);
    if !scheme_ok || host.is_empty() {
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            Some(url),
            "expected an http:// or https:// URL, e.g. http://registry:8081",
        );
    } else if host.split('/').next().unwrap_or_default().contains('@') {
        // Credentials in the URL would end up in logs; they have their own variables.
        p.add(
            "SIDEJOIN_SCHEMA_REGISTRY_URL",
            None,
            "must not hold credentials: use SIDEJOIN_SCHEMA_REGISTRY_USERNAME/_PASSWORD",
        );
    }
}

/// A static group member's id (`group.instance.id`): what Kafka accepts for it, 1–249 of
/// `[A-Za-z0-9._-]` (a Kubernetes pod name is one).
fn parse_instance_id(v: &str) -> Result<String, ConfigError> {
    let legal = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if v.is_empty() || v.len() > 249 || !v.chars().all(legal) {
        return Err(ConfigError::new(
            "SIDEJOIN_INSTANCE_ID",
            Some(v),
            "expected 1 to 249 characters of A-Z, a-z, 0-9, '.', '_' and '-' (e.g. the pod name)",
        ));
    }
    Ok(v.to_owned())
}

/// Passthrough properties: `(every client, consumer only, producer only)`. A property that
/// starts with `consumer.` or `producer.` (`SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS`) is for
/// that client alone; librdkafka has no property of its own with either prefix.
type KafkaProperties = (
    Vec<(String, String)>,
    Vec<(String, String)>,
    Vec<(String, String)>,
);

fn kafka_properties(p: &mut Problems, props: Vec<(String, String, String)>) -> KafkaProperties {
    let mut out: KafkaProperties = Default::default();
    for (prop, value, name) in props {
        let (list, bare) = if let Some(bare) = prop.strip_prefix("consumer.") {
            (&mut out.1, bare)
        } else if let Some(bare) = prop.strip_prefix("producer.") {
            (&mut out.2, bare)
        } else {
            (&mut out.0, prop.as_str())
        };
        if bare.is_empty() {
            p.add(
                &name,
                None,
                "expected SIDEJOIN_KAFKA_CONSUMER_<PROPERTY> or SIDEJOIN_KAFKA_PRODUCER_<PROPERTY>",
            );
        } else if OWNED_KAFKA_PROPERTIES.contains(&bare) {
            // The value is not echoed: passthrough values may be secrets.
            p.add(
                &name,
                None,
                format!("`{bare}` is set by sidejoin itself and cannot be overridden"),
            );
        } else {
            list.push((bare.to_owned(), value));
        }
    }
    out
}
