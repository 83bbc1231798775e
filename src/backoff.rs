//! Waiting between the attempts of a step that needs something outside the process (the brokers,
//! the schema registry, an input subject): an exponential backoff that a stop request cuts short.

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// How often a wait looks at the stop request.
const STEP: Duration = Duration::from_millis(50);

/// The wait before the next attempt: `first`, doubled after each wait, at most `max`.
pub(crate) struct Backoff {
    wait: Duration,
    max: Duration,
}

impl Backoff {
    pub(crate) fn new(first: Duration, max: Duration) -> Self {
        Backoff { wait: first, max }
    }

    /// The next wait (for the log line that announces it).
    pub(crate) fn next(&self) -> Duration {
        self.wait
    }

    /// Waits the next wait, then doubles it; `false` when `shutdown` came first.
    pub(crate) fn wait(&mut self, shutdown: &CancellationToken) -> bool {
        let deadline = Instant::now() + self.wait;
        while Instant::now() < deadline {
            if shutdown.is_cancelled() {
                return false;
            }
            std::thread::sleep(STEP);
        }
        self.wait = (self.wait * 2).min(self.max);
        true
    }
}
