//! Whose a state directory is. Changelog positions alone cannot tell: a volume reused under
//! another `SIDEJOIN_APPLICATION_ID`, or kept while a changelog topic was deleted and created
//! again, can hold positions inside the current changelog's range, and its rows would merge into
//! this application's. So each worker's directory records, in the file `identity`, the
//! application id and the topic ID (Kafka's UUID, `kafka::topic_ids`) of each changelog and
//! input topic. At start a directory that records another identity — or none while it holds
//! state (written before identities were recorded) — is emptied, with one log line saying why,
//! and its partitions are restored from the changelog; a matching one is kept and checked by
//! position as before (`restore`). While running, the changelog topics' IDs are checked again
//! at each restore and every `RECHECK`: a changelog recreated under a running instance stops it
//! (`RunError::ChangelogReplaced`).

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use rdkafka::client::Client;
use rdkafka::consumer::Consumer;
use rdkafka::ClientContext;

use crate::kafka::topic_ids::{topic_ids, TopicIdError};
use crate::plan::Plan;
use crate::runtime::RunError;

use super::Protocol;

/// How long a `DescribeTopics` call may take.
pub(super) const DESCRIBE: Duration = Duration::from_secs(10);

/// How long the check of a failing checkpoint may take: usually the broker is down, and the
/// check cannot answer; an abort must not wait long for it.
pub(super) const DESCRIBE_ON_ABORT: Duration = Duration::from_secs(2);

/// How often a running worker checks its changelog topics' IDs (beside each restore).
const RECHECK: Duration = Duration::from_secs(10);

/// The file, in a worker's state directory, that records its identity.
const FILE: &str = "identity";

/// The file that survives emptying a directory: the volume's id (`worker::start`).
const KEEP: &str = "transactional.id";

/// What a state directory belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub application: String,
    /// Each changelog topic and its ID.
    pub changelogs: Vec<(String, String)>,
    /// Each topic the tasks read (own or repartition topic) and its ID.
    pub inputs: Vec<(String, String)>,
}

impl Identity {
    /// The current identity of `plan`'s state under `application`; `None` when it has no
    /// changelog (volatile state).
    pub(crate) fn current<C: ClientContext>(
        client: &Client<C>,
        application: &str,
        plan: &Plan,
    ) -> Result<Option<Identity>, RunError> {
        let Some(changelogs) = &plan.changelogs else {
            return Ok(None);
        };
        let inputs: Vec<&str> = plan.sources.iter().map(|s| s.topic.as_str()).collect();
        let changelogs: Vec<&str> = changelogs.iter().map(String::as_str).collect();
        let ids = |topics: &[&str]| -> Result<Vec<(String, String)>, RunError> {
            let ids = topic_ids(client, topics, DESCRIBE).map_err(identity_error)?;
            Ok(topics.iter().map(|t| t.to_string()).zip(ids).collect())
        };
        Ok(Some(Identity {
            application: application.to_owned(),
            changelogs: ids(&changelogs)?,
            inputs: ids(&inputs)?,
        }))
    }

    fn render(&self) -> String {
        let mut s = format!("application {}\n", self.application);
        for (t, id) in &self.changelogs {
            let _ = writeln!(s, "changelog {t} {id}");
        }
        for (t, id) in &self.inputs {
            let _ = writeln!(s, "input {t} {id}");
        }
        s
    }

    fn parse(text: &str) -> Option<Identity> {
        let mut id = Identity {
            application: String::new(),
            changelogs: Vec::new(),
            inputs: Vec::new(),
        };
        for line in text.lines() {
            let mut words = line.split(' ');
            match (words.next(), words.next(), words.next()) {
                (Some("application"), Some(app), None) => id.application = app.to_owned(),
                (Some("changelog"), Some(t), Some(u)) => id.changelogs.push((t.into(), u.into())),
                (Some("input"), Some(t), Some(u)) => id.inputs.push((t.into(), u.into())),
                _ => return None,
            }
        }
        Some(id)
    }

    /// Why a directory recording `self` is not `now`'s; `None` when it is.
    pub(crate) fn mismatch(&self, now: &Identity) -> Option<String> {
        if self.application != now.application {
            return Some(format!(
                "it belongs to application `{}`, not `{}`",
                self.application, now.application
            ));
        }
        let pairs = [("changelog", &self.changelogs, &now.changelogs)]
            .into_iter()
            .chain([("input", &self.inputs, &now.inputs)]);
        for (what, was, is) in pairs {
            for (topic, id) in is {
                match was.iter().find(|(t, _)| t == topic) {
                    Some((_, old)) if old == id => {}
                    Some((_, old)) => {
                        return Some(format!(
                            "{what} topic `{topic}` was recreated (topic ID {old}, now {id})"
                        ))
                    }
                    None => return Some(format!("it records no {what} topic `{topic}`")),
                }
            }
        }
        None
    }
}

/// What to do with a state directory at start.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// It records this identity.
    Keep,
    /// It records no identity and holds no state: record this one.
    Record,
    /// It must be emptied (why) before use.
    Discard(String),
}

/// Compares the identity `dir` records with `now`; `holds_state` says whether the directory
/// held a RocksDB database before this start opened it.
pub(crate) fn verdict(dir: &Path, now: &Identity, holds_state: bool) -> Verdict {
    match std::fs::read_to_string(dir.join(FILE)) {
        Ok(text) => match Identity::parse(&text) {
            Some(was) => match was.mismatch(now) {
                None => Verdict::Keep,
                Some(why) => Verdict::Discard(why),
            },
            None => Verdict::Discard(format!("its {FILE} file cannot be read")),
        },
        Err(_) if !holds_state => Verdict::Record,
        Err(_) => Verdict::Discard(format!(
            "it records no identity (written by a sidejoin before {FILE} files)"
        )),
    }
}

