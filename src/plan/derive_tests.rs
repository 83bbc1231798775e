use std::path::Path;

use sidejoin_core::config::{self, Mode};

use super::*;
use crate::plan::TopicKind;

fn settings(extra: &[(&str, &str)]) -> Config {
    let base = [
        ("SIDEJOIN_LEFT_KEY", "k"),
        ("SIDEJOIN_RIGHT_KEY", "k"),
        ("SIDEJOIN_LEFT_TOPIC", "orders"),
        ("SIDEJOIN_RIGHT_TOPIC", "users"),
        ("SIDEJOIN_OUTPUT_TOPIC", "out"),
        ("SIDEJOIN_APPLICATION_ID", "app"),
        ("SIDEJOIN_STATE_DIR", "/data"),
        ("SIDEJOIN_WORKERS", "1"),
    ];
    let vars = base
        .iter()
        .chain(extra)
        .map(|(k, v)| (k.to_string(), v.to_string()));
    config::load(vars, Mode::Check).expect("valid configuration")
}

fn cluster(left: i32, right: i32) -> Facts {
    Facts::of(1, &[("orders", left), ("users", right), ("out", 3)])
}

#[test]
fn co_partitioned_inputs_are_read_through_the_group_one_task_per_partition() {
    let plan = derive(&settings(&[]), &cluster(4, 4), true).unwrap();
    assert_eq!(plan.tasks, 4);
    assert!(plan
        .sources
        .iter()
        .all(|s| s.placement == Placement::CoPartitioned));
    assert_eq!(plan.readings(), [Reading::Own; 2]);
    assert!(plan.checks_keys);
    assert_eq!(plan.output.partitions, 3);
    let internal: Vec<(String, i32, TopicKind)> = plan
        .internal_topics()
        .into_iter()
        .map(|t| (t.name, t.partitions, t.kind))
        .collect();
    assert_eq!(
        internal,
        [
            ("app.dlq".to_owned(), 1, TopicKind::DeadLetter),
            ("app-left-changelog".to_owned(), 4, TopicKind::Changelog),
            ("app-right-changelog".to_owned(), 4, TopicKind::Changelog),
        ]
    );
}

#[test]
fn one_partition_needs_no_key_check_and_volatile_state_no_changelog() {
    let cfg = settings(&[("SIDEJOIN_ON_ERROR", "skip")]);
    let plan = derive(&cfg, &cluster(1, 1), false).unwrap();
    assert!(!plan.checks_keys);
    assert!(plan.internal_topics().is_empty());
}

#[test]
fn missing_topics_are_named_with_their_variables() {
    let e = derive(&settings(&[]), &Facts::of(1, &[("orders", 1)]), true).unwrap_err();
    assert_eq!(
        e.to_string(),
        "SIDEJOIN_RIGHT_TOPIC: topic `users` does not exist; SIDEJOIN_OUTPUT_TOPIC: topic `out` does not exist \
         (create it first; sidejoin creates only its dead-letter and internal topics)"
    );
}

#[test]
fn unequal_partition_counts_name_both_topics_and_both_fixes() {
    let e = derive(&settings(&[]), &cluster(6, 1), true).unwrap_err();
    let text = e.to_string();
    assert!(text.contains("left topic `orders` has 6 partitions but right topic `users` has 1"));
    assert!(text.contains("set SIDEJOIN_BROADCAST=right"), "{text}");
    assert!(
        text.contains("or SIDEJOIN_RIGHT_HASH_BY=$join_key"),
        "{text}"
    );
}

#[test]
fn a_broadcast_side_feeds_every_task_of_the_other() {
    let cfg = settings(&[("SIDEJOIN_BROADCAST", "right")]);
    let plan = derive(&cfg, &cluster(6, 2), true).unwrap();
    assert_eq!(plan.tasks, 6);
    assert_eq!(plan.broadcast().map(|s| s.side), Some(Side::Right));
    assert_eq!(plan.source(Side::Right).partitions, 2);
    assert!(!plan.checks_keys);
}

#[test]
fn a_repartitioned_side_is_read_from_its_topic_with_the_other_sides_count() {
    let cfg = settings(&[("SIDEJOIN_RIGHT_HASH_BY", "$join_key")]);
    let plan = derive(&cfg, &cluster(4, 1), true).unwrap();
    let right = plan.source(Side::Right);
    assert_eq!(right.topic, "app-right-repartition");
    assert_eq!(right.partitions, 4);
    assert_eq!(right.reading, Reading::Changes);
    assert_eq!(
        plan.routers,
        [RouterPlan {
            side: Side::Right,
            source_topic: "users".into(),
            topic: "app-right-repartition".into(),
            partitions: 4,
            target: Target::Mirror {
                topic: "orders".into(),
                partitions: 4
            },
        }]
    );
    assert!(plan.checks_keys, "the left side is still judged");
}

#[test]
fn both_sides_repartitioned_take_the_larger_count_and_sidejoins_own_keys() {
    let cfg = settings(&[
        ("SIDEJOIN_LEFT_HASH_BY", "$join_key"),
        ("SIDEJOIN_RIGHT_HASH_BY", "$join_key"),
    ]);
    let plan = derive(&cfg, &cluster(2, 5), true).unwrap();
    assert_eq!(plan.tasks, 5);
    assert!(plan
        .routers
        .iter()
        .all(|r| r.target == Target::Own && r.partitions == 5));
    assert!(!plan.checks_keys);
}

#[test]
fn one_worker_is_the_instance_several_have_their_own_dirs_and_member_ids() {
    let one = derive(
        &settings(&[("SIDEJOIN_INSTANCE_ID", "pod-0")]),
        &cluster(1, 1),
        true,
    )
    .unwrap()
    .workers;
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].state_dir, Path::new("/data"));
    assert_eq!(one[0].instance_id.as_deref(), Some("pod-0"));
    let cfg = settings(&[
        ("SIDEJOIN_WORKERS", "3"),
        ("SIDEJOIN_INSTANCE_ID", "pod-0"),
        ("SIDEJOIN_STATE_CACHE_MB", "90"),
    ]);
    let w = derive(&cfg, &cluster(1, 1), true).unwrap().workers;
    assert_eq!(w.len(), 3);
    assert_eq!(w[2].state_dir, Path::new("/data/worker-2"));
    assert_eq!(w[1].instance_id.as_deref(), Some("pod-0-1"));
    assert_eq!(w[0].cache_mb, 30);
}
