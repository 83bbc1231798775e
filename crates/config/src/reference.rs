//! The configuration reference: one row per setting — the variables that set it, its default and
//! what it means — rendered as `docs/src/reference/configuration.md` (`markdown`).
//!
//! A test keeps the three in step: every variable the parser accepts (`raw::known_vars`, read
//! from `RawConfig`'s fields) has a row, every row names variables the parser accepts (or a
//! `SIDEJOIN_KAFKA_*<PROPERTY>` pattern), and the page on disk is what `markdown` renders. A new
//! setting therefore fails the tests until it has a row here and the page is regenerated with
//! `UPDATE_DOCS=1 cargo test -p sidejoin-config reference`.
//!
//! A declarative table: it is longer than the 400 lines a module may otherwise have.

/// One line of the configuration reference.
pub struct Setting {
    /// The variables, e.g. the left and right variants of one setting; a name holding `<…>`
    /// stands for a family of variables (`SIDEJOIN_KAFKA_<PROPERTY>`).
    pub vars: &'static [&'static str],
    /// The default, `required`, or `none`.
    pub default: &'static str,
    /// What it means (Markdown; links are relative to `docs/src/reference/`).
    pub meaning: &'static str,
}

/// The page's path in the repository.
pub const PAGE: &str = "docs/src/reference/configuration.md";

const INTRO: &str = "\
# Configuration

<!-- Generated from crates/config/src/reference.rs: do not edit; edit the table there and run
     UPDATE_DOCS=1 cargo test -p sidejoin-config reference -->

Everything is an environment variable. Durations are an integer and a unit (`250ms`, `10s`,
`5m`, `24h`, `7d`; `0` alone), signed for interval bounds (`-10m`). Booleans are `true`/`false`;
enum values are case-insensitive. All problems are reported at once, each naming the variable, the
bad value and what is expected (exit code 2); an unknown `SIDEJOIN_*` variable is an error that
suggests the nearest known name. `sidejoin check` validates without consuming.

