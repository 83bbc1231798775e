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

/// Both topics declared keyed by the join key.
const KEYED: &[(&str, &str)] = &[
    ("SIDEJOIN_LEFT_HASH_BY", "none"),
    ("SIDEJOIN_RIGHT_HASH_BY", "none"),
];

fn cluster(left: i32, right: i32) -> Facts {
    Facts::of(1, &[("orders", left), ("users", right), ("out", 3)])
}

#[test]
fn co_partitioned_inputs_are_read_through_the_group_one_task_per_partition() {
    let plan = derive(&settings(KEYED), &cluster(4, 4), true).unwrap();
    assert_eq!(plan.tasks, 4);
    assert!(plan
        .sources
        .iter()
        .all(|s| s.placement == Placement::CoPartitioned));
    assert_eq!(plan.readings(), vec![Reading::Own; 2]);
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
    let e = derive(&settings(KEYED), &cluster(6, 1), true).unwrap_err();
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
    assert_eq!(plan.broadcasts().next().map(|s| s.side), Some(Side::Right));
    assert_eq!(plan.source(Side::Right).partitions, 2);
    assert!(!plan.checks_keys);
}

#[test]
fn a_repartitioned_side_is_read_from_its_topic_with_the_other_sides_count() {
    let cfg = settings(&[
        ("SIDEJOIN_LEFT_HASH_BY", "none"),
        ("SIDEJOIN_RIGHT_HASH_BY", "$join_key"),
    ]);
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
            by: vec!["k".into()],
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

/// `(placement, reading)` of each side of `extra` on topics of `left`/`right` partitions.
fn placed(extra: &[(&str, &str)], left: i32, right: i32) -> Vec<(Placement, String)> {
    let plan = derive(&settings(extra), &cluster(left, right), true).unwrap();
    plan.sources
        .iter()
        .map(|s| (s.placement.clone(), s.why.clone()))
        .collect()
}

fn rekeyed(p: &Placement) -> bool {
    matches!(p, Placement::Repartitioned { by, .. } if by == &["k".to_owned()])
}

#[test]
fn sides_declaring_no_key_are_rekeyed_by_the_join_key_on_several_partitions() {
    let p = placed(&[], 3, 3);
    assert!(p.iter().all(|(p, _)| rekeyed(p)), "{p:?}");
    assert!(
        p[0].1.contains("json declares no key on the join columns"),
        "{p:?}"
    );
    let plan = derive(&settings(&[]), &cluster(3, 3), true).unwrap();
    assert!(plan.routers.iter().all(|r| r.target == Target::Own));
    assert!(!plan.checks_keys, "both sides are keyed by sidejoin");
    // Unequal counts need no setting either: both re-keyed into the larger count.
    let plan = derive(&settings(&[]), &cluster(6, 1), true).unwrap();
    assert_eq!(plan.tasks, 6);
}

#[test]
fn one_partition_on_both_sides_needs_no_placement() {
    let p = placed(&[], 1, 1);
    assert!(
        p.iter().all(|(p, _)| *p == Placement::CoPartitioned),
        "{p:?}"
    );
    assert!(p[0].1.contains("one partition on both sides"), "{p:?}");
    let plan = derive(&settings(&[]), &cluster(1, 1), true).unwrap();
    assert!(plan.routers.is_empty());
}

#[test]
fn an_upsert_or_debezium_side_keyed_by_the_join_key_is_read_as_it_is() {
    let upsert = [
        ("SIDEJOIN_LEFT_FORMAT", "upsert-json"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "k"),
        ("SIDEJOIN_RIGHT_FORMAT", "debezium-json"),
        ("SIDEJOIN_RIGHT_PRIMARY_KEY", "k"),
    ];
    let p = placed(&upsert, 4, 4);
    assert!(
        p.iter().all(|(p, _)| *p == Placement::CoPartitioned),
        "{p:?}"
    );
    assert!(p[0]
        .1
        .contains("keyed by its primary key, which is the join key"));
    let plan = derive(&settings(&upsert), &cluster(4, 4), true).unwrap();
    assert!(plan.routers.is_empty() && plan.checks_keys);
}

#[test]
fn a_debezium_side_keyed_by_another_primary_key_is_rekeyed_and_mirrors_a_keyed_side() {
    let cfg = [
        ("SIDEJOIN_LEFT_FORMAT", "debezium-json"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_RIGHT_HASH_BY", "none"),
    ];
    let p = placed(&cfg, 4, 4);
    assert!(rekeyed(&p[0].0), "{p:?}");
    assert!(
        p[0].1.contains("primary key (id), not the join key"),
        "{p:?}"
    );
    assert_eq!(p[1].0, Placement::CoPartitioned);
    let plan = derive(&settings(&cfg), &cluster(4, 4), true).unwrap();
    assert!(matches!(plan.routers[0].target, Target::Mirror { .. }));
}

#[test]
fn an_upsert_side_keyed_by_another_primary_key_cannot_be_rekeyed_and_says_why() {
    let cfg = settings(&[
        ("SIDEJOIN_LEFT_FORMAT", "upsert-json"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
    ]);
    let text = derive(&cfg, &cluster(3, 3), true).unwrap_err().to_string();
    assert!(
        text.contains("upsert topic keyed by its primary key (id), not the join key (k)"),
        "{text}"
    );
    assert!(text.contains("SIDEJOIN_BROADCAST=right"), "{text}");
    // Broadcasting the other side needs no placement of this one.
    let cfg = settings(&[
        ("SIDEJOIN_LEFT_FORMAT", "upsert-json"),
        ("SIDEJOIN_LEFT_PRIMARY_KEY", "id"),
        ("SIDEJOIN_BROADCAST", "right"),
    ]);
    let plan = derive(&cfg, &cluster(3, 1), true).unwrap();
    assert_eq!(plan.source(Side::Left).placement, Placement::CoPartitioned);
    assert!(plan
        .source(Side::Left)
        .why
        .contains("the right side is broadcast"));
}
