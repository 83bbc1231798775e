//! Reaching the brokers, and naming why not: a metadata request that failed is looked at with
//! the client's error events, so a refused login or a failed TLS handshake is reported as such.
//! (librdkafka fails the request itself as a transport failure either way; the cause arrives as
//! an error event of the client.)
//!
//! The policy for a refusal: retrying cannot fix a wrong password or an untrusted certificate —
//! sidejoin reads its credentials once, at start (as Kubernetes hands a Secret to an
//! environment variable) — so once the brokers have refused every attempt for `REFUSED_FOR`,
//! the start stops with a configuration error (exit 2); the instance is not ready until then.
//! The bound leaves time for credentials that are still being set up (a SCRAM user created a
//! moment after the pod) and for a broker rolling its certificate.

use std::sync::Mutex;
use std::time::Duration;

use rdkafka::client::ClientContext;
use rdkafka::config::RDKafkaLogLevel;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::metadata::Metadata;
use rdkafka::types::RDKafkaErrorCode;

use crate::config::KafkaSpec;

use super::clients;

const METADATA_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the brokers may refuse sidejoin before the start gives up (see the module doc).
pub(crate) const REFUSED_FOR: Duration = Duration::from_secs(30);

/// The brokers answered, but would not let sidejoin in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// SASL authentication failed: the username, password or mechanism is wrong.
    Authentication,
    /// The TLS handshake failed: the brokers' certificate is not trusted (or the protocol is).
    Tls,
}

impl Refusal {
    /// What to tell the user, naming the settings to check.
    pub(crate) fn describe(self, brokers: &str) -> String {
        match self {
            Refusal::Authentication => format!(
                "Kafka at {brokers} refused sidejoin's login: SASL authentication failed \
                 (check SIDEJOIN_KAFKA_SASL_USERNAME, SIDEJOIN_KAFKA_SASL_PASSWORD and SIDEJOIN_KAFKA_SASL_MECHANISM)"
            ),
            Refusal::Tls => format!(
                "the TLS handshake with Kafka at {brokers} failed: its certificate is not trusted \
                 or the protocol does not match (check SIDEJOIN_KAFKA_SECURITY_PROTOCOL and SIDEJOIN_KAFKA_SSL_CA_LOCATION)"
            ),
        }
    }
}

/// Fetches cluster metadata once; a failure comes with the refusal behind it, if any.
pub(crate) fn metadata(kafka: &KafkaSpec) -> Result<Metadata, (KafkaError, Option<Refusal>)> {
    let client: BaseConsumer<Watch> = clients::admin(kafka)
        .create_with_context(Watch::default())
        .map_err(|e| (e, None))?;
    client.fetch_metadata(None, METADATA_TIMEOUT).map_err(|e| {
        // Serve the client's pending events: its error callback sees the refusal. A poll that
        // served a log line answers `None` like an empty queue does, so a fixed number of polls
        // (each returns at once; the client has no partitions, so its events are few).
        for _ in 0..200 {
            let _ = client.poll(Duration::ZERO);
        }
        let refusal = *client
            .context()
            .refusal
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        (e, refusal)
    })
}

/// The metadata client's context: librdkafka's log lines to `tracing`, and the refusal among
/// its errors (an authentication failure first).
#[derive(Default)]
struct Watch {
    refusal: Mutex<Option<Refusal>>,
}

impl ClientContext for Watch {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, message: &str) {
        super::context::log(level, fac, message)
    }

    fn error(&self, error: KafkaError, _reason: &str) {
        let mut refusal = self.refusal.lock().unwrap_or_else(|p| p.into_inner());
        match error.rdkafka_error_code() {
            Some(RDKafkaErrorCode::Authentication) => *refusal = Some(Refusal::Authentication),
            Some(RDKafkaErrorCode::SSL) => {
                refusal.get_or_insert(Refusal::Tls);
            }
            _ => {}
        }
    }
}

impl ConsumerContext for Watch {}
