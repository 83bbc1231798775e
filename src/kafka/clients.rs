//! Every Kafka client sidejoin makes, configured here and nowhere else: sidejoin's own
//! properties for the client's role, then the user's `SIDEJOIN_KAFKA_*` passthrough (which may
//! override the defaults but never what sidejoin owns, SPEC §9).

use rdkafka::ClientConfig;

use crate::change::Side;
use crate::config::{KafkaSpec, OffsetReset};

/// Properties every client gets: brokers, a client id, sidejoin's `defaults` for the role, then
/// the user's passthrough properties (which may override the defaults): the shared ones, then
/// `own`, the role's.
fn common(
    kafka: &KafkaSpec,
    role: &str,
    defaults: &[(&str, &str)],
    own: &[(String, String)],
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set(
        "bootstrap.servers",
        kafka.bootstrap_servers.as_deref().unwrap_or_default(),
    );
    c.set("client.id", format!("{}-{role}", kafka.application_id));
    for (k, v) in defaults {
        c.set(*k, *v);
    }
    for (k, v) in kafka.properties.iter().chain(own) {
        c.set(k, v);
    }
    c
}

/// Consumer defaults: fetches of 4 MiB per partition (librdkafka's 1 MiB leaves a fast consumer
/// waiting on fetch round trips: half the throughput on a local broker) and at most 16 MiB
/// prefetched per partition (librdkafka: 64 MiB), which bounds memory.
const CONSUMER_DEFAULTS: [(&str, &str); 2] = [
    ("max.partition.fetch.bytes", "4194304"),
    ("queued.max.messages.kbytes", "16384"),
];

/// Producer defaults: batches of up to 5 ms (librdkafka's default).
const PRODUCER_DEFAULTS: [(&str, &str); 1] = [("linger.ms", "5")];

