//! Kill -9 rounds against the real broker: start sidejoin, let it consume a random share of
//! what is left, freeze it once it has written output and SIGKILL it (every kill must come with
//! input left to consume); then a last run consumes everything.
//!
//! How far a run gets between its start and the kill depends on the machine's speed, so the
//! input may be produced in chunks (`Input::chunked`): between two rounds, while no sidejoin
//! runs, another chunk is added whenever less than half the first one is left unconsumed. Each
//! chunk is complete before a run reads it, so the processing order is that of a single
//! production of all of it.

use std::time::{Duration, Instant};

use super::kafka::{self, Sidejoin};

pub(crate) const WAIT: Duration = Duration::from_secs(180);

/// The input offsets `app` committed on both topics, summed.
pub(crate) fn consumed(app: &str, topics: &[&str]) -> i64 {
    topics
        .iter()
        .flat_map(|t| kafka::committed(app, t))
        .map(|o| o.max(0))
        .sum()
}

/// A small seeded generator (the seed is printed, `CRASH_SEED` replays it).
pub(crate) struct Random(u64);

impl Random {
    pub(crate) fn from_env() -> Random {
        let seed = std::env::var("CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(kafka::now_ms() as u64);
        println!("CRASH_SEED={seed}");
        Random(seed)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n.max(1)
    }
}

/// A kill test's input records in the topics: how many are there, and how to add more.
pub(crate) struct Input<'a> {
    produced: u64,
    keep_ahead: u64,
    more: Box<dyn FnMut() -> u64 + 'a>,
}

impl<'a> Input<'a> {
    /// All `n` records are produced already.
    pub(crate) fn fixed(n: u64) -> Input<'a> {
        Input {
            produced: n,
            keep_ahead: 0,
            more: Box::new(|| 0),
        }
    }

    /// `first` records are produced already; `more()` produces the next chunk and returns its
    /// size (0: the input is exhausted).
    pub(crate) fn chunked(first: u64, more: impl FnMut() -> u64 + 'a) -> Input<'a> {
        Input {
            produced: first,
            keep_ahead: first / 2,
            more: Box::new(more),
        }
    }

    /// The records in the topics.
    pub(crate) fn produced(&self) -> u64 {
        self.produced
    }

    /// More input can be added.
    fn can_grow(&self) -> bool {
        self.keep_ahead > 0
    }

    /// Adds a chunk of input; once `more` has none left, the input cannot grow.
    fn grow(&mut self) {
        match (self.more)() {
            0 => self.keep_ahead = 0,
            n => self.produced += n,
        }
    }

    /// Tops the input up (before a round) while less than `keep_ahead` is left unconsumed.
    fn top_up(&mut self, consumed: u64) {
        // `grow` sets `keep_ahead` to 0 once the input is exhausted, which ends the loop.
        while self.produced.saturating_sub(consumed) < self.keep_ahead {
            self.grow();
        }
    }
}

