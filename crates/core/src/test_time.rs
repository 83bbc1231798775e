//! The CPU time of the calling thread (tests' generous time bounds, issue 22): the machine
//! running the tests may be busy, so wall time would measure the neighbours too.

use std::time::{Duration, Instant};

/// The calling thread's time on a CPU, or wall time where the clock is not available.
fn now() -> Result<Duration, Instant> {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) } != 0 {
        return Err(Instant::now());
    }
    Ok(Duration::new(t.tv_sec as u64, t.tv_nsec as u32))
}

/// Runs `f`, prints its CPU time, and fails the test when it is `bound` or more — in optimised
/// builds only (`scripts/test.sh` runs the tests `--release`): unoptimised code is several
/// times slower, and the bound is about the algorithm, not the build.
pub(crate) fn within<T>(bound: Duration, what: &str, f: impl FnOnce() -> T) -> T {
    let start = now();
    let t = f();
    let took = match (start, now()) {
        (Ok(a), Ok(b)) => b.saturating_sub(a),
        (Err(a), _) | (_, Err(a)) => a.elapsed(),
    };
    eprintln!("{what}: {took:?} of CPU");
    if !cfg!(debug_assertions) {
        assert!(took < bound, "{what} took {took:?} (bound {bound:?})");
    }
    t
}
