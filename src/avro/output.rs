//! `SIDEJOIN_OUTPUT_FORMAT=avro` (SPEC §5): the output schemas, registered at start under
//! `<topic>-value` / `<topic>-key` (TopicNameStrategy), and the re-encoding of the JSON records
//! the output modes build into Confluent-framed Avro.
//!
//! The row schema is `SIDEJOIN_OUTPUT_AVRO_SCHEMA` (a record) or derived from the latest schemas
//! of the input subjects `<input topic>-value`: one field per output column, in SELECT order,
//! with the input column's type made nullable (any side may be padded, and a column can be
//! missing from older schema versions), default null. `l.*`/`r.*` expand to the input record's
//! fields, a right name already taken getting the `0`, `1`, … suffix (with schemaless JSON the
//! suffix is decided per row; Avro needs one schema, so it is decided once). The key is a record
//! of the output key columns; changelog values are a Debezium-shaped envelope
//! `{before: [null, Row], after: [null, Row], op: string}`; upsert tombstones stay tombstones.
//!
//! Output columns the schema does not have are not written (warned once per name); a row that
//! does not fit it is an error for the input record that caused it (`SIDEJOIN_ON_ERROR`).

use std::collections::HashSet;

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::registry::Registry;
use super::schemas::{retry, WriterSchema};
use super::subjects::{fields_json, row_record};
use super::AvroSetupError;
use crate::change::Side;
use crate::config::select::{free_name, Select, SelectItem};
use crate::config::{Config, KeySource, OutputMode};
use crate::format::DecodeError;
use crate::sink::Records;
use sidejoin_core::avro::encode::encode;

/// A registered schema.
struct Registered {
    id: u32,
    schema: WriterSchema,
}

impl Registered {
    fn frame(&self, value: &Value, what: &str, out: &mut Vec<u8>) -> Result<(), String> {
        out.push(0);
        out.extend_from_slice(&self.id.to_be_bytes());
        encode(&self.schema.root, &self.schema.names, value, out).map_err(|e| {
            format!(
                "the output {what} does not fit its Avro schema (id {}): {e}",
                self.id
            )
        })
    }
}

/// Re-encodes output records as Avro. Built by `prepare` (it needs the registry).
pub(crate) struct AvroOutput {
    value: Registered,
    key: Option<Registered>,
    /// Output column names the value schema has (for the dropped-column warning).
    columns: HashSet<String>,
    warned: HashSet<String>,
    scratch_key: Vec<u8>,
    scratch_value: Vec<u8>,
}

impl AvroOutput {
    /// Derives (or parses) the schemas and registers them, retrying while the registry is
    /// unavailable; `Ok(None)` when `shutdown` came first.
    pub(crate) fn prepare(
        config: &Config,
        registry: &Registry,
        shutdown: &CancellationToken,
    ) -> Result<Option<AvroOutput>, AvroSetupError> {
        if !super::wait_for(registry, shutdown)? {
            return Ok(None);
        }
        let topic = config.output.topic.as_deref().unwrap_or_default();
        let namespace = format!("sidejoin.{}", sanitize(topic));
        let Some(row) = row_schema(config, registry, &namespace, shutdown)? else {
            return Ok(None);
        };
        let columns: HashSet<String> = row["fields"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f["name"].as_str().map(str::to_owned))
            .collect();
        let value_schema = match config.output.mode {
            OutputMode::Changelog => envelope_schema(&row, &namespace),
            OutputMode::Upsert | OutputMode::Append => row.clone(),
        };
        let value = register(registry, format!("{topic}-value"), &value_schema)?;
        let key = key_schema(config, &row, &namespace)
            .map(|k| register(registry, format!("{topic}-key"), &k))
            .transpose()?;
        Ok(Some(AvroOutput {
            value,
            key,
            columns,
            warned: HashSet::new(),
            scratch_key: Vec::new(),
            scratch_value: Vec::new(),
        }))
    }