This page is generated from the table in `crates/config/src/reference.rs`, and a test fails when a
variable the parser accepts is missing from it. A Flink SQL job sets the same variables: see
[Coming from Flink SQL / MRS](../flink-sql.md). The Helm chart's values that become these variables
are in [Kubernetes and Helm](../operations/kubernetes.md#values).

| variable | default | meaning |
|---|---|---|
";

/// The configuration reference as Markdown: the page `PAGE` holds.
pub fn markdown() -> String {
    let mut page = INTRO.to_owned();
    for s in SETTINGS {
        let vars: Vec<String> = s.vars.iter().map(|v| format!("`{v}`")).collect();
        page.push_str(&format!(
            "| {} | {} | {} |\n",
            vars.join(", "),
            s.default,
            s.meaning
        ));
    }
    page
}

/// Every setting, in the order of the page.
pub const SETTINGS: &[Setting] = &[
    Setting {
        vars: &["SIDEJOIN_JOIN_TYPE"],
        default: r#"`inner`"#,
        meaning: r#"`inner`, `left`, `right`, `full`; in a star join the first dimension's join, `inner` or `left`"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_KEY", "SIDEJOIN_RIGHT_KEY"],
        default: r#"required"#,
        meaning: r#"join key columns, comma-separated, matched by position"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_PRIMARY_KEY", "SIDEJOIN_RIGHT_PRIMARY_KEY"],
        default: r#"none"#,
        meaning: r#"the side keeps the latest row per key (inserts of a present key become updates)"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_FORMAT", "SIDEJOIN_RIGHT_FORMAT"],
        default: r#"`json`"#,
        meaning: r#"`json`, `upsert-json`, `debezium-json`, `avro`, `upsert-avro`, `debezium-avro` (Avro: replay takes the decoded record as JSON), `csv` (replay takes the line as a JSON string)"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_COLUMNS", "SIDEJOIN_RIGHT_COLUMNS"],
        default: r#"required by `csv`"#,
        meaning: r#"the csv fields in order, `name TYPE, …` (`user_id VARCHAR, score INT`; no type = STRING): `STRING`/`VARCHAR`/`CHAR` and the time types → JSON strings, `TINYINT`…`BIGINT` → integers, `FLOAT`/`DOUBLE`/`DECIMAL` → numbers, `BOOLEAN` → `true`/`false`; an empty non-text field is `null`"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_LEFT_CSV_FIELD_DELIMITER",
            "SIDEJOIN_RIGHT_CSV_FIELD_DELIMITER",
        ],
        default: r#"`,`"#,
        meaning: r#"csv: one ASCII character (Flink `csv.field-delimiter`)"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_LEFT_CSV_QUOTE_CHARACTER",
            "SIDEJOIN_RIGHT_CSV_QUOTE_CHARACTER",
            "SIDEJOIN_LEFT_CSV_DISABLE_QUOTE_CHARACTER",
            "SIDEJOIN_RIGHT_CSV_DISABLE_QUOTE_CHARACTER",
        ],
        default: r#"`"`, `false`"#,
        meaning: r#"csv quoting (a doubled quote inside quotes is one quote)"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_LEFT_CSV_ESCAPE_CHARACTER",
            "SIDEJOIN_RIGHT_CSV_ESCAPE_CHARACTER",
        ],
        default: r#"none"#,
        meaning: r#"csv escape character"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_LEFT_CSV_NULL_LITERAL",
            "SIDEJOIN_RIGHT_CSV_NULL_LITERAL",
        ],
        default: r#"none"#,
        meaning: r#"csv: a field equal to it is `null` (`NULL`, `\N`, …)"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_LEFT_CSV_IGNORE_PARSE_ERRORS",
            "SIDEJOIN_RIGHT_CSV_IGNORE_PARSE_ERRORS",
        ],
        default: r#"`false`"#,
        meaning: r#"csv: `true` skips and counts unreadable lines (`input_dropped{reason="parse_error"}`) instead of treating them as decode errors under `SIDEJOIN_ON_ERROR`"#,
    },
    Setting {
        vars: &["SIDEJOIN_DIM<N>_KEY"],
        default: r#"required for dimension N"#,
        meaning: r#"star join (N = 2 … 7, numbered without gaps; `left` is the fact, `right` its first dimension): the join columns of dimension N, comma-separated; setting any `SIDEJOIN_DIM<N>_*` adds the dimension ([Star joins](../flink-sql.md#star-joins))"#,
    },
    Setting {
        vars: &["SIDEJOIN_DIM<N>_ON"],
        default: r#"required for dimension N"#,
        meaning: r#"star join: the columns dimension N is looked up by, one per `SIDEJOIN_DIM<N>_KEY` column in its order, all of one input joined before it, qualified: `l.col` (the fact), `r.col` (the first dimension), `dim2.col` / `d2.col` …; a dimension not broadcast must be looked up on exactly `SIDEJOIN_LEFT_KEY` (`l.` columns, same order)"#,
    },
    Setting {
        vars: &["SIDEJOIN_DIM<N>_JOIN_TYPE"],
        default: r#"`inner`"#,
        meaning: r#"star join: `inner` or `left` (the fact's rows are kept, null-padded for this dimension); `right`/`full` are refused. The first dimension's is `SIDEJOIN_JOIN_TYPE` (inner or left in a star join)"#,
    },
    Setting {
        vars: &["SIDEJOIN_DIM<N>_TOPIC"],
        default: r#"required by `run`"#,
        meaning: r#"star join: dimension N's topic"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_DIM<N>_PRIMARY_KEY",
            "SIDEJOIN_DIM<N>_FORMAT",
            "SIDEJOIN_DIM<N>_STATE_TTL",
            "SIDEJOIN_DEDUP_DIM<N>",
            "SIDEJOIN_DIM<N>_COLUMNS",
            "SIDEJOIN_DIM<N>_CSV_FIELD_DELIMITER",
            "SIDEJOIN_DIM<N>_CSV_QUOTE_CHARACTER",
            "SIDEJOIN_DIM<N>_CSV_DISABLE_QUOTE_CHARACTER",
            "SIDEJOIN_DIM<N>_CSV_ESCAPE_CHARACTER",
            "SIDEJOIN_DIM<N>_CSV_NULL_LITERAL",
            "SIDEJOIN_DIM<N>_CSV_IGNORE_PARSE_ERRORS",
        ],
        default: r#"as the left/right ones"#,
        meaning: r#"star join: dimension N's primary key, format, state TTL, dedup and csv settings, as `SIDEJOIN_LEFT_*`/`SIDEJOIN_RIGHT_*` (`SIDEJOIN_DEDUP_LEFT`) are the fact's and the first dimension's"#,
    },
    Setting {
        vars: &["SIDEJOIN_DIM<N>_HASH_BY"],
        default: r#"none"#,
        meaning: r#"star join: refused for now (a dimension is broadcast, or co-partitioned with the fact by its join columns)"#,
    },
    Setting {
        vars: &["SIDEJOIN_SQL", "SIDEJOIN_SQL_FILE"],
        default: r#"none"#,
        meaning: r#"a Flink SQL job (inline, or a file path such as a mounted ConfigMap) instead of the join variables: see [Coming from Flink SQL / MRS](../flink-sql.md)"#,
    },
    Setting {
        vars: &["SIDEJOIN_SELECT"],
        default: r#"`l.*, r.*` (star: `…, dim2.*, …`)"#,
        meaning: r#"output columns: `l.col`, `r.col`, `left.col`, `right.col`, `l.*`, `r.*`, in a star join also `dim2.col`, `dim2.*` … (or `d2.col`, `d2.*`), each column optionally `AS name`; a star join's default is every input's `*` in input order"#,
    },
    Setting {
        vars: &["SIDEJOIN_NULL_KEYS_MATCH"],
        default: r#"`false`"#,
        meaning: r#"`true`: null keys match each other (`IS NOT DISTINCT FROM`)"#,
    },
    Setting {
        vars: &["SIDEJOIN_ALLOW_GENERATED_RETRACTS"],
        default: r#"`true`"#,
        meaning: r#"`false`: drop the `-D` of a null-padded row that just got its first match (MRS `allows.generated-retracts`)"#,
    },
    Setting {
        vars: &["SIDEJOIN_DEDUP_LEFT", "SIDEJOIN_DEDUP_RIGHT"],
        default: r#"`false`"#,
        meaning: r#"drop changes that leave the side's used columns (join key + selected columns) unchanged (MRS `duplicate.left/right`)"#,
    },
    Setting {
        vars: &["SIDEJOIN_STATE_TTL"],
        default: r#"`0` (forever)"#,
        meaning: r#"a row expires when not written for longer than this, in stream time"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_STATE_TTL", "SIDEJOIN_RIGHT_STATE_TTL"],
        default: r#"`SIDEJOIN_STATE_TTL`"#,
        meaning: r#"per-side TTL"#,
    },
    Setting {
        vars: &["SIDEJOIN_INTERVAL_LOWER", "SIDEJOIN_INTERVAL_UPPER"],
        default: r#"none"#,
        meaning: r#"both set: an event-time interval join, `tr + LOWER <= tl <= tr + UPPER`"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_TIME", "SIDEJOIN_RIGHT_TIME"],
        default: r#"`$timestamp`"#,
        meaning: r#"interval join: the time column (epoch ms or ISO-8601), `$timestamp` = Kafka record timestamp"#,
    },
    Setting {
        vars: &["SIDEJOIN_WATERMARK_DELAY"],
        default: r#"`0`"#,
        meaning: r#"interval join: watermark = largest time seen − delay"#,
    },
    Setting {
        vars: &["SIDEJOIN_ALLOWED_LATENESS"],
        default: r#"`0`"#,
        meaning: r#"interval join: rows stay joinable this long past their bound"#,
    },
    Setting {
        vars: &["SIDEJOIN_IDLE_TIMEOUT"],
        default: r#"`0` (off)"#,
        meaning: r#"interval join, run mode: a partition idle this long (wall clock) does not hold the watermark back"#,
    },
    Setting {
        vars: &["SIDEJOIN_MAX_WAIT"],
        default: r#"`0` (off)"#,
        meaning: r#"interval join, run mode: an unmatched outer row is padded at most this long after it arrived"#,
    },
    Setting {
        vars: &["SIDEJOIN_OUTPUT_MODE"],
        default: r#"`changelog`"#,
        meaning: r#"`changelog` (Debezium envelopes), `upsert` (value or tombstone per key), `append` (rows; insert-only joins only)"#,
    },
    Setting {
        vars: &["SIDEJOIN_OUTPUT_KEY"],
        default: r#"derived"#,
        meaning: r#"output key columns; default: the output columns carrying the preserved side's primary key, else its join key"#,
    },
    Setting {
        vars: &["SIDEJOIN_OUTPUT_FORMAT"],
        default: r#"`json`"#,
        meaning: r#"`json` or `avro`"#,
    },
    Setting {
        vars: &["SIDEJOIN_OUTPUT_AVRO_SCHEMA"],
        default: r#"derived"#,
        meaning: r#"output row's Avro record schema ([Avro and the schema registry](../operations/avro.md))"#,
    },
    Setting {
        vars: &["SIDEJOIN_ON_ERROR"],
        default: r#"`dlq`"#,
        meaning: r#"undecodable and poison records (processing one panicked, or its output is over the producer's `message.max.bytes`: see [Running against Kafka](../operations/kafka.md#poison-records)): `dlq`, `fail` (stop, exit 1) or `skip`"#,
    },
    Setting {
        vars: &["SIDEJOIN_DLQ_TOPIC"],
        default: r#"`<app>.dlq`"#,
        meaning: r#"dead-letter topic"#,
    },
    Setting {
        vars: &["SIDEJOIN_BOOTSTRAP_SERVERS"],
        default: r#"required by `run`"#,
        meaning: r#"Kafka brokers"#,
    },
    Setting {
        vars: &["SIDEJOIN_APPLICATION_ID"],
        default: r#"`sidejoin`"#,
        meaning: r#"consumer group and internal topic prefix"#,
    },
    Setting {
        vars: &["SIDEJOIN_INSTANCE_ID"],
        default: r#"none"#,
        meaning: r#"static group membership (`group.instance.id`): a stable name per instance, e.g. the pod name"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_LEFT_TOPIC",
            "SIDEJOIN_RIGHT_TOPIC",
            "SIDEJOIN_OUTPUT_TOPIC",
        ],
        default: r#"required by `run`"#,
        meaning: r#"topics"#,
    },
    Setting {
        vars: &["SIDEJOIN_LEFT_HASH_BY", "SIDEJOIN_RIGHT_HASH_BY"],
        default: r#"decided by the plan"#,
        meaning: r#"repartition that side by these columns, or `$join_key` (MRS `HASH_BY_KEY`): the join key without broadcast, any columns with the other side broadcast; `none` declares the topic keyed by the join key (read as it is, keys checked). Unset: re-keyed by the join key when the topics need placing and the side is not declared keyed by it (see [When sidejoin repartitions](../operations/repartition.md#when))"#,
    },
    Setting {
        vars: &["SIDEJOIN_BROADCAST"],
        default: r#"none"#,
        meaning: r#"`left` or `right`: every task reads all partitions of that side's topic and keeps the whole side (MRS `BROADCAST`; see [Broadcast](../operations/broadcast.md)); a star join takes a comma-separated list of its dimensions (`right,dim2`); its fact (`left`) is never broadcast, and a dimension not listed must be looked up on exactly the fact's key (co-partitioned)"#,
    },
    Setting {
        vars: &["SIDEJOIN_PROCESSING_GUARANTEE"],
        default: r#"`at_least_once`"#,
        meaning: r#"or `exactly_once`"#,
    },
    Setting {
        vars: &["SIDEJOIN_COMMIT_INTERVAL"],
        default: r#"`100ms`"#,
        meaning: r#"commit / transaction interval"#,
    },
    Setting {
        vars: &["SIDEJOIN_ON_COPARTITION_VIOLATION"],
        default: r#"`warn`"#,
        meaning: r#"a record whose Kafka key does not carry its join key (topics of more than one partition): `warn` counts it and logs once per partition, `fail` stops before it (exit 1), or refuses to start when the start-up probe finds one (exit 2) (see [Running against Kafka](../operations/kafka.md#co-partitioning))"#,
    },
    Setting {
        vars: &["SIDEJOIN_MAX_TASK_IDLE"],
        default: r#"`1s`"#,
        meaning: r#"how long a partition's record waits for the other topic's partition before it is processed out of timestamp order (Kafka Streams' `max.task.idle.ms`); `0`: no wait"#,
    },
    Setting {
        vars: &["SIDEJOIN_AUTO_OFFSET_RESET"],
        default: r#"`earliest`"#,
        meaning: r#"where a new consumer group starts"#,
    },
    Setting {
        vars: &["SIDEJOIN_SCHEMA_REGISTRY_URL"],
        default: r#"none (required by Avro formats in `run`)"#,
        meaning: r#"Confluent-compatible registry for the Avro formats, `http(s)://…` (Apicurio: `…/apis/ccompat/v7`)"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_SCHEMA_REGISTRY_USERNAME",
            "SIDEJOIN_SCHEMA_REGISTRY_PASSWORD",
        ],
        default: r#"none"#,
        meaning: r#"registry basic auth (never logged; over an `http://` URL a warning: sent in clear text); refused credentials stop the start (exit 2)"#,
    },
    Setting {
        vars: &["SIDEJOIN_SCHEMA_REGISTRY_CA_LOCATION"],
        default: r#"Mozilla roots (webpki)"#,
        meaning: r#"PEM file of CA certificates for an https registry"#,
    },
    Setting {
        vars: &["SIDEJOIN_SCHEMA_REGISTRY_TIMEOUT"],
        default: r#"`10s`"#,
        meaning: r#"per registry request"#,
    },
    Setting {
        vars: &["SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT"],
        default: r#"`15s`"#,
        meaning: r#"how long a record's schema lookup is retried while the registry is unavailable (5xx, unreachable); then the record follows `SIDEJOIN_ON_ERROR` ([Avro](../operations/avro.md))"#,
    },
    Setting {
        vars: &["SIDEJOIN_HTTP_ADDR"],
        default: r#"`0.0.0.0:9464`"#,
        meaning: r#"`/metrics`, `/healthz`, `/readyz`; all interfaces by default, right in a pod ([Kubernetes](../operations/kubernetes.md#probes)); port 0 picks a free port"#,
    },
    Setting {
        vars: &["SIDEJOIN_STATE_DIR"],
        default: r#"`./sidejoin-state`"#,
        meaning: r#"RocksDB state directory"#,
    },
    Setting {
        vars: &["SIDEJOIN_STATE_CACHE_MB"],
        default: r#"`128`"#,
        meaning: r#"cache of decoded hot state groups in front of RocksDB, in MiB"#,
    },
    Setting {
        vars: &["SIDEJOIN_STATE_BLOCK_CACHE_MB"],
        default: r#"`128`"#,
        meaning: r#"RocksDB block cache (data, index and filter blocks) in MiB"#,
    },
    Setting {
        vars: &["SIDEJOIN_STATE_WRITE_BUFFER_MB"],
        default: r#"`64`"#,
        meaning: r#"RocksDB memtable size in MiB (up to 3 in memory)"#,
    },
    Setting {
        vars: &["SIDEJOIN_LOG_FORMAT"],
        default: r#"`text`"#,
        meaning: r#"`text` or `json`"#,
    },
    Setting {
        vars: &["SIDEJOIN_SHUTDOWN_TIMEOUT"],
        default: r#"`30s`"#,
        meaning: r#"how long SIGTERM may take"#,
    },
    Setting {
        vars: &["SIDEJOIN_WATCHDOG_TIMEOUT"],
        default: r#"`30s`"#,
        meaning: r#"a worker that reports no progress for this long is logged with its step, counted and fails `/healthz` ([Kubernetes](../operations/kubernetes.md#probes)); `0` turns it off"#,
    },
    Setting {
        vars: &["SIDEJOIN_WORKERS"],
        default: r#"available cores"#,
        meaning: r#"processing threads (1–256), each with its own consumer, engine and state ([Running against Kafka](../operations/kafka.md))"#,
    },
    Setting {
        vars: &[
            "SIDEJOIN_KAFKA_CONSUMER_<PROPERTY>",
            "SIDEJOIN_KAFKA_PRODUCER_<PROPERTY>",
        ],
        default: r#""#,
        meaning: r#"passed to the consumer or the producer only (`SIDEJOIN_KAFKA_CONSUMER_SESSION_TIMEOUT_MS` → `session.timeout.ms`), after the shared ones"#,
    },
    Setting {
        vars: &["SIDEJOIN_KAFKA_<PROPERTY>"],
        default: r#""#,
        meaning: r#"passed to librdkafka (`SIDEJOIN_KAFKA_SECURITY_PROTOCOL` → `security.protocol`); values never logged; `group.id`, `enable.auto.commit`, `enable.auto.offset.store`, `isolation.level`, `partitioner`, `transactional.id`, `group.instance.id` are sidejoin's own and refused"#,
    },
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{known_vars, KAFKA_PREFIX};

    const REGENERATE: &str = "UPDATE_DOCS=1 cargo test -p sidejoin-config reference";

    #[test]
    fn reference_lists_every_accepted_variable() {
        // `<N>` stands for a star join's dimension numbers, 2 … 7.
        let listed: Vec<String> = SETTINGS
            .iter()
            .flat_map(|s| s.vars.iter().copied())
            .flat_map(|v| match v.contains("<N>") {
                true => (2..=7).map(|n| v.replace("<N>", &n.to_string())).collect(),
                false => vec![v.to_owned()],
            })
            .collect();
        let missing: Vec<String> = known_vars()
            .into_iter()
            .filter(|v| !listed.contains(v))
            .collect();
        assert!(
            missing.is_empty(),
            "accepted by the parser (crates/config/src/raw.rs) but not in the configuration \
             reference: {missing:?}; add a row to SETTINGS in crates/config/src/reference.rs, then \
             run `{REGENERATE}` to regenerate {PAGE}"
        );
        let known = known_vars();
        for v in &listed {
            let family = v.contains('<') && v.starts_with(KAFKA_PREFIX);
            assert!(
                family || known.iter().any(|k| k == v),
                "{v} is in the configuration reference (crates/config/src/reference.rs) but the \
                 parser does not accept it"
            );
        }
    }

    #[test]
    fn reference_page_is_current() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/src/reference/configuration.md"
        );
        let want = markdown();
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(path, &want).expect("write the configuration reference");
            return;
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            have == want,
            "{PAGE} is not what crates/config/src/reference.rs renders; run `{REGENERATE}` to \
             regenerate it"
        );
    }
}
