//! The plan in words: one line for logs (`topology`) and the block `sidejoin check` prints.

use std::fmt;

use super::{Placement, Plan, Source, Target, TopicKind};

impl Plan {
    /// One line: the partition counts the join reads, how each side is placed, the output.
    pub(crate) fn topology(&self) -> String {
        let [l, r] = [&self.sources[0], &self.sources[1]];
        let out = self.output.partitions;
        if self.sources.len() > 2 {
            return self.star_topology();
        }
        let mut line = match self.broadcasts().next() {
            None => format!(
                "topics: left {} partitions, right {} partitions (co-partitioned), output {out} partitions",
                l.partitions, r.partitions
            ),
            Some(b) => format!(
                "topics: left {} partitions, right {} partitions ({} broadcast: every worker reads all {} of its partitions for each of the {} tasks of the {} side), output {out} partitions",
                l.partitions,
                r.partitions,
                b.side,
                b.partitions,
                self.tasks,
                b.side.other()
            ),
        };
        for s in &self.sources {
            if let Placement::Repartitioned { own_partitions, .. } = &s.placement {
                line.push_str(&format!(
                    "; the {} topic's {own_partitions} partitions re-keyed into {} ({})",
                    s.side, s.partitions, s.why
                ));
            }
        }
        line
    }

    /// `topology` of a star join: every input with its partitions and placement.
    fn star_topology(&self) -> String {
        let inputs: Vec<String> = self
            .sources
            .iter()
            .map(|s| {
                let how = match (s.side.is_dimension(), &s.placement) {
                    (false, _) => "fact",
                    (true, Placement::Broadcast) => "broadcast",
                    (true, _) => "co-partitioned",
                };
                format!("{} {} partitions ({how})", s.side, s.partitions)
            })
            .collect();
        format!(
            "star join, topics: {}; {} tasks; output {} partitions",
            inputs.join(", "),
            self.tasks,
            self.output.partitions
        )
    }
}

impl fmt::Display for Plan {
    /// The whole plan, one fact per line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.topology())?;
        writeln!(f, "plan:")?;
        for s in &self.sources {
            let how = placement_text(s);
            writeln!(
                f,
                "  source {}: `{}` ({} partitions), {how}",
                s.side, s.topic, s.partitions
            )?;
        }
        writeln!(f, "  tasks: {} (units of join state)", self.tasks)?;
        for r in &self.routers {
            let keys = match &r.target {
                Target::Own => "sidejoin's canonical keys, murmur2".to_owned(),
                Target::Mirror { topic, .. } => format!("as `{topic}` keys and places them"),
            };
            writeln!(
                f,
                "  router {}: `{}` → `{}` ({} partitions; {keys}; one for the application)",
                r.side, r.source_topic, r.topic, r.partitions
            )?;
        }
        for t in self.internal_topics() {
            let kind = match t.kind {
                TopicKind::Changelog => "changelog, compacted",
                TopicKind::Repartition => "repartition, no retention (purged)",
                TopicKind::DeadLetter => "dead letters",
            };
            writeln!(
                f,
                "  internal topic `{}`: {} partitions ({kind}; created when missing)",
                t.name, t.partitions
            )?;
        }
        for w in &self.workers {
            writeln!(
                f,
                "  worker {}: state in {}{}",
                w.index,
                w.state_dir.display(),
                w.instance_id
                    .as_deref()
                    .map(|id| format!(", static member `{id}`"))
                    .unwrap_or_default()
            )?;
        }
        Ok(())
    }
}

/// How a source's records reach the tasks, as `check` prints it.
fn placement_text(s: &Source) -> String {
    let how = match &s.placement {
        Placement::CoPartitioned => {
            "co-partitioned: partition i feeds task i, read through the consumer group".to_owned()
        }
        Placement::Broadcast => {
            "broadcast: every task reads all its partitions (SIDEJOIN_BROADCAST)".to_owned()
        }
        Placement::Repartitioned { by, own_topic, .. } => format!(
            "repartitioned: `{own_topic}` re-keyed by {}, read through the consumer group",
            by.join(",")
        ),
    };
    format!("{how} — {}", s.why)
}
