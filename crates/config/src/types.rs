//! The validated configuration: typed, complete, and free of environment access.

use std::net::SocketAddr;
use std::path::PathBuf;

use super::select::SelectItem;
use crate::{DimensionSpec, HashBy, Side};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinType {
    Inner,
    Left,
    Right,
    Full,
}

impl JoinType {
    pub const CHOICES: [(&'static str, JoinType); 4] = [
        ("inner", JoinType::Inner),
        ("left", JoinType::Left),
        ("right", JoinType::Right),
        ("full", JoinType::Full),
    ];

    /// Whether unmatched rows of `side` are emitted null-padded.
    pub fn is_outer(self, side: Side) -> bool {
        matches!(
            (self, side),
            (JoinType::Full, _) | (JoinType::Left, Side::Left) | (JoinType::Right, Side::Right)
        )
    }

    pub fn name(self) -> &'static str {
        Self::CHOICES
            .iter()
            .find(|(_, t)| *t == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }

    /// The side whose rows are always in the output and whose key is the default output key.
    pub fn preserved_side(self) -> Side {
        match self {
            JoinType::Right => Side::Right,
            _ => Side::Left,
        }
    }
}

/// How a record's value (and key) become changes (SPEC §2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    Plain,
    Upsert,
    Debezium,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    UpsertJson,
    DebeziumJson,
    Avro,
    UpsertAvro,
    DebeziumAvro,
    /// One delimited line per record value, columns as `SIDEJOIN_<SIDE>_COLUMNS` declares them.
    Csv,
}

impl Format {
    pub const CHOICES: [(&'static str, Format); 7] = [
        ("json", Format::Json),
        ("upsert-json", Format::UpsertJson),
        ("debezium-json", Format::DebeziumJson),
        ("avro", Format::Avro),
        ("upsert-avro", Format::UpsertAvro),
        ("debezium-avro", Format::DebeziumAvro),
        ("csv", Format::Csv),
    ];

    pub fn envelope(self) -> Envelope {
        match self {
            Format::Json | Format::Avro | Format::Csv => Envelope::Plain,
            Format::UpsertJson | Format::UpsertAvro => Envelope::Upsert,
            Format::DebeziumJson | Format::DebeziumAvro => Envelope::Debezium,
        }
    }

    pub fn is_avro(self) -> bool {
        matches!(
            self,
            Format::Avro | Format::UpsertAvro | Format::DebeziumAvro
        )
    }

    pub fn name(self) -> &'static str {
        Self::CHOICES
            .iter()
            .find(|(_, f)| *f == self)
            .map(|(n, _)| *n)
            .unwrap_or("?")
    }
}

/// Where an interval join reads a row's time from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimeSource {
    /// `$timestamp`: the Kafka record timestamp.
    RecordTimestamp,
    Column(String),
}

/// How a csv field becomes a JSON value, by the column's declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// `STRING`, `VARCHAR`, `CHAR`, and the time types (kept as text).
    String,
    /// `TINYINT` … `BIGINT`: a JSON integer.
    Integer,
    /// `FLOAT`, `DOUBLE`, `DECIMAL`: a JSON number.
    Number,
    /// `BOOLEAN`: `true` / `false`.
    Boolean,
}

/// One declared column of a csv side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnSpec {
    pub name: String,
    /// The type as declared (`VARCHAR`, `INT`, `DECIMAL(10,2)`), for `check`.
    pub ty: String,
    pub kind: ColumnKind,
}

