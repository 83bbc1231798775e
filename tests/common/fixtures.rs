//! Golden replay fixtures: `tests/fixtures/replay/<name>/` holds
//!
//! - `env`: the `SIDEJOIN_*` variables (`NAME='value'` lines, `#` comments);
//! - optionally `job.sql`: a Flink SQL script, given as `SIDEJOIN_SQL_FILE` (its absolute path);
//! - `input.jsonl`: the records;
//! - `expected.jsonl`: what replay prints, written by hand from SPEC;
//! - optionally `args` (extra replay arguments, one line; `--stdin` feeds the input on stdin),
//!   `exit` (the expected exit code, default 0), `stderr.jsonl` (JSON lines each contained in
//!   some stderr line, see `compare::subset`), `stderr.txt` (substrings stderr must contain),
//!   `stdout.txt` (substrings stdout must contain byte for byte: number text, key bytes) and
//!   `ordered` (an empty file: changes must also keep their order within each cause).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;
use sidejoin::config::{self, Mode};
use sidejoin::engine::JoinState;
use sidejoin::replay::{self, ReplayOptions};

use super::compare::{parse_lines, same_order, same_output, subset};

#[derive(Debug, Clone)]
pub(crate) struct Fixture {
    pub name: String,
    pub dir: PathBuf,
    pub env: Vec<(String, String)>,
    pub input: String,
    pub expected: String,
    pub records: bool,
    pub stdin: bool,
    pub exit: i32,
    pub stderr_json: Vec<Value>,
    pub stderr_text: Vec<String>,
    pub stdout_text: Vec<String>,
    pub ordered: bool,
}

/// What one run printed and how it ended.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub exit: i32,
    pub stdout: String,
    pub stderr: String,
}

pub(crate) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/replay")
}

/// Parses an env file of `NAME='value'` / `NAME=value` lines.
pub(crate) fn parse_env(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (k, v) = l
                .split_once('=')
                .unwrap_or_else(|| panic!("bad env line {l:?}"));
            let v = v.trim();
            let v = v
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| v.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
                .unwrap_or(v);
            (k.trim().to_owned(), v.to_owned())
        })
        .collect()
}

fn read_opt(dir: &Path, file: &str) -> Option<String> {
    std::fs::read_to_string(dir.join(file)).ok()
}

/// The non-blank lines of an optional file.
fn lines_of(dir: &Path, file: &str) -> Vec<String> {
    read_opt(dir, file)
        .map(|s| {
            s.lines()
                .filter(|l| !l.trim().is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn load(dir: &Path) -> Fixture {
    let read =
        |f: &str| read_opt(dir, f).unwrap_or_else(|| panic!("{}: missing {f}", dir.display()));
    let args = read_opt(dir, "args").unwrap_or_default();
    let mut env = parse_env(&read("env"));
    if dir.join("job.sql").exists() {
        let path = dir.join("job.sql").to_string_lossy().into_owned();
        env.push(("SIDEJOIN_SQL_FILE".to_owned(), path));
    }
    Fixture {
        name: dir.file_name().unwrap().to_string_lossy().into_owned(),
        dir: dir.to_owned(),
        env,
        input: read("input.jsonl"),
        expected: read_opt(dir, "expected.jsonl").unwrap_or_default(),
        records: args.split_whitespace().any(|a| a == "--records"),
        stdin: args.split_whitespace().any(|a| a == "--stdin"),
        exit: read_opt(dir, "exit")
            .map(|s| s.trim().parse().expect("exit code"))
            .unwrap_or(0),
        stderr_json: read_opt(dir, "stderr.jsonl")
            .map(|s| parse_lines(&s).expect("stderr.jsonl"))
            .unwrap_or_default(),
        stderr_text: lines_of(dir, "stderr.txt"),
        stdout_text: lines_of(dir, "stdout.txt"),
        ordered: dir.join("ordered").exists(),
    }
}

pub(crate) fn all() -> Vec<Fixture> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("tests/fixtures/replay")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs.iter().map(|d| load(d)).collect()
}

/// Runs a fixture through the library's replay over `state`, as the binary would.
pub(crate) fn run_in_process<S: JoinState>(f: &Fixture, state: S) -> Outcome {
    let config = match config::load(f.env.clone(), Mode::Replay) {
        Ok(c) => c,
        Err(e) => {
            return Outcome {
                exit: 2,
                stdout: String::new(),
                stderr: e.to_string(),
            }
        }
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let result = replay::replay(
        &config,
        state,
        f.input.as_bytes(),
        &mut out,
        &mut err,
        ReplayOptions { records: f.records },
    );
    Outcome {
        exit: if result.is_ok() { 0 } else { 1 },
        stdout: String::from_utf8(out).unwrap(),
        stderr: String::from_utf8(err).unwrap()
            + &result.err().map(|e| e.to_string()).unwrap_or_default(),
    }
}

/// Runs a fixture through the `sidejoin` binary, with only the fixture's variables set.
pub(crate) fn run_binary(f: &Fixture) -> Outcome {
    let mut cmd = super::bin::sidejoin("replay", f.env.iter().cloned());
    if f.records {
        cmd.arg("--records");
    }
    if f.stdin {
        cmd.stdin(Stdio::piped());
    } else {
        cmd.arg(f.dir.join("input.jsonl"));
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn sidejoin");
    if f.stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(f.input.as_bytes())
            .unwrap();
    }
    let out = child.wait_with_output().unwrap();
    Outcome {
        exit: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Checks an outcome against the fixture's expectations.
pub(crate) fn check(f: &Fixture, o: &Outcome) -> Result<(), String> {
    if o.exit != f.exit {
        return Err(format!(
            "exit {} (expected {})\nstderr:\n{}",
            o.exit, f.exit, o.stderr
        ));
    }
    same_output(&f.expected, &o.stdout)?;
    if f.ordered {
        same_order(&f.expected, &o.stdout)?;
    }
    let stderr_lines: Vec<Value> = o
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    for e in &f.stderr_json {
        if !stderr_lines.iter().any(|a| subset(e, a)) {
            return Err(format!(
                "stderr has no line containing {e}\nstderr:\n{}",
                o.stderr
            ));
        }
    }
    for t in &f.stderr_text {
        if !o.stderr.contains(t.as_str()) {
            return Err(format!(
                "stderr does not contain {t:?}\nstderr:\n{}",
                o.stderr
            ));
        }
    }
    for t in &f.stdout_text {
        if !o.stdout.contains(t.as_str()) {
            return Err(format!(
                "stdout does not contain {t:?} byte for byte\nstdout:\n{}",
                o.stdout
            ));
        }
    }
    Ok(())
}

/// Runs every fixture in process over fresh stores from `factory`; panics listing all failures.
pub(crate) fn golden_suite<S: JoinState>(factory: impl Fn() -> S) {
    let fixtures = all();
    assert!(fixtures.len() > 10, "fixtures not found");
    let failures: Vec<String> = fixtures
        .iter()
        .filter_map(|f| {
            check(f, &run_in_process(f, factory()))
                .err()
                .map(|e| format!("--- {}: {e}", f.name))
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} golden fixture(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
