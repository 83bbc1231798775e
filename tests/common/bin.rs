//! The one way the tests run the `sidejoin` binary: a subcommand with exactly the environment
//! given (nothing inherited, so a developer's `SIDEJOIN_*` variables cannot leak into a test).
//! Callers add what their run needs (stdin, a log file) and `output()` or `spawn()` it.

use std::ffi::OsStr;
use std::process::Command;

/// `sidejoin <subcommand>` with exactly `env`.
pub(crate) fn sidejoin<K, V>(subcommand: &str, env: impl IntoIterator<Item = (K, V)>) -> Command
where
    K: AsRef<OsStr>,
    V: AsRef<OsStr>,
{
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_sidejoin"));
    cmd.arg(subcommand).env_clear().envs(env);
    cmd
}