    /// Appends `json`'s records to `out` as Avro; on error nothing of them is appended.
    pub(crate) fn convert(&mut self, json: &Records, out: &mut Records) -> Result<(), DecodeError> {
        let start = (out.bytes.len(), out.records.len());
        let (mut key_buf, mut value_buf) = (
            std::mem::take(&mut self.scratch_key),
            std::mem::take(&mut self.scratch_value),
        );
        let mut result = Ok(());
        for r in &json.records {
            key_buf.clear();
            value_buf.clear();
            let key = match (json.key(r), &self.key) {
                (Some(k), Some(schema)) => parse(k, "key")
                    .and_then(|k| schema.frame(&k, "key", &mut key_buf).map(|()| true)),
                _ => Ok(false),
            };
            let value = match json.value(r) {
                Some(v) => parse(v, "value").and_then(|v| {
                    self.warn_dropped(&v);
                    self.value.frame(&v, "value", &mut value_buf).map(|()| true)
                }),
                None => Ok(false),
            };
            match (key, value) {
                (Ok(k), Ok(v)) => out.push(
                    k.then_some(&key_buf[..]),
                    v.then_some(&value_buf[..]),
                    r.timestamp,
                ),
                (Err(e), _) | (_, Err(e)) => {
                    out.bytes.truncate(start.0);
                    out.records.truncate(start.1);
                    result = Err(DecodeError::new(e));
                    break;
                }
            }
        }
        self.scratch_key = key_buf;
        self.scratch_value = value_buf;
        result
    }

    /// Warns once per output column the value schema does not have (it is not written).
    fn warn_dropped(&mut self, value: &Value) {
        let Value::Object(obj) = value else {
            return;
        };
        // A changelog envelope's rows, or the row itself.
        let rows: Vec<&serde_json::Map<String, Value>> = if obj.contains_key("op") {
            ["before", "after"]
                .iter()
                .filter_map(|k| obj.get(*k)?.as_object())
                .collect()
        } else {
            vec![obj]
        };
        for row in rows {
            for name in row.keys() {
                if !self.columns.contains(name) && self.warned.insert(name.clone()) {
                    tracing::warn!(
                        "output column `{name}` is not in the output Avro schema (id {}) and is not written",
                        self.value.id
                    );
                }
            }
        }
    }
}

/// An output record's key or value (JSON built by the output modes).
fn parse(json: &[u8], what: &str) -> Result<Value, String> {
    serde_json::from_slice(json).map_err(|e| format!("the output {what} is not JSON: {e}"))
}

/// The output row's record schema: `SIDEJOIN_OUTPUT_AVRO_SCHEMA` as given, or derived from the
/// input schemas; `Ok(None)` when `shutdown` came first.
fn row_schema(
    config: &Config,
    registry: &Registry,
    namespace: &str,
    shutdown: &CancellationToken,
) -> Result<Option<Value>, AvroSetupError> {
    let Some(text) = &config.output.avro_schema else {
        return derive_row(config, registry, namespace, shutdown);
    };
    let v: Value = serde_json::from_str(text).map_err(|e| {
        AvroSetupError::Setting(format!("SIDEJOIN_OUTPUT_AVRO_SCHEMA is not JSON: {e}"))
    })?;
    if v.get("type").and_then(Value::as_str) != Some("record") {
        return Err(AvroSetupError::Setting(
            "SIDEJOIN_OUTPUT_AVRO_SCHEMA must be an Avro record schema".into(),
        ));
    }
    Ok(Some(v))
}

/// The changelog mode's value schema: a Debezium-style envelope around the row record.
fn envelope_schema(row: &Value, namespace: &str) -> Value {
    json!({
        "type": "record", "name": "Envelope", "namespace": namespace,
        "fields": [
            {"name": "before", "type": ["null", row.clone()], "default": null},
            {"name": "after", "type": ["null", full_name(row, namespace)], "default": null},
            {"name": "op", "type": "string"}
        ]
    })
}

/// The key record's schema, `None` without an output key.
fn key_schema(config: &Config, row: &Value, namespace: &str) -> Option<Value> {
    if config.output.key.is_empty() {
        return None;
    }
    let fields: Vec<Value> = config
        .output
        .key
        .iter()
        .map(|k| {
            // A key column is an output column (with `l.*` naming, its input column's).
            let t = field_type(row, &k.name)
                .or_else(|| match &k.source {
                    KeySource::Input(_, column) => field_type(row, column),
                    KeySource::Output => None,
                })
                .unwrap_or(json!(["null", "string", "long", "double", "boolean"]));
            json!({"name": k.name, "type": strip_named(t), "default": null})
        })
        .collect();
    Some(json!({"type": "record", "name": "Key", "namespace": namespace, "fields": fields}))
}

