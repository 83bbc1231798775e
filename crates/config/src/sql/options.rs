//! A table's `WITH` options (and `PRIMARY KEY`, columns, watermark) as `SIDEJOIN_*` settings: the
//! two inputs' connector, topic, format and CSV options, and the sink's topic, output mode and
//! key. Every option sidejoin does not know is an error quoting it.

use super::ddl::{Table, TableOption};
use super::error::{Result, SqlError};
use super::settings::Settings;
use crate::Side;

fn quoted(o: &TableOption) -> String {
    format!("'{}' = '{}'", o.key, o.value)
}

fn bad(o: &TableOption, why: impl Into<String>) -> SqlError {
    SqlError::new(o.at, quoted(o), why)
}

/// An option sidejoin does not know, quoted without its value: an unknown option may hold a
/// secret (`'value.avro-confluent.basic-auth.user-info' = 'user:password'`).
fn unsupported(o: &TableOption, what: &str) -> SqlError {
    let mut why = format!("unsupported option for {what}");
    if o.key.contains("basic-auth") || o.key.contains("ssl.") || o.key.contains("bearer-auth") {
        why.push_str(
            "; the schema registry's credentials and CA come from SIDEJOIN_SCHEMA_REGISTRY_USERNAME, \
             _PASSWORD and _CA_LOCATION (the value is not shown: it may be secret)",
        );
    }
    SqlError::new(o.at, format!("'{}' = '…'", o.key), why)
}

/// Options every Kafka table may carry: brokers, consumer group, librdkafka properties.
fn kafka_common(s: &mut Settings, o: &TableOption) -> Result<bool> {
    let q = quoted(o);
    match o.key.as_str() {
        "properties.bootstrap.servers" => s.set("BOOTSTRAP_SERVERS", &o.value, o.at, q)?,
        "properties.group.id" => s.set("APPLICATION_ID", &o.value, o.at, q)?,
        k if k.starts_with("properties.") => {
            let prop = &k["properties.".len()..];
            let name = format!(
                "KAFKA_{}",
                prop.to_ascii_uppercase().replace(['.', '-'], "_")
            );
            // Passthrough values may be secrets (SASL passwords): never quoted back.
            s.set(&name, &o.value, o.at, format!("'{k}' = '…'"))?;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// The schema registry of the Confluent Avro formats.
fn registry(s: &mut Settings, o: &TableOption) -> Result<bool> {
    let k = o.key.as_str();
    let k = k
        .strip_prefix("value.")
        .or_else(|| k.strip_prefix("key."))
        .unwrap_or(k);
    let url = matches!(
        k,
        "avro-confluent.url"
            | "avro-confluent.schema-registry.url"
            | "debezium-avro-confluent.url"
            | "debezium-avro-confluent.schema-registry.url"
    );
    if url {
        s.set("SCHEMA_REGISTRY_URL", &o.value, o.at, quoted(o))?;
    }
    Ok(url)
}

/// A `csv.*` (or `value.csv.*`) option of a side.
fn csv_option(s: &mut Settings, side: &str, o: &TableOption) -> Result<bool> {
    let k = o.key.strip_prefix("value.").unwrap_or(&o.key);
    let Some(opt) = k.strip_prefix("csv.") else {
        return Ok(false);
    };
    let name = match opt {
        "field-delimiter" => "CSV_FIELD_DELIMITER",
        "quote-character" => "CSV_QUOTE_CHARACTER",
        "disable-quote-character" => "CSV_DISABLE_QUOTE_CHARACTER",
        "null-literal" => "CSV_NULL_LITERAL",
        "ignore-parse-errors" => "CSV_IGNORE_PARSE_ERRORS",
        "escape-character" => "CSV_ESCAPE_CHARACTER",
        _ => {
            return Err(bad(
                o,
                "unsupported csv option (supported: field-delimiter, quote-character, disable-quote-character, escape-character, null-literal, ignore-parse-errors)",
            ))
        }
    };
    // Flink reads these values with Java escapes: '\t' is a tab.
    let value = unescape(&o.value);
    s.set(&format!("{side}_{name}"), value, o.at, quoted(o))?;
    Ok(true)
}

/// Java string escapes as Flink's CSV options read them (`\t`, `\n`, `\\`, `\'`, `\uXXXX`).
fn unescape(v: &str) -> String {
    let mut out = String::new();
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(ch) => out.push(ch),
                    None => {
                        out.push_str("\\u");
                        out.push_str(&hex);
                    }
                }
            }
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The value format of a source: `(SIDEJOIN format, whether it is csv)`.
fn source_format(connector: &str, o: &TableOption) -> Result<&'static str> {
    let f = o.value.to_ascii_lowercase();
    let upsert = connector == "upsert-kafka";
    Ok(match (f.as_str(), upsert) {
        ("json", false) => "json",
        ("csv", false) => "csv",
        ("debezium-json", false) => "debezium-json",
        ("avro-confluent", false) => "avro",
        ("debezium-avro-confluent", false) => "debezium-avro",
        ("json", true) => "upsert-json",
        ("avro-confluent", true) => "upsert-avro",
        _ => {
            return Err(bad(
                o,
                format!(
                    "unsupported format for a {connector} source (supported: {})",
                    if upsert {
                        "json, avro-confluent"
                    } else {
                        "json, csv, debezium-json, avro-confluent, debezium-avro-confluent"
                    }
                ),
            ))
        }
    })
}

fn connector<'a>(t: &'a Table, allowed: &[&str]) -> Result<&'a TableOption> {
    let Some(c) = t.option("connector") else {
        return Err(SqlError::new(
            t.at,
            &t.name,
            "the table has no 'connector' option",
        ));
    };
    if !allowed.contains(&c.value.as_str()) {
        return Err(bad(
            c,
            format!(
                "unsupported connector here (supported: {})",
                allowed.join(", ")
            ),
        ));
    }
    Ok(c)
}

