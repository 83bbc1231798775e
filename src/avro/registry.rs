//! A client of the Confluent Schema Registry API (Confluent, Apicurio's `/apis/ccompat/v7`,
//! Karapace): fetch a schema by id, register a subject's schema, read a subject's latest schema.
//! Blocking (it runs on the processing thread, which must wait for a schema anyway), with basic
//! auth, an optional CA file for https and a per-request timeout.
//!
//! It only talks HTTP: caching and retrying are the callers' (`input`, `output`). Credentials are
//! kept out of every message and of `Debug`.

use std::sync::Arc;
use std::time::Duration;

use ureq::tls::{parse_pem, PemItem, RootCerts, TlsConfig};

use super::AvroSetupError;
use crate::config::RegistrySpec;

/// Why a request failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    /// The registry answered that the schema (id or subject) does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The registry could not be reached, or failed (5xx): worth retrying.
    #[error("schema registry unreachable: {0}")]
    Unavailable(String),
    /// Any other answer (bad request, auth refused, an unparsable body): retrying won't help.
    #[error("schema registry: {0}")]
    Refused(String),
}

impl RegistryError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, RegistryError::Unavailable(_))
    }
}

/// One registry, by its base URL (up to and without `/schemas/...`).
pub(crate) struct Registry {
    base: String,
    auth: Option<String>,
    agent: ureq::Agent,
    /// How long a record's schema lookup is retried while unavailable (`SchemaCache`).
    retry_budget: Duration,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field("base", &self.base)
            .field("auth", &self.auth.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

impl Registry {
    /// A client for `spec`; fails when the CA file cannot be read.
    pub(crate) fn new(spec: &RegistrySpec) -> Result<Self, AvroSetupError> {
        let mut tls = TlsConfig::builder();
        if let Some(path) = &spec.ca_location {
            let pem = std::fs::read(path).map_err(|e| {
                AvroSetupError::Setting(format!("SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION={path}: {e}"))
            })?;
            let certs: Vec<_> = parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(AvroSetupError::Setting(format!(
                    "SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION={path}: no PEM certificate in the file"
                )));
            }
            tls = tls.root_certs(RootCerts::Specific(Arc::new(certs)));
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_millis(spec.timeout_ms.max(1) as u64)))
            .http_status_as_error(false)
            .tls_config(tls.build())
            .build()
            .into();
        let auth = spec.username.as_ref().map(|user| {
            let pass = spec.password.as_deref().unwrap_or_default();
            format!(
                "Basic {}",
                sidejoin_core::avro::json::base64(format!("{user}:{pass}").as_bytes())
            )
        });
        Ok(Registry {
            base: spec.url.trim_end_matches('/').to_owned(),
            auth,
            agent,
            retry_budget: Duration::from_millis(spec.retry_timeout_ms.max(0) as u64),
        })
    }

    /// The base URL (no credentials in it: userinfo is refused by the configuration).
    pub(crate) fn url(&self) -> &str {
        &self.base
    }

    /// How long a record's schema lookup is retried while the registry is unavailable.
    pub(crate) fn retry_budget(&self) -> Duration {
        self.retry_budget
    }

    /// The schema text registered under `id`.
    pub(crate) fn schema_by_id(&self, id: u32) -> Result<String, RegistryError> {
        let body = self.request("GET", &format!("/schemas/ids/{id}"), None)?;
        schema_field(&body, &format!("schema id {id}"))
    }

    /// The latest schema of `subject`.
    pub(crate) fn latest(&self, subject: &str) -> Result<String, RegistryError> {
        let body = self.request(
            "GET",
            &format!("/subjects/{}/versions/latest", encode_path(subject)),
            None,
        )?;
        schema_field(&body, &format!("subject {subject}"))
    }