/// Registers `schema` under `subject`, retrying while the registry is unavailable.
fn register(
    registry: &Registry,
    subject: String,
    schema: &Value,
) -> Result<Registered, AvroSetupError> {
    let text = schema.to_string();
    let parsed = WriterSchema::parse(&text).map_err(|e| {
        AvroSetupError::Schema(format!("the output schema for {subject} {e}: {text}"))
    })?;
    let id = retry(&format!("registering {subject}"), None, || {
        registry.register(&subject, &text)
    })
    .map_err(|e| AvroSetupError::Schema(format!("registering {subject}: {e}")))?;
    tracing::info!("output schema registered: subject {subject}, id {id}");
    Ok(Registered { id, schema: parsed })
}

/// The output row record derived from the input subjects' latest schemas (`None`: shutdown).
fn derive_row(
    config: &Config,
    registry: &Registry,
    namespace: &str,
    shutdown: &CancellationToken,
) -> Result<Option<Value>, AvroSetupError> {
    let mut inputs: Vec<Option<Value>> = config.join.inputs().map(|_| None).collect();
    for side in config.join.inputs() {
        if !config.join.side(side).format.is_avro() {
            continue;
        }
        let Some(record) = row_record(config, registry, side, shutdown)? else {
            return Ok(None);
        };
        inputs[side.index()] = Some(fields_json(&record)?);
    }
    let fields_of = |side: Side| -> Result<&Value, AvroSetupError> {
        inputs[side.index()].as_ref().ok_or_else(|| {
            AvroSetupError::Setting(format!(
                "the {} side is JSON: its columns have no Avro types; set SIDEJOIN_OUTPUT_AVRO_SCHEMA",
                side.name()
            ))
        })
    };
    let select = Select::new(config.join.select.clone());
    let mut out: Vec<Value> = Vec::new();
    let taken = |out: &Vec<Value>, n: &str| {
        select.reserved().iter().any(|r| r == n) || out.iter().any(|f| f["name"] == n)
    };
    for item in select.items() {
        match item {
            SelectItem::Column {
                side,
                column,
                alias,
            } => {
                let t = field_type(&json!({"fields": fields_of(*side)?}), column).ok_or_else(|| {
                    AvroSetupError::Setting(format!("SIDEJOIN_SELECT names {}.{column}, which the input schema does not have", side.name()))
                })?;
                let name = alias
                    .clone()
                    .unwrap_or_else(|| free_name(column, |n| taken(&out, n)));
                out.push(json!({"name": name, "type": nullable(t), "default": null}));
            }
            SelectItem::All(side) => {
                for f in fields_of(*side)?.as_array().into_iter().flatten() {
                    let column = f["name"].as_str().unwrap_or_default();
                    let name = free_name(column, |n| taken(&out, n));
                    out.push(
                        json!({"name": name, "type": nullable(f["type"].clone()), "default": null}),
                    );
                }
            }
        }
    }
    Ok(Some(
        json!({"type": "record", "name": "Row", "namespace": namespace, "fields": out}),
    ))
}

fn field_type(record: &Value, name: &str) -> Option<Value> {
    record["fields"]
        .as_array()?
        .iter()
        .find(|f| f["name"] == name)
        .map(|f| f["type"].clone())
}

/// `t` as a union with null first (so that the default null is valid).
fn nullable(t: Value) -> Value {
    match t {
        Value::Array(branches) => {
            let mut rest: Vec<Value> = branches.into_iter().filter(|b| b != "null").collect();
            rest.insert(0, json!("null"));
            Value::Array(rest)
        }
        t if t == "null" => t,
        t => json!(["null", t]),
    }
}

/// A key field's type: the value's type, with named types (already defined in the value
/// schema, registered separately) replaced by what a key can hold as text.
fn strip_named(t: Value) -> Value {
    let named = |v: &Value| {
        v.is_object() && matches!(v["type"].as_str(), Some("record" | "enum" | "fixed"))
    };
    match t {
        Value::Array(bs) => Value::Array(
            bs.into_iter()
                .map(|b| if named(&b) { json!("string") } else { b })
                .collect(),
        ),
        t if named(&t) => json!(["null", "string"]),
        t => nullable(t),
    }
}

fn full_name(record: &Value, default_ns: &str) -> String {
    let name = record["name"].as_str().unwrap_or("Row");
    if name.contains('.') {
        return name.to_owned();
    }
    match record["namespace"].as_str() {
        Some(ns) if !ns.is_empty() => format!("{ns}.{name}"),
        Some(_) => name.to_owned(),
        None => format!("{default_ns}.{name}"),
    }
}

/// A topic name as an Avro namespace part (`[A-Za-z0-9_]`, not starting with a digit).
fn sanitize(topic: &str) -> String {
    let mut s: String = topic
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        s.insert(0, '_');
    }
    s
}
