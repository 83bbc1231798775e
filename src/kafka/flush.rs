//! Waiting for a producer's outstanding records without rust-rdkafka's 100 ms steps.
//!
//! rust-rdkafka's `BaseProducer::poll(t)` serves events until `t` has passed — always the whole
//! of `t`, even when what the caller waits for arrived at once — and its `flush` (which
//! `commit_transaction` calls first) polls 100 ms at a time. So every flush that finds a record
//! not yet acknowledged costs at least 100 ms: measured on the benchmark, every checkpoint's
//! commit took 100–130 ms of which the broker needed a few. Here the reports are served 1 ms at
//! a time instead.

use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, Producer, ProducerContext};

/// How long one wait for delivery reports blocks.
pub(crate) const STEP: Duration = Duration::from_millis(1);

/// Serves `producer`'s delivery reports until nothing it was handed is outstanding, or
/// `timeout` has passed (`KafkaError::Flush(OperationTimedOut)`).
pub(crate) fn flush<C: ProducerContext>(
    producer: &BaseProducer<C>,
    timeout: Duration,
) -> Result<(), KafkaError> {
    let deadline = Instant::now() + timeout;
    while producer.in_flight_count() > 0 {
        if Instant::now() >= deadline {
            return Err(KafkaError::Flush(RDKafkaErrorCode::OperationTimedOut));
        }
        producer.poll(STEP);
    }
    Ok(())
}
