//! The one transactional producer, used by every caller that commits output together with
//! input offsets: the checkpoints of `runtime::durable` and the repartition routers. One
//! timeout per call, one retry policy and one error type for both.
//!
//! Policy: a call that fails with a retriable error (a broker away, a coordinator moving) is
//! made again every `RETRY` until it succeeds or the process stops — a call inside a
//! transaction for `GIVE_UP` at most, then it counts as failed and the transaction is aborted;
//! meanwhile the owner is told it is stalled (`Stall`: the instance turns not ready) and the
//! wait is logged, again every `STILL_FAILING`. Any other
//! failure is returned: `fatal` when the producer can go on no more (fenced by a newer
//! incarnation with the same `transactional.id`), else abortable — the caller aborts and
//! resumes from what was committed.
//!
//! What it does not do: decide what goes into a transaction, or when.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rdkafka::consumer::ConsumerGroupMetadata;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseProducer, Producer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::TopicPartitionList;
use tokio_util::sync::CancellationToken;

use super::deliveries::Deliveries;

/// How long one transactional call may block before it is made again (a broker outage).
const CALL: Duration = Duration::from_secs(10);

/// How long delivery reports are served before each attempt to abort.
const REPORTS: Duration = Duration::from_secs(1);

/// The pause between two attempts of a retriable call.
const RETRY: Duration = Duration::from_millis(100);

/// How often a call still failing is logged again.
const STILL_FAILING: Duration = Duration::from_secs(30);

/// How long a retriable call is retried before it counts as failed (abortable): the default
/// `transaction.timeout.ms`, after which the coordinator has aborted the transaction anyway.
/// A producer that cannot get through for that long (seen once after a broker outage: offsets
/// refused as retriable for minutes) resumes from the last checkpoint instead of hanging.
const GIVE_UP: Duration = Duration::from_secs(60);

/// How long `send_offsets_to_transaction` may block before the producer counts as hung.
const HUNG: Duration = Duration::from_secs(60);

/// Why the process exits when `send_offsets_to_transaction` hung.
fn hung_hint() -> String {
    format!(
        "librdkafka's send_offsets_to_transaction did not return within {} s (librdkafka issue #5456: it can ignore its timeout after the group coordinator's connection was lost); exiting so that the restart resumes from the last checkpoint (nothing is lost)",
        HUNG.as_secs()
    )
}

/// `send_offsets_to_transaction` on a thread of its own; `None` when it has not returned
/// within `HUNG` (the thread is left blocked: the process is about to exit).
fn bounded(
    producer: &Arc<BaseProducer<Deliveries>>,
    offsets: &TopicPartitionList,
    group: &Arc<ConsumerGroupMetadata>,
) -> Option<Result<(), KafkaError>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let (p, o, g) = (producer.clone(), offsets.clone(), group.clone());
    let spawned = std::thread::Builder::new()
        .name("send-offsets".into())
        .spawn(move || {
            let _ = tx.send(p.send_offsets_to_transaction(&o, &g, CALL));
        });
    match spawned {
        Ok(_) => rx.recv_timeout(HUNG).ok(),
        // No thread to spare: called here, unbounded.
        Err(_) => Some(producer.send_offsets_to_transaction(offsets, group, CALL)),
    }
}

/// A transactional call that failed.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{what}{}", if *.fenced { FENCED_HINT } else { "" })]
pub struct TxnError {
    /// The producer can go on no more (fenced, or another fatal error).
    pub fatal: bool,
    /// A newer producer with the same `transactional.id` took over.
    pub fenced: bool,
    pub what: String,
}

const FENCED_HINT: &str = " (another instance took over this instance's transactional id: the same SIDEJOIN_INSTANCE_ID runs twice, or this one was stalled past transaction.timeout.ms)";

impl TxnError {
    fn of(e: KafkaError) -> Self {
        let fatal = matches!(&e, KafkaError::Transaction(t) if t.is_fatal());
        let fenced = matches!(
            e.rdkafka_error_code(),
            Some(RDKafkaErrorCode::ProducerFenced | RDKafkaErrorCode::InvalidProducerEpoch)
        );
        TxnError {
            fatal,
            fenced,
            what: super::redact(&e),
        }
    }
}

/// Told when the producer waits for the brokers (`true`) and when it goes on (`false`).
pub(crate) type Stall = Arc<dyn Fn(bool) + Send + Sync>;

pub(crate) struct Transactions {
    producer: Arc<BaseProducer<Deliveries>>,
    /// A transaction is open.
    open: bool,
    /// What the transactions are for, in logs ("checkpoint", "repartition of the left side").
    name: String,
    stall: Stall,
    shutdown: CancellationToken,
}

impl Transactions {
    pub(crate) fn new(
        producer: Arc<BaseProducer<Deliveries>>,
        name: impl Into<String>,
        stall: Stall,
        shutdown: &CancellationToken,
    ) -> Self {
        Transactions {
            producer,
            open: false,
            name: name.into(),
            stall,
            shutdown: shutdown.clone(),
        }
    }

    /// The producer, to send records into the open transaction.
    pub(crate) fn producer(&self) -> &Arc<BaseProducer<Deliveries>> {
        &self.producer
    }

    /// Delivery reports of what the producer sent.
    pub(crate) fn deliveries(&self) -> &Deliveries {
        self.producer.context()
    }

    /// Registers with the brokers, fencing an earlier incarnation with the same
    /// `transactional.id` and aborting what it left open; then opens the first transaction.
    pub(crate) fn start(&mut self) -> Result<(), TxnError> {
        self.retry_until_shutdown("initialising transactions", |p| p.init_transactions(CALL))?;
        self.begin()
    }