    /// Registers `schema` (Avro JSON text) under `subject`; returns its id.
    pub(crate) fn register(&self, subject: &str, schema: &str) -> Result<u32, RegistryError> {
        let request = serde_json::json!({ "schema": schema }).to_string();
        let body = self.request(
            "POST",
            &format!("/subjects/{}/versions", encode_path(subject)),
            Some(&request),
        )?;
        body.get("id")
            .and_then(serde_json::Value::as_u64)
            .and_then(|id| u32::try_from(id).ok())
            .ok_or_else(|| {
                RegistryError::Refused(format!("registering {subject}: no id in the answer {body}"))
            })
    }

    /// Lists subjects: the reachability probe.
    pub(crate) fn ping(&self) -> Result<(), RegistryError> {
        self.request("GET", "/subjects", None).map(|_| ())
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<serde_json::Value, RegistryError> {
        let url = format!("{}{path}", self.base);
        let unavailable =
            |e: ureq::Error| RegistryError::Unavailable(format!("{method} {url}: {e}"));
        let mut response = match (method, body) {
            ("POST", Some(b)) => {
                let mut r = self.agent.post(&url).header("Content-Type", CONTENT_TYPE);
                if let Some(a) = &self.auth {
                    r = r.header("Authorization", a);
                }
                r.send(b).map_err(unavailable)?
            }
            _ => {
                let mut r = self.agent.get(&url).header("Accept", CONTENT_TYPE);
                if let Some(a) = &self.auth {
                    r = r.header("Authorization", a);
                }
                r.call().map_err(unavailable)?
            }
        };
        let status = response.status().as_u16();
        let text = response
            .body_mut()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .map_err(unavailable)?;
        let json: Option<serde_json::Value> = serde_json::from_str(&text).ok();
        let message = || {
            json.as_ref()
                .and_then(|j| j.get("message"))
                .and_then(serde_json::Value::as_str)
                .map_or_else(|| text.chars().take(200).collect(), str::to_owned)
        };
        match status {
            200..=299 => json.ok_or_else(|| {
                RegistryError::Refused(format!("{method} {url}: the answer is not JSON"))
            }),
            404 => Err(RegistryError::NotFound(message())),
            // The body of a proxy's refusal is a page of HTML: only a JSON message is kept.
            401 | 403 => Err(RegistryError::Refused(format!(
                "{method} {url}: HTTP {status}: the registry refused the credentials (check \
                 SIDEJOIN_SCHEMA_REGISTRY_USERNAME and SIDEJOIN_SCHEMA_REGISTRY_PASSWORD){}",
                json.as_ref()
                    .and_then(|j| j.get("message"))
                    .and_then(serde_json::Value::as_str)
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            ))),
            500..=599 => Err(RegistryError::Unavailable(format!(
                "{method} {url}: HTTP {status}: {}",
                message()
            ))),
            _ => Err(RegistryError::Refused(format!(
                "{method} {url}: HTTP {status}: {}",
                message()
            ))),
        }
    }
}

/// The `schema` string of a registry answer.
fn schema_field(body: &serde_json::Value, what: &str) -> Result<String, RegistryError> {
    if let Some(t) = body.get("schemaType").and_then(serde_json::Value::as_str) {
        if !t.eq_ignore_ascii_case("AVRO") {
            return Err(RegistryError::Refused(format!(
                "{what} is a {t} schema, not Avro"
            )));
        }
    }
    body.get("schema")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RegistryError::Refused(format!("{what}: no schema in the answer")))
}

/// Percent-encodes a subject for a URL path.
fn encode_path(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_are_path_encoded() {
        assert_eq!(encode_path("orders-value"), "orders-value");
        assert_eq!(encode_path("a b/c"), "a%20b%2Fc");
    }

    #[test]
    fn debug_hides_credentials() {
        let r = Registry::new(&RegistrySpec {
            url: "http://127.0.0.1:1/apis/ccompat/v7".into(),
            username: Some("user".into()),
            password: Some("s3cret".into()),
            ca_location: None,
            timeout_ms: 1000,
            retry_timeout_ms: 1000,
        })
        .unwrap();
        let d = format!("{r:?}");
        assert!(
            !d.contains("s3cret") && !d.contains("dXNlcjpzM2NyZXQ"),
            "{d}"
        );
    }
}
