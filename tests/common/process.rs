//! A `sidejoin` process under test (started through `bin`): its log file, its `/metrics` and
//! readiness over HTTP, signals, and its exit.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::kafka::unique;

/// A `sidejoin` child process with its stderr captured in a file.
pub(crate) struct Sidejoin {
    child: Child,
    log: PathBuf,
    http: Option<String>,
}

impl Sidejoin {
    /// Starts `sidejoin <subcommand>` with exactly `env` (plus PATH and an HTTP port of 0).
    pub(crate) fn start(subcommand: &str, env: &[(String, String)]) -> Sidejoin {
        let log = std::env::temp_dir().join(format!("{}.log", unique("sidejoin-test")));
        let file = std::fs::File::create(&log).unwrap();
        // The defaults first: `env` may override any of them.
        let defaults = [
            ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
            (
                "RUST_LOG".to_owned(),
                std::env::var("TEST_SIDEJOIN_LOG").unwrap_or_else(|_| "info".into()),
            ),
            ("SIDEJOIN_HTTP_ADDR".to_owned(), "127.0.0.1:0".to_owned()),
        ];
        let child =
            super::bin::sidejoin(subcommand, defaults.into_iter().chain(env.iter().cloned()))
                .stdout(Stdio::null())
                .stderr(file)
                .spawn()
                .unwrap();
        Sidejoin {
            child,
            log,
            http: None,
        }
    }

    pub(crate) fn logs(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The HTTP address it logged (`http listening on …`).
    pub(crate) fn http(&mut self) -> String {
        if let Some(a) = &self.http {
            return a.clone();
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let logs = self.logs();
            if let Some(rest) = logs.split("http listening on ").nth(1) {
                let addr: String = rest.chars().take_while(|c| !c.is_whitespace()).collect();
                self.http = Some(addr.clone());
                return addr;
            }
            assert!(Instant::now() < deadline, "no http address logged:\n{logs}");
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("sidejoin exited ({status}) before serving HTTP:\n{logs}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `GET path` on its HTTP address: (status, body).
    pub(crate) fn get(&mut self, path: &str) -> (u16, String) {
        let addr = self.http();
        let mut s = match TcpStream::connect(&addr) {
            Ok(s) => s,
            Err(e) => {
                let status = self.child.try_wait().unwrap();
                panic!(
                    "GET {path} on {addr}: {e} (process: {status:?}):\n{}",
                    self.logs()
                );
            }
        };
        write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let status = resp
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = resp.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
        (status, body)
    }

    /// The sum of a metric's samples whose labels contain `labels` (e.g. `side="left"`).
    pub(crate) fn metric(&mut self, name: &str, labels: &str) -> f64 {
        let (_, body) = self.get("/metrics");
        body.lines()
            .filter(|l| {
                l.starts_with(name)
                    && (l[name.len()..].starts_with('{') || l[name.len()..].starts_with(' '))
            })
            .filter(|l| l.contains(labels))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    }

    /// The lines of metric `name` in `/metrics`.
    fn metric_lines(&mut self, name: &str) -> Vec<String> {
        let (_, body) = self.get("/metrics");
        body.lines()
            .filter(|l| l.starts_with(name))
            .map(str::to_owned)
            .collect()
    }

    /// Waits until metric `name` reads the same twice a second apart: gauges published just
    /// after a checkpoint commits lag its committed offsets by a moment.
    pub(crate) fn wait_metric_settled(&mut self, name: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        let mut before = self.metric_lines(name);
        loop {
            std::thread::sleep(Duration::from_secs(1));
            let now = self.metric_lines(name);
            if now == before {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{name} still changing:\n{}",
                self.logs()
            );
            before = now;
        }
    }

    pub(crate) fn records_in(&mut self) -> u64 {
        self.metric("sidejoin_records_in_total", "") as u64
    }

    /// Waits until `records_in` reaches `n`.
    pub(crate) fn wait_records_in(&mut self, n: u64, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        loop {
            let got = self.records_in();
            if got >= n {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "records_in stuck at {got} < {n}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn wait_ready(&mut self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while self.get("/readyz").0 != 200 {
            assert!(Instant::now() < deadline, "not ready:\n{}", self.logs());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn signal(&self, sig: &str) {
        let status = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// The exit code once the process has exited (`-1` for a signal).
    pub(crate) fn exited(&mut self) -> Option<i32> {
        (self.child.try_wait().unwrap()).map(|status| status.code().unwrap_or(-1))
    }

    /// Waits for the process to exit; returns its exit code.
    pub(crate) fn wait(&mut self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "sidejoin did not exit:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Sidejoin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // KEEP_TEST_LOGS=1 keeps every process's log (their paths are printed) for a post-mortem.
        match std::env::var_os("KEEP_TEST_LOGS") {
            Some(_) => println!("log kept: {}", self.log.display()),
            None => {
                let _ = std::fs::remove_file(&self.log);
            }
        }
    }
}