    /// Opens a transaction unless one is open.
    pub(crate) fn begin(&mut self) -> Result<(), TxnError> {
        if !self.open {
            self.producer.begin_transaction().map_err(TxnError::of)?;
            self.open = true;
        }
        Ok(())
    }

    /// Adds the consumer group's input `offsets` to the open transaction (KIP-447: a member of
    /// an older group generation — a zombie — cannot commit them).
    ///
    /// librdkafka can block in this call for good, past its timeout, after the group
    /// coordinator's connection was lost (its issue #5456; seen here after a broker restart):
    /// the call runs on a thread of its own, and one that has not returned after `HUNG` is a
    /// fatal error — the process exits and its restart resumes from the last checkpoint.
    pub(crate) fn send_offsets(
        &self,
        offsets: &TopicPartitionList,
        group: ConsumerGroupMetadata,
    ) -> Result<(), TxnError> {
        let group = Arc::new(group);
        let hung = std::cell::Cell::new(false);
        let sent = self.retry("adding the input offsets to the transaction", |_| {
            bounded(&self.producer, offsets, &group).unwrap_or_else(|| {
                hung.set(true);
                Err(KafkaError::Canceled)
            })
        });
        sent.map_err(|e| match hung.get() {
            true => TxnError {
                fatal: true,
                fenced: false,
                what: hung_hint(),
            },
            false => e,
        })
    }

    /// Commits the open transaction.
    pub(crate) fn commit(&mut self) -> Result<(), TxnError> {
        // Its own flush first: `commit_transaction`'s costs 100 ms whenever a record is
        // outstanding (`flush`).
        self.retry("committing the transaction", |p| {
            super::flush::flush(p, CALL)?;
            p.commit_transaction(CALL)
        })?;
        self.open = false;
        Ok(())
    }

    /// Aborts the open transaction (its records are purged), serving the delivery reports of
    /// what it sent before and after; then opens the next one.
    pub(crate) fn abort(&mut self, why: &str) -> Result<(), TxnError> {
        tracing::warn!("aborting the {} transaction: {why}", self.name);
        if self.open {
            // librdkafka's abort purges what is outstanding, then waits for those records'
            // delivery reports — which a base producer only gets when polled, so they are
            // served before every attempt (an attempt that found reports unserved fails with
            // "the event queue must be polled", and without serving them so would every retry).
            self.retry("aborting the transaction", |p| {
                let _ = super::flush::flush(p, REPORTS);
                p.abort_transaction(CALL)
            })?;
            self.open = false;
        }
        let _ = super::flush::flush(&self.producer, CALL);
        self.producer.context().aborted();
        self.begin()
    }

    /// Aborts without opening another (the owner gives up; the next owner redoes it).
    pub(crate) fn abandon(&mut self) {
        if self.open {
            let _ = self.producer.abort_transaction(CALL);
            self.open = false;
        }
    }

    /// Runs a call inside a transaction, again while it fails with a retriable error, until
    /// shutdown or for `GIVE_UP` at most (then the error is returned, abortable).
    fn retry(
        &self,
        what: &str,
        call: impl Fn(&BaseProducer<Deliveries>) -> Result<(), KafkaError>,
    ) -> Result<(), TxnError> {
        self.retry_for(what, GIVE_UP, call)
    }

    /// Runs a call outside any transaction (registering the producer) again while it fails
    /// with a retriable error, until shutdown: a broker away at start is waited for.
    fn retry_until_shutdown(
        &self,
        what: &str,
        call: impl Fn(&BaseProducer<Deliveries>) -> Result<(), KafkaError>,
    ) -> Result<(), TxnError> {
        self.retry_for(what, Duration::MAX, call)
    }

    fn retry_for(
        &self,
        what: &str,
        give_up: Duration,
        call: impl Fn(&BaseProducer<Deliveries>) -> Result<(), KafkaError>,
    ) -> Result<(), TxnError> {
        let started = Instant::now();
        let mut logged: Option<Instant> = None;
        loop {
            let error = match call(&self.producer) {
                Ok(()) => {
                    if logged.is_some() {
                        tracing::info!(
                            "{} transaction: {what}: succeeded after retrying for {:.1} s",
                            self.name,
                            started.elapsed().as_secs_f64()
                        );
                        (self.stall)(false);
                    }
                    return Ok(());
                }
                Err(e) => e,
            };
            let retriable = matches!(&error, KafkaError::Transaction(t) if t.is_retriable());
            if !retriable || self.shutdown.is_cancelled() || started.elapsed() >= give_up {
                if logged.is_some() {
                    (self.stall)(false);
                }
                let mut e = TxnError::of(error);
                if retriable && !self.shutdown.is_cancelled() {
                    e.what = format!("{} (gave up after retrying for {give_up:?})", e.what);
                }
                return Err(e);
            }
            match logged {
                None => {
                    tracing::warn!(
                        "{} transaction: {what} failed ({}); not ready; retrying",
                        self.name,
                        super::redact(&error)
                    );
                    (self.stall)(true);
                    logged = Some(Instant::now());
                }
                Some(at) if at.elapsed() >= STILL_FAILING => {
                    tracing::warn!(
                        "{} transaction: {what} still failing after {:.0} s ({}); retrying",
                        self.name,
                        started.elapsed().as_secs_f64(),
                        super::redact(&error)
                    );
                    logged = Some(Instant::now());
                }
                Some(_) => {}
            }
            // Each round: still stalled, and alive (the watchdog's progress).
            (self.stall)(true);
            std::thread::sleep(RETRY);
        }
    }
}