/// Flink's `csv` format options (SPEC §2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvSpec {
    pub columns: Vec<ColumnSpec>,
    pub delimiter: u8,
    /// `None`: quoting disabled.
    pub quote: Option<u8>,
    pub escape: Option<u8>,
    /// A field equal to it is `null`.
    pub null_literal: Option<String>,
    /// Skip and count unparsable lines instead of treating them as decode errors.
    pub ignore_parse_errors: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideSpec {
    pub side: Side,
    pub key: Vec<String>,
    pub primary_key: Option<Vec<String>>,
    pub format: Format,
    pub dedup: bool,
    /// State TTL in ms; 0 keeps rows forever.
    pub ttl_ms: i64,
    pub time: TimeSource,
    pub hash_by: HashBy,
    pub topic: Option<String>,
    /// Set exactly when the format is `csv`.
    pub csv: Option<CsvSpec>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IntervalSpec {
    pub lower_ms: i64,
    pub upper_ms: i64,
    pub watermark_delay_ms: i64,
    pub allowed_lateness_ms: i64,
    /// Wall clock, run mode only; 0 = off.
    pub idle_timeout_ms: i64,
    /// Wall clock, run mode only; 0 = off.
    pub max_wait_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinSpec {
    pub join_type: JoinType,
    pub left: SideSpec,
    pub right: SideSpec,
    pub null_keys_match: bool,
    pub allow_generated_retracts: bool,
    pub select: Vec<SelectItem>,
    pub interval: Option<IntervalSpec>,
    pub broadcast: Option<Side>,
    /// A star join's dimensions after the first (SPEC §14), in join order: `dim2`, `dim3`, …
    /// Empty for a two-way join. In a star join `left` is the fact and `right` the first
    /// dimension, joined on `left.key = right.key` with `join_type` (inner or left).
    pub dimensions: Vec<DimensionSpec>,
    /// Names the inputs are also known by (a SQL script's table names and aliases), lower-case,
    /// for replay lines and `check`; the inputs' own names (`left`, `dim2`…) always work.
    pub aliases: Vec<(String, Side)>,
}

impl JoinSpec {
    pub fn side(&self, side: Side) -> &SideSpec {
        match side.index() {
            0 => &self.left,
            1 => &self.right,
            n => &self.dimensions[n - 2].source,
        }
    }

    /// The input topic of `side` (empty in replay, which reads no topic).
    pub fn topic(&self, side: Side) -> &str {
        self.side(side).topic.as_deref().unwrap_or_default()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    Changelog,
    Upsert,
    Append,
}

impl OutputMode {
    pub const CHOICES: [(&'static str, OutputMode); 3] = [
        ("changelog", OutputMode::Changelog),
        ("upsert", OutputMode::Upsert),
        ("append", OutputMode::Append),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Json,
    Avro,
}

/// Where one output key column's value comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// The output row's column of that name.
    Output,
    /// An input column, for keys derived through `l.*`/`r.*` whose output name may be suffixed.
    Input(Side, String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyColumn {
    pub name: String,
    pub source: KeySource,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputSpec {
    pub mode: OutputMode,
    /// Empty: records have no key.
    pub key: Vec<KeyColumn>,
    pub format: OutputFormat,
    pub avro_schema: Option<String>,
    pub topic: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnError {
    Dlq,
    Fail,
    Skip,
}

impl OnError {
    pub fn name(self) -> &'static str {
        match self {
            OnError::Dlq => "dlq",
            OnError::Fail => "fail",
            OnError::Skip => "skip",
        }
    }
}

/// `SIDEJOIN_ON_COPARTITION_VIOLATION`: a record whose Kafka key does not carry its join key
/// (co-partitioned mode) is counted and logged once per partition (`Warn`), or stops the process
/// before it is applied (`Fail`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnViolation {
    Warn,
    Fail,
}

impl OnViolation {
    pub fn name(self) -> &'static str {
        match self {
            OnViolation::Warn => "warn",
            OnViolation::Fail => "fail",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Guarantee {
    AtLeastOnce,
    ExactlyOnce,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetReset {
    Earliest,
    Latest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// The Kafka settings. `Debug` shows the passthrough properties' names, never their values
/// (`secrets`).
#[derive(Clone, PartialEq, Eq)]
pub struct KafkaSpec {
    pub bootstrap_servers: Option<String>,
    pub application_id: String,
    /// `group.instance.id` of this instance (static membership), from `SIDEJOIN_INSTANCE_ID`.
    pub instance_id: Option<String>,
    /// librdkafka properties from `SIDEJOIN_KAFKA_*`: `(property, value)`, for every client.
    /// Values may be secret.
    pub properties: Vec<(String, String)>,
    /// From `SIDEJOIN_KAFKA_CONSUMER_*`: the consumer only, after `properties`.
    pub consumer_properties: Vec<(String, String)>,
    /// From `SIDEJOIN_KAFKA_PRODUCER_*`: the producer only, after `properties`.
    pub producer_properties: Vec<(String, String)>,
    pub guarantee: Guarantee,
    pub commit_interval_ms: i64,
    /// How long a partition's record waits for the other topic's partition to deliver what it
    /// has (`SIDEJOIN_MAX_TASK_IDLE`; see `runtime::merge`).
    pub max_task_idle_ms: i64,
    pub auto_offset_reset: OffsetReset,
    /// The schema registry of the Avro formats (`SIDEJOIN_SCHEMA_REGISTRY_*`), when configured.
    pub registry: Option<RegistrySpec>,
    pub dlq_topic: String,
}

/// A Confluent-compatible schema registry. `Debug` never shows the password.
#[derive(Clone, PartialEq, Eq)]
pub struct RegistrySpec {
    /// Base URL, e.g. `http://registry:8081` or Apicurio's `http://host:8080/apis/ccompat/v7`.
    pub url: String,
    pub username: Option<String>,
    pub password: Option<String>,
    /// A PEM file of CA certificates trusted for an https registry.
    pub ca_location: Option<String>,
    /// Per request, connect to last byte.
    pub timeout_ms: i64,
    /// How long a schema lookup is retried while the registry is unavailable before the
    /// record follows `SIDEJOIN_ON_ERROR` (`SIDEJOIN_SCHEMA_REGISTRY_RETRY_TIMEOUT`).
    pub retry_timeout_ms: i64,
}

impl std::fmt::Debug for RegistrySpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistrySpec")
            .field("url", &self.url)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("ca_location", &self.ca_location)
            .field("timeout_ms", &self.timeout_ms)
            .field("retry_timeout_ms", &self.retry_timeout_ms)
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessSpec {
    pub http_addr: SocketAddr,
    pub state_dir: PathBuf,
    /// RocksDB block cache (data, index and filter blocks), MiB.
    pub state_block_cache_mb: usize,
    /// RocksDB memtable size, MiB (up to three are kept).
    pub state_write_buffer_mb: usize,
    /// The cache of decoded hot state in front of RocksDB, MiB.
    pub state_cache_mb: usize,
    pub log_format: LogFormat,
    pub shutdown_timeout_ms: i64,
    /// A worker that reports no progress for this long is stalled: logged, counted, and
    /// `/healthz` fails (`SIDEJOIN_WATCHDOG_TIMEOUT`); 0 turns the watchdog off.
    pub watchdog_timeout_ms: i64,
    /// Processing threads, each with its own consumer, engine and state (`SIDEJOIN_WORKERS`).
    pub workers: usize,
    pub on_error: OnError,
    /// What a record whose key does not carry its join key does (`SIDEJOIN_ON_COPARTITION_VIOLATION`).
    pub on_copartition_violation: OnViolation,
}

/// A validated configuration. `Debug` leaves every secret value out (`secrets`).
#[derive(Clone, PartialEq, Eq)]
pub struct Config {
    pub join: JoinSpec,
    pub output: OutputSpec,
    pub kafka: KafkaSpec,
    pub process: ProcessSpec,
    /// Things that are allowed but probably not what the user wants.
    pub warnings: Vec<String>,
    /// The `SIDEJOIN_*` settings `SIDEJOIN_SQL`/`_FILE` stood for (empty without SQL), in the
    /// order `check` prints them.
    pub sql_settings: Vec<(String, String)>,
}