/// The group consumer of both input topics: range assignment (partition i of both topics on one
/// member), manual offset storage and commits, read_committed; a static member when
/// `SIDEJOIN_INSTANCE_ID` is set (a restart within the session timeout gets its partitions back
/// without a rebalance, as Kafka Streams' `group.instance.id`).
pub(crate) fn group_consumer(kafka: &KafkaSpec, member: Option<&str>) -> ClientConfig {
    let mut c = common(
        kafka,
        "consumer",
        &CONSUMER_DEFAULTS,
        &kafka.consumer_properties,
    );
    if let Some(id) = member {
        c.set("group.instance.id", id);
    }
    c.set("group.id", &kafka.application_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("isolation.level", "read_committed")
        // End-of-partition events tell the timestamp merge that a side is caught up.
        .set("enable.partition.eof", "true")
        .set("partition.assignment.strategy", "range")
        .set("statistics.interval.ms", "1000")
        .set("auto.offset.reset", offset_reset(kafka));
    c
}

/// The idempotent producer of output (and dead-letter) records. Keyed records get an explicit
/// partition from `partitioner`; keyless ones use librdkafka's `murmur2_random` (random).
pub(crate) fn producer(kafka: &KafkaSpec) -> ClientConfig {
    let mut c = common(
        kafka,
        "producer",
        &PRODUCER_DEFAULTS,
        &kafka.producer_properties,
    );
    c.set("enable.idempotence", "true")
        .set("acks", "all")
        .set("partitioner", "murmur2_random");
    c
}

/// librdkafka's default `message.max.bytes`.
const DEFAULT_MAX_MESSAGE_BYTES: usize = 1_000_000;

/// The largest record the output producer takes (`message.max.bytes`, as passed through or
/// librdkafka's default): a larger one is refused when handed to it.
pub(crate) fn max_message_bytes(kafka: &KafkaSpec) -> usize {
    (producer(kafka).get("message.max.bytes"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(DEFAULT_MAX_MESSAGE_BYTES)
}

/// The transactional producer of checkpoints (SPEC §7): changelog records and input offsets,
/// and under `exactly_once` the output and dead letters too. `id` is its `transactional.id`;
/// a new producer with the same id fences the old one (a restarted instance, a zombie).
pub(crate) fn transactional(kafka: &KafkaSpec, id: &str) -> ClientConfig {
    let mut c = producer(kafka);
    c.set("transactional.id", id);
    c
}

/// The `transactional.id` of a worker's checkpoint producer: `<app>-<member id>` under static
/// membership (`member`), else `<app>-<volume id>`, where the volume id is made once and kept in
/// the state directory (`None`: volatile state, an id unique to this process). Stable across
/// restarts on one volume, so a restarted worker fences its predecessor and aborts what it left
/// open at once; never shared by two workers, which never share a volume.
pub(crate) fn transactional_id(
    kafka: &KafkaSpec,
    member: Option<&str>,
    volume: Option<&str>,
) -> String {
    let app = &kafka.application_id;
    match (member, volume) {
        (Some(id), _) => format!("{app}-{id}"),
        (None, Some(v)) => format!("{app}-{v}"),
        (None, None) => format!("{app}-{}", super::unique_id()),
    }
}

/// The repartition step's lease (`runtime::repartition`): a member of `<app>-<side>-router-lease`
/// subscribed to the repartition topic, which never reads a record; whoever is assigned its
/// partition 0 routes. A static member under `SIDEJOIN_INSTANCE_ID`, so a restart gets it back.
pub(crate) fn router_lease(kafka: &KafkaSpec, side: Side) -> ClientConfig {
    let mut c = common(kafka, "router-lease", &[], &kafka.consumer_properties);
    if let Some(id) = &kafka.instance_id {
        c.set("group.instance.id", format!("{id}-{}-router", side.name()));
    }
    c.set(
        "group.id",
        format!("{}-{}-router-lease", kafka.application_id, side.name()),
    )
    .set("enable.auto.commit", "false")
    .set("enable.auto.offset.store", "false")
    // Paused as soon as assigned: it never needs more than one small fetch.
    .set("max.partition.fetch.bytes", "1024");
    c
}

/// The repartition step's consumer of the side's own topic: assigned explicitly (all
/// partitions), its offsets committed to `<app>-<side>-router` inside the step's transactions.
pub(crate) fn router_consumer(kafka: &KafkaSpec, side: Side) -> ClientConfig {
    let mut c = common(
        kafka,
        "router",
        &CONSUMER_DEFAULTS,
        &kafka.consumer_properties,
    );
    c.set(
        "group.id",
        format!("{}-{}-router", kafka.application_id, side.name()),
    )
    .set("enable.auto.commit", "false")
    .set("enable.auto.offset.store", "false")
    .set("isolation.level", "read_committed")
    .set("enable.partition.eof", "true")
    .set("auto.offset.reset", offset_reset(kafka));
    c
}

/// The repartition step's transactional producer: `transactional.id` `<app>-<side>-router`, one
/// for the whole application, so a new router fences the one before it.
pub(crate) fn router_producer(kafka: &KafkaSpec, side: Side) -> ClientConfig {
    transactional(
        kafka,
        &format!("{}-{}-router", kafka.application_id, side.name()),
    )
}

/// The consumer that restores state from the changelog topics: no group (partitions are
/// assigned explicitly), committed transactions only, end of partition reported.
pub(crate) fn restore_consumer(kafka: &KafkaSpec) -> ClientConfig {
    let mut c = common(
        kafka,
        "restore",
        &[
            ("fetch.max.bytes", "67108864"),
            ("max.partition.fetch.bytes", "16777216"),
            // The end of a partition is known from an empty fetch: do not let it linger.
            ("fetch.wait.max.ms", "20"),
            // A full fetch queue (a big fetch of a changelog) pauses fetching for this long;
            // librdkafka's 1 s default left restores idle most of the time (~1 s per 16 MiB).
            ("fetch.queue.backoff.ms", "5"),
        ],
        &kafka.consumer_properties,
    );
    c.set("group.id", format!("{}-restore", kafka.application_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", "read_committed");
    c
}

/// The broadcast side's consumer (`runtime::broadcast`): assigned every partition of the
/// broadcast topic at positions from the tasks' state, never joining a group or committing
/// (`group.id` only names it). `read_committed`, like the group consumer; an offset gone from
/// the topic (retention) restarts at its earliest record.
pub(crate) fn broadcast_consumer(kafka: &KafkaSpec) -> ClientConfig {
    let mut c = common(
        kafka,
        "broadcast",
        // See `restore_consumer_config`: a full fetch queue must not pause fetching for 1 s.
        &[("fetch.queue.backoff.ms", "5")],
        &kafka.consumer_properties,
    );
    c.set("group.id", format!("{}-broadcast", kafka.application_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", "read_committed");
    c
}

/// `SIDEJOIN_AUTO_OFFSET_RESET` as librdkafka's `auto.offset.reset`.
fn offset_reset(kafka: &KafkaSpec) -> &'static str {
    match kafka.auto_offset_reset {
        OffsetReset::Earliest => "earliest",
        OffsetReset::Latest => "latest",
    }
}

/// The start-up co-partitioning probe's consumer: the group's committed offsets (or the reset
/// policy) without joining the group or committing anything. `read_uncommitted`: its offset
/// fetch then takes the last committed offsets at once instead of waiting for the transaction a
/// killed instance left open (aborted only when this instance's producer starts, after the
/// probe); that it may also read records of an open transaction does not matter for their keys.
pub(crate) fn probe_consumer(kafka: &KafkaSpec) -> ClientConfig {
    let mut c = common(
        kafka,
        "probe",
        // The end of a partition is known from an empty fetch: do not let it linger.
        &[("fetch.wait.max.ms", "20")],
        &kafka.consumer_properties,
    );
    c.set("group.id", &kafka.application_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("isolation.level", "read_uncommitted")
        .set("auto.offset.reset", offset_reset(kafka));
    c
}

/// A plain client for metadata and topic creation.
pub(crate) fn admin(kafka: &KafkaSpec) -> ClientConfig {
    common(kafka, "admin", &[], &[])
}
