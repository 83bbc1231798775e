//! Waiting for a producer's outstanding records without rust-rdkafka's 100 ms steps.
//!
//! rust-rdkafka's `BaseProducer::poll(t)` serves events until `t` has passed — always the whole
//! of `t`, even when what the caller waits for arrived at once — and its `flush` (which
//! `commit_transaction` calls first) polls 100 ms at a time. So every flush that finds a record
//! not yet acknowledged costs at least 100 ms: measured on the benchmark, every checkpoint's
//! commit took 100–130 ms of which the broker needed a few. Here the reports are served every
//! half millisecond instead, without spinning (`serve`).

use std::time::{Duration, Instant};

use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{BaseProducer, Producer, ProducerContext};

/// How long one wait for delivery reports sleeps.
const PAUSE: Duration = Duration::from_micros(500);

/// Delivery-report events served per wait: each poll serves one (a batch of reports).
const EVENTS: usize = 16;

/// Serves what delivery reports `producer` has, then sleeps `PAUSE`: one step of a wait for
/// acknowledgements. Not `poll(t)` with a small `t`: rust-rdkafka turns the part of `t` under a
/// millisecond into librdkafka polls of 0 ms, so `poll(1 ms)` spins a core for its whole
/// millisecond (measured: a commit's wait for acknowledgements kept a core busy).
pub(crate) fn serve<C: ProducerContext>(producer: &BaseProducer<C>) {
    for _ in 0..EVENTS {
        producer.poll(Duration::ZERO);
    }
    std::thread::sleep(PAUSE);
}

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
        serve(producer);
    }
    Ok(())
}