/// Runs `rounds` kill -9 rounds of sidejoin with `env` over the `input` records of `topics` as
/// group `app` writing `out`, calling `between(round)` after each kill (e.g. to delete the
/// state directory); then starts a last run and waits until every offset is consumed and its
/// row counts are published. Returns the last run.
pub(crate) fn kill_rounds(
    env: &[(String, String)],
    app: &str,
    topics: &[&str],
    out: &str,
    input: &mut Input,
    rounds: usize,
    mut between: impl FnMut(usize),
) -> Sidejoin {
    let mut random = Random::from_env();
    let (mut round, mut repeats) = (0, 0);
    while round < rounds {
        input.top_up(consumed(app, topics) as u64);
        let total = input.produced();
        let written_before: i64 = kafka::high_watermarks(out).iter().sum();
        let mut sj = Sidejoin::start("run", env);
        sj.wait_ready(WAIT);
        let before = (consumed(app, topics) as u64).min(total);
        if before >= total && input.can_grow() && repeats < rounds {
            // A loaded machine made the start slow: everything was consumed before the run was
            // even ready. The round is made again over more input.
            println!("round {round}: everything consumed before ready; again with more input");
            drop(sj);
            input.grow();
            repeats += 1;
            continue;
        }
        assert!(
            before < total,
            "round {round}: everything consumed before the kill (make the input bigger)"
        );
        let target = 1_000 + random.below(total.saturating_sub(before) / (4 * rounds as u64));
        // Output first (it comes soon after the start), so that the kill follows the target
        // closely: a fast run would otherwise consume everything meanwhile.
        let deadline = Instant::now() + WAIT;
        while kafka::high_watermarks(out).iter().sum::<i64>() <= written_before {
            assert!(
                Instant::now() < deadline,
                "round {round}: no output written:\n{}",
                sj.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        sj.wait_records_in(target.min(total - before), WAIT);
        // Sometimes at once, sometimes a little later: kills land in and between checkpoints.
        std::thread::sleep(Duration::from_millis(random.below(120)));
        sj.signal("STOP");
        let lag = total as i64 - consumed(app, topics);
        sj.signal("KILL");
        assert_eq!(sj.wait(WAIT), -1, "killed by a signal");
        if lag <= 0 && input.can_grow() && repeats < rounds {
            // A loaded machine watched the run too slowly: this kill tested nothing new. The
            // round is made again over more input (the kill itself is harmless).
            println!(
                "round {round}: every record was consumed before the kill; again with more input"
            );
            input.grow();
            repeats += 1;
            continue;
        }
        assert!(
            lag > 0,
            "round {round}: the kill came after every record was consumed (make the input bigger)"
        );
        println!("round {round}: killed after {target} records of this run, lag {lag} of {total}");
        between(round);
        round += 1;
    }
    last_run(env, app, topics, input.produced())
}

/// Starts the last run and waits until all `total` input offsets are consumed and its row
/// counts are published.
fn last_run(env: &[(String, String)], app: &str, topics: &[&str], total: u64) -> Sidejoin {
    let mut last = Sidejoin::start("run", env);
    last.wait_ready(WAIT);
    let deadline = Instant::now() + WAIT;
    while consumed(app, topics) < total as i64 {
        assert!(
            Instant::now() < deadline,
            "not every offset consumed:\n{}",
            last.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // The state's row counts are published just after the checkpoint that committed the last
    // offsets: read a moment too early, they are the previous checkpoint's.
    last.wait_metric_settled("sidejoin_state_rows", WAIT);
    last
}

/// Runs sidejoin under `env` until it has consumed `records` input records, then stops it with
/// SIGTERM and asserts the clean stop (exit 0).
pub(crate) fn run_until_consumed(env: &[(String, String)], records: usize) {
    let mut sj = Sidejoin::start("run", env);
    sj.wait_ready(WAIT);
    sj.wait_records_in(records as u64, WAIT);
    sj.signal("TERM");
    assert_eq!(sj.wait(WAIT), 0, "clean stop:\n{}", sj.logs());
}

/// The state directory `kafka::base_env` gives `app`.
pub(crate) fn state_dir(env: &[(String, String)]) -> std::path::PathBuf {
    env.iter()
        .find(|(k, _)| k == "SIDEJOIN_STATE_DIR")
        .map(|(_, v)| v.into())
        .expect("SIDEJOIN_STATE_DIR set")
}

/// Instance `i`'s variables: `env` with its own state directory (under `env`'s), as pods have
/// their own volumes.
pub(crate) fn instance(env: &[(String, String)], i: usize) -> Vec<(String, String)> {
    let mut env = env.to_vec();
    let dir = state_dir(&env).join(format!("instance-{i}"));
    env.push((
        "SIDEJOIN_STATE_DIR".into(),
        dir.to_string_lossy().into_owned(),
    ));
    env
}

/// Waits until group `app` has committed `n` input offsets of `topics`; fails with the logs of
/// the `running` instances.
pub(crate) fn wait_consumed(app: &str, topics: &[&str], n: i64, what: &str, running: &[&Sidejoin]) {
    let deadline = Instant::now() + WAIT;
    while consumed(app, topics) < n {
        if Instant::now() >= deadline {
            let logs: Vec<String> = running.iter().map(|s| s.logs()).collect();
            panic!(
                "{what}: {} of {n} offsets consumed; logs:\n{}",
                consumed(app, topics),
                logs.join("\n----\n")
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