/// `name TYPE, name TYPE` of a table's physical columns (`SIDEJOIN_<SIDE>_COLUMNS`).
pub(super) fn columns_value(t: &Table) -> String {
    t.physical()
        .map(|c| format!("{} {}", c.name, c.ty.as_deref().unwrap_or("STRING")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The settings of the table read as `side`; returns its `'key.fields'` option (a `kafka`
/// table's declaration of what its records are keyed by), which `keyed_sides` judges once
/// the join key is known.
pub(super) fn source(s: &mut Settings, side: Side, t: &Table) -> Result<Option<TableOption>> {
    let v = side.var();
    let conn = connector(t, &["kafka", "upsert-kafka"])?;
    let upsert = conn.value == "upsert-kafka";
    let mut format = None;
    let mut key_fields = None;
    for o in &t.options {
        if kafka_common(s, o)? || registry(s, o)? || csv_option(s, v, o)? {
            continue;
        }
        let q = quoted(o);
        match o.key.as_str() {
            "connector" => {}
            "topic" if o.value.contains(';') => {
                return Err(bad(o, "sidejoin reads one topic per side"))
            }
            "topic" => s.set(&format!("{v}_TOPIC"), &o.value, o.at, q)?,
            "format" | "value.format" => format = Some(source_format(&conn.value, o)?),
            "key.format" => {}
            "key.fields" if !upsert => key_fields = Some(o.clone()),
            "value.fields-include" if o.value.eq_ignore_ascii_case("all") => {}
            "value.fields-include" if upsert && o.value.eq_ignore_ascii_case("except_key") => {}
            "value.fields-include" => {
                return Err(bad(o, "a kafka source's values must hold every column (ALL); EXCEPT_KEY is supported for upsert-kafka only"))
            }
            "debezium-json.schema-include" | "value.debezium-json.schema-include" => {}
            "scan.startup.mode" => {
                let reset = match o.value.as_str() {
                    "earliest-offset" => "earliest",
                    "latest-offset" => "latest",
                    _ => return Err(bad(o, "supported startup modes: earliest-offset, latest-offset (a new consumer group starts there; later runs resume from committed offsets)")),
                };
                s.set("AUTO_OFFSET_RESET", reset, o.at, q)?;
            }
            _ => return Err(unsupported(o, "a source table")),
        }
    }
    let Some(format) = format else {
        return Err(SqlError::new(
            conn.at,
            quoted(conn),
            "the table has no 'format' / 'value.format' option",
        ));
    };
    let format_at = t
        .option("format")
        .or_else(|| t.option("value.format"))
        .map(|o| (o.at, quoted(o)))
        .unwrap_or((conn.at, quoted(conn)));
    s.set(&format!("{v}_FORMAT"), format, format_at.0, &format_at.1)?;
    if format == "csv" {
        s.set(
            &format!("{v}_COLUMNS"),
            columns_value(t),
            t.at,
            format!("CREATE TABLE {}", t.name),
        )?;
    }
    primary_key(s, t, &format!("{v}_PRIMARY_KEY"), upsert)?;
    Ok(key_fields)
}

/// `'key.fields'` naming exactly a side's join columns declare its topic keyed by the join key
/// (Flink's Kafka sink and any producer keying by those fields put equal join keys in one
/// partition): the side is read as it is, `<SIDE>_HASH_BY=none`, unless a `HASH_BY_KEY` hint
/// already placed it. Other key fields, or none, leave the placement to the plan (SPEC §6).
pub(super) fn keyed_sides(s: &mut Settings, key_fields: Vec<Option<TableOption>>) -> Result<()> {
    for (side, o) in Side::first(key_fields.len()).zip(key_fields) {
        let Some(o) = o else { continue };
        let v = side.var();
        if s.get(&format!("SIDEJOIN_{v}_HASH_BY")).is_some() {
            continue;
        }
        let join_key = s
            .get(&format!("SIDEJOIN_{v}_KEY"))
            .map(|k| k.value.clone())
            .unwrap_or_default();
        let mut declared: Vec<&str> = o.value.split(';').map(str::trim).collect();
        let mut joined: Vec<&str> = join_key.split(',').map(str::trim).collect();
        declared.sort_unstable();
        joined.sort_unstable();
        if declared == joined {
            s.set(&format!("{v}_HASH_BY"), "none", o.at, quoted(&o))?;
        }
    }
    Ok(())
}

/// The settings of the sink table; `print` and `blackhole` sinks write no topic.
pub(super) fn sink(s: &mut Settings, t: &Table) -> Result<()> {
    let conn = connector(t, &["kafka", "upsert-kafka", "print", "blackhole"])?;
    if conn.value == "print" || conn.value == "blackhole" {
        if let Some(o) = t.options.iter().find(|o| o.key != "connector") {
            return Err(unsupported(o, &format!("a {} sink", conn.value)));
        }
        return Ok(());
    }
    let upsert = conn.value == "upsert-kafka";
    let mut mode_set = false;
    for o in &t.options {
        if kafka_common(s, o)? || registry(s, o)? {
            continue;
        }
        let q = quoted(o);
        match o.key.as_str() {
            "connector" => {}
            "topic" => s.set("OUTPUT_TOPIC", &o.value, o.at, q)?,
            "format" | "value.format" => {
                let (mode, format) = sink_format(o, upsert)?;
                s.set("OUTPUT_MODE", mode, o.at, &q)?;
                s.set("OUTPUT_FORMAT", format, o.at, &q)?;
                mode_set = true;
            }
            "key.format" => {}
            "key.fields" if !upsert => s.set("OUTPUT_KEY", o.value.replace(';', ","), o.at, q)?,
            "value.fields-include" if o.value.eq_ignore_ascii_case("all") => {}
            "sink.delivery-guarantee" => {
                s.set("PROCESSING_GUARANTEE", delivery_guarantee(o)?, o.at, q)?;
            }
            _ => return Err(unsupported(o, "a sink table")),
        }
    }
    if !mode_set {
        return Err(SqlError::new(
            conn.at,
            quoted(conn),
            "the sink has no 'format' / 'value.format' option",
        ));
    }
    primary_key(s, t, "OUTPUT_KEY", upsert)
}

/// A sink's value format: `(SIDEJOIN_OUTPUT_MODE, SIDEJOIN_OUTPUT_FORMAT)`.
fn sink_format(o: &TableOption, upsert: bool) -> Result<(&'static str, &'static str)> {
    Ok(match (o.value.to_ascii_lowercase().as_str(), upsert) {
        ("json", false) => ("append", "json"),
        ("debezium-json", false) => ("changelog", "json"),
        ("avro-confluent", false) => ("append", "avro"),
        ("json", true) => ("upsert", "json"),
        ("avro-confluent", true) => ("upsert", "avro"),
        _ => return Err(bad(o, "unsupported sink format (kafka: json, debezium-json, avro-confluent; upsert-kafka: json, avro-confluent)")),
    })
}

/// `sink.delivery-guarantee` as `SIDEJOIN_PROCESSING_GUARANTEE`.
fn delivery_guarantee(o: &TableOption) -> Result<&'static str> {
    match o.value.as_str() {
        "at-least-once" => Ok("at_least_once"),
        "exactly-once" => Ok("exactly_once"),
        _ => Err(bad(
            o,
            "supported delivery guarantees: at-least-once, exactly-once",
        )),
    }
}

/// A table's `PRIMARY KEY (…)` as the setting `var`; an upsert-kafka table must have one.
fn primary_key(s: &mut Settings, t: &Table, var: &str, upsert: bool) -> Result<()> {
    match &t.primary_key {
        Some((pk, at)) => s.set(
            var,
            pk.join(","),
            *at,
            format!("PRIMARY KEY ({})", pk.join(", ")),
        ),
        None if upsert => Err(SqlError::new(
            t.at,
            &t.name,
            "an upsert-kafka table needs PRIMARY KEY (…) NOT ENFORCED",
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn java_escapes() {
        assert_eq!(super::unescape("\\t"), "\t");
        assert_eq!(super::unescape(","), ",");
        assert_eq!(super::unescape("\\u0009"), "\t");
    }
}
