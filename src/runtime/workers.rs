//! `SIDEJOIN_WORKERS` (SPEC §6): the partitions an instance owns are spread over worker
//! threads, as Kafka Streams' stream threads. Each worker is exactly one instance of before:
//! its own group consumer (in the same group), producers, restore consumer, engine and state.
//! Partitions moving between workers are restored from the changelog like partitions moving
//! between instances; a stale local copy in a worker's directory is verified against it.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::config::Config;

/// The configuration of each worker of `cfg`. One worker is the instance itself (the state in
/// `SIDEJOIN_STATE_DIR`, as before workers existed, so existing volumes keep working). Worker
/// `i` of several keeps its state in `<SIDEJOIN_STATE_DIR>/worker-<i>` (so its own
/// `transactional.id` volume id), is the static member `<SIDEJOIN_INSTANCE_ID>-<i>` (ids in a
/// group are unique; its transactional id follows), and gets an even share of the state caches
/// and write buffers, which are per instance.
pub fn worker_configs(cfg: &Config) -> Vec<Config> {
    let n = cfg.process.workers.max(1);
    if n == 1 {
        return vec![cfg.clone()];
    }
    let share = |mb: usize| (mb / n).max(1);
    (0..n)
        .map(|i| {
            let mut w = cfg.clone();
            w.process.worker = i;
            w.process.state_dir = worker_dir(&cfg.process.state_dir, i);
            w.kafka.instance_id = cfg.kafka.instance_id.as_ref().map(|id| format!("{id}-{i}"));
            w.process.state_block_cache_mb = share(cfg.process.state_block_cache_mb);
            w.process.state_cache_mb = share(cfg.process.state_cache_mb);
            w.process.state_write_buffer_mb = share(cfg.process.state_write_buffer_mb);
            w
        })
        .collect()
}

fn worker_dir(state_dir: &Path, i: usize) -> std::path::PathBuf {
    state_dir.join(format!("worker-{i}"))
}

/// Holds each worker back, once its startup is done, until every worker is ready to join the
/// group: joined together they cause one rebalance, where joining one by one causes one each,
/// and each revokes what the workers already in the group process (aborting their checkpoints).
pub struct StartGate {
    workers: usize,
    arrived: AtomicUsize,
}

impl StartGate {
    pub fn new(workers: usize) -> Self {
        StartGate {
            workers,
            arrived: AtomicUsize::new(0),
        }
    }

    /// Returns once every worker has arrived, or `stop` is cancelled (a worker that fails
    /// before arriving cancels it: nobody waits for it).
    pub fn arrive(&self, stop: &CancellationToken) {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        while self.arrived.load(Ordering::SeqCst) < self.workers && !stop.is_cancelled() {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{self, Mode};

    fn load(extra: &[(&str, &str)]) -> Config {
        let env = [
            ("SIDEJOIN_LEFT_KEY", "k"),
            ("SIDEJOIN_RIGHT_KEY", "k"),
            ("SIDEJOIN_STATE_DIR", "/data"),
            ("SIDEJOIN_INSTANCE_ID", "pod-0"),
        ];
        let vars = env
            .iter()
            .chain(extra)
            .map(|(k, v)| (k.to_string(), v.to_string()));
        config::load(vars, Mode::Check).expect("valid configuration")
    }

    #[test]
    fn one_worker_is_the_instance() {
        let cfg = load(&[("SIDEJOIN_WORKERS", "1")]);
        assert_eq!(worker_configs(&cfg), vec![cfg]);
    }

    #[test]
    fn several_workers_have_their_own_dirs_and_member_ids() {
        let cfg = load(&[("SIDEJOIN_WORKERS", "3"), ("SIDEJOIN_STATE_CACHE_MB", "90")]);
        let w = worker_configs(&cfg);
        assert_eq!(w.len(), 3);
        assert_eq!(w[2].process.state_dir, Path::new("/data/worker-2"));
        assert_eq!(w[1].kafka.instance_id.as_deref(), Some("pod-0-1"));
        assert_eq!(w[0].process.state_cache_mb, 30);
    }

    #[test]
    fn the_gate_opens_when_every_worker_arrived_or_on_stop() {
        let gate = std::sync::Arc::new(StartGate::new(2));
        let stop = CancellationToken::new();
        let (g, s) = (gate.clone(), stop.clone());
        let first = std::thread::spawn(move || g.arrive(&s));
        gate.arrive(&stop);
        first.join().unwrap();
        let lonely = StartGate::new(2);
        stop.cancel();
        lonely.arrive(&stop);
    }
}