/// Whether `dir` holds a RocksDB database (before it is opened: opening creates one).
pub(crate) fn holds_state(dir: &Path) -> bool {
    dir.join("CURRENT").exists()
}

/// Records `id` in `dir`.
pub(crate) fn record(dir: &Path, id: &Identity) -> Result<(), RunError> {
    let file = dir.join(FILE);
    let tmp = dir.join(format!("{FILE}.tmp"));
    std::fs::write(&tmp, id.render())
        .and_then(|()| std::fs::rename(&tmp, &file))
        .map_err(|e| RunError::StateDir(format!("cannot write {}: {e}", file.display())))
}

/// Empties `dir` (its store must be closed), keeping the volume's id.
pub(crate) fn empty(dir: &Path) -> Result<(), RunError> {
    let io = |e: std::io::Error| RunError::StateDir(format!("cannot empty {}: {e}", dir.display()));
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if entry.file_name() == KEEP {
            continue;
        }
        match entry.file_type().map_err(io)?.is_dir() {
            true => std::fs::remove_dir_all(entry.path()).map_err(io)?,
            false => std::fs::remove_file(entry.path()).map_err(io)?,
        }
    }
    Ok(())
}

/// The changelog topics and their IDs `dir` records (none without an identity).
pub(crate) fn recorded_changelogs(dir: &Path) -> Vec<(String, String)> {
    (std::fs::read_to_string(dir.join(FILE)).ok())
        .and_then(|text| Identity::parse(&text))
        .map(|id| id.changelogs)
        .unwrap_or_default()
}

impl<S> Protocol<S> {
    /// Checks the changelog topics' IDs against the state's identity, waiting up to `wait` for
    /// the answer: at once when `now`, else at most every `RECHECK`.
    pub(super) fn check_identity(&mut self, now: bool, wait: Duration) -> Result<(), RunError> {
        let due = self
            .identity_checked
            .is_none_or(|at| at.elapsed() >= RECHECK);
        if self.identity.is_empty() || !(now || due) {
            return Ok(());
        }
        recheck(self.restorer.client(), &self.identity, wait)?;
        self.identity_checked = Some(Instant::now());
        Ok(())
    }
}

/// The changelog topics' IDs now, checked against those a running worker started with.
fn recheck<C: ClientContext>(
    client: &Client<C>,
    expected: &[(String, String)],
    wait: Duration,
) -> Result<(), RunError> {
    let topics: Vec<&str> = expected.iter().map(|(t, _)| t.as_str()).collect();
    let now = match topic_ids(client, &topics, wait) {
        Ok(ids) => ids,
        // No answer (an outage) proves nothing: the next check asks again.
        Err(TopicIdError::TimedOut { .. } | TopicIdError::Failed { .. }) => return Ok(()),
        Err(TopicIdError::Topic { topic, why }) => {
            return Err(RunError::ChangelogReplaced {
                was: expected_id(expected, &topic),
                topic,
                now: format!("none ({why})"),
            })
        }
    };
    for ((topic, was), now) in expected.iter().zip(now) {
        if *was != now {
            return Err(RunError::ChangelogReplaced {
                topic: topic.clone(),
                was: was.clone(),
                now,
            });
        }
    }
    Ok(())
}

fn expected_id(expected: &[(String, String)], topic: &str) -> String {
    (expected.iter().find(|(t, _)| t == topic))
        .map(|(_, id)| id.clone())
        .unwrap_or_default()
}

fn identity_error(e: TopicIdError) -> RunError {
    RunError::StateDir(format!(
        "cannot read the topics' IDs for the state's identity: {e}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(app: &str, changelog: &str, input: &str) -> Identity {
        Identity {
            application: app.into(),
            changelogs: vec![("c".into(), changelog.into())],
            inputs: vec![("i".into(), input.into())],
        }
    }

    #[test]
    fn an_identity_reads_back_as_written_and_names_what_differs() {
        let a = id("a", "C1", "I1");
        assert_eq!(Identity::parse(&a.render()), Some(a.clone()));
        assert_eq!(a.mismatch(&a), None);
        assert!(a
            .mismatch(&id("b", "C1", "I1"))
            .unwrap()
            .contains("application `a`"));
        let recreated = a.mismatch(&id("a", "C2", "I1")).unwrap();
        assert!(recreated.contains("changelog topic `c` was recreated (topic ID C1, now C2)"));
        assert!(a
            .mismatch(&id("a", "C1", "I2"))
            .unwrap()
            .contains("input topic `i`"));
    }

    #[test]
    fn a_directory_is_kept_recorded_or_discarded() {
        let dir = tempfile::tempdir().unwrap();
        let a = id("a", "C1", "I1");
        assert_eq!(verdict(dir.path(), &a, false), Verdict::Record);
        assert!(matches!(verdict(dir.path(), &a, true), Verdict::Discard(_)));
        record(dir.path(), &a).unwrap();
        assert_eq!(verdict(dir.path(), &a, true), Verdict::Keep);
        assert!(matches!(
            verdict(dir.path(), &id("b", "C1", "I1"), true),
            Verdict::Discard(_)
        ));
        std::fs::write(dir.path().join(KEEP), "v").unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        empty(dir.path()).unwrap();
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from(KEEP)]);
    }
}
