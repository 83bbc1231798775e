//! JSON (an output row or envelope) → an Avro binary datum of a schema: the inverse of `json`'s
//! mapping, so a column read from Avro input is written back with its own type (timestamps from
//! their RFC 3339 text, dates, times, exact decimals, base64 bytes, enum symbols). Numbers are
//! accepted for the logical types too (epoch units, days), as a JSON input would hold them.
//!
//! A missing record field is written as `null` when its type allows it, else as its default;
//! otherwise the row does not fit the schema and the error names the field.

use apache_avro::schema::{InnerDecimalSchema, Names, Schema, UuidSchema};
use serde_json::Value;

use super::encode_values::{base64_of, float, minimal, mismatch, time_of_day, timestamp, unscaled};
use super::json::MAX_DEPTH;

/// Appends `value` encoded with `schema` to `out`.
pub fn encode(
    schema: &Schema,
    names: &Names,
    value: &Value,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    Encoder { names }.value(schema, value, out, 0)
}

struct Encoder<'n> {
    names: &'n Names,
}

fn long(v: i64, out: &mut Vec<u8>) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let b = (n & 0x7f) as u8;
        n >>= 7;
        if n == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

fn bytes(b: &[u8], out: &mut Vec<u8>) {
    long(b.len() as i64, out);
    out.extend_from_slice(b);
}

impl Encoder<'_> {
    fn value(
        &self,
        schema: &Schema,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        match schema {
            Schema::Null => v
                .is_null()
                .then_some(())
                .ok_or_else(|| mismatch("null", v))?,
            Schema::Boolean => out.push(u8::from(
                v.as_bool().ok_or_else(|| mismatch("a boolean", v))?,
            )),
            Schema::Int => {
                let n = v.as_i64().ok_or_else(|| mismatch("an integer", v))?;
                let n = i32::try_from(n).map_err(|_| format!("{n} does not fit an Avro int"))?;
                long(i64::from(n), out);
            }
            Schema::Long => long(v.as_i64().ok_or_else(|| mismatch("an integer", v))?, out),
            Schema::Float => out.extend_from_slice(&(float(v)? as f32).to_le_bytes()),
            Schema::Double => out.extend_from_slice(&float(v)?.to_le_bytes()),
            Schema::Bytes => bytes(&base64_of(v)?, out),
            Schema::String => bytes(
                v.as_str()
                    .ok_or_else(|| mismatch("a string", v))?
                    .as_bytes(),
                out,
            ),
            Schema::Fixed(f) => {
                let b = base64_of(v)?;
                if b.len() != f.size {
                    return Err(format!(
                        "fixed {} needs {} bytes, found {}",
                        f.name,
                        f.size,
                        b.len()
                    ));
                }
                out.extend_from_slice(&b);
            }
            Schema::Enum(e) => {
                let s = v.as_str().ok_or_else(|| mismatch("an enum symbol", v))?;
                let i = e
                    .symbols
                    .iter()
                    .position(|x| x == s)
                    .ok_or_else(|| format!("{s:?} is not a symbol of enum {}", e.name))?;
                long(i as i64, out);
            }
            Schema::Union(u) => {
                let variants = u.variants();
                if v.is_null() {
                    let i = variants
                        .iter()
                        .position(|s| matches!(s, Schema::Null))
                        .ok_or_else(|| "null for a union without null".to_owned())?;
                    long(i as i64, out);
                    return Ok(());
                }
                let mut first_error = None;
                for (i, s) in variants.iter().enumerate() {
                    if matches!(s, Schema::Null) {
                        continue;
                    }
                    let mut tmp = Vec::new();
                    match self.value(s, v, &mut tmp, depth + 1) {
                        Ok(()) => {
                            long(i as i64, out);
                            out.extend_from_slice(&tmp);
                            return Ok(());
                        }
                        Err(e) => {
                            first_error.get_or_insert(e);
                        }
                    }
                }
                return Err(first_error.unwrap_or_else(|| mismatch("a union branch", v)));
            }
            Schema::Array(a) => {
                let items = v.as_array().ok_or_else(|| mismatch("an array", v))?;
                if !items.is_empty() {
                    long(items.len() as i64, out);
                    for item in items {
                        self.value(&a.items, item, out, depth + 1)?;
                    }
                }
                out.push(0);
            }
            Schema::Map(m) => {
                let entries = v
                    .as_object()
                    .ok_or_else(|| mismatch("an object (map)", v))?;
                if !entries.is_empty() {
                    long(entries.len() as i64, out);
                    for (k, item) in entries {
                        bytes(k.as_bytes(), out);
                        self.value(&m.types, item, out, depth + 1)?;
                    }
                }
                out.push(0);
            }
            Schema::Record(r) => {
                let obj = v
                    .as_object()
                    .ok_or_else(|| mismatch("an object (record)", v))?;
                for f in &r.fields {
                    let field = obj.get(&f.name).unwrap_or(&Value::Null);
                    let written = self.value(&f.schema, field, out, depth + 1);
                    match (written, &f.default) {
                        (Ok(()), _) => {}
                        (Err(_), Some(default)) if field.is_null() => {
                            self.value(&f.schema, default, out, depth + 1)?;
                        }
                        (Err(e), _) => return Err(format!("field {}: {e}", f.name)),
                    }
                }
            }
            Schema::Ref { name } => {
                let s = self
                    .names
                    .get(name)
                    .ok_or_else(|| format!("unknown type {name}"))?;
                self.value(s, v, out, depth + 1)?;
            }
            Schema::Decimal(d) => {
                let unscaled = unscaled(v, d.scale)?;
                match &d.inner {
                    InnerDecimalSchema::Bytes => bytes(&minimal(&unscaled), out),
                    InnerDecimalSchema::Fixed(f) => {
                        let m = minimal(&unscaled);
                        if m.len() > f.size {
                            return Err(format!("decimal {v} does not fit {} bytes", f.size));
                        }
                        let fill = if m[0] & 0x80 != 0 { 0xff } else { 0 };
                        out.extend(std::iter::repeat_n(fill, f.size - m.len()));
                        out.extend_from_slice(&m);
                    }
                }
            }
            Schema::BigDecimal => return Err("big-decimal output is not supported".into()),
            Schema::Uuid(u) => {
                let s = v.as_str().ok_or_else(|| mismatch("a uuid string", v))?;
                match u {
                    UuidSchema::String => bytes(s.as_bytes(), out),
                    UuidSchema::Bytes | UuidSchema::Fixed(_) => {
                        let hex: String = s.chars().filter(|c| *c != '-').collect();
                        let b = (0..hex.len())
                            .step_by(2)
                            .map(|i| {
                                hex.get(i..i + 2)
                                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                            })
                            .collect::<Option<Vec<u8>>>()
                            .filter(|b| b.len() == 16)
                            .ok_or_else(|| format!("{s:?} is not a uuid"))?;
                        if matches!(u, UuidSchema::Bytes) {
                            bytes(&b, out);
                        } else {
                            out.extend_from_slice(&b);
                        }
                    }
                }
            }
            Schema::Date => {
                let days = match v {
                    Value::String(s) => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                        .map_err(|_| format!("{s:?} is not a date (YYYY-MM-DD)"))?
                        .signed_duration_since(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
                        .num_days(),
                    _ => v.as_i64().ok_or_else(|| mismatch("a date", v))?,
                };
                long(days, out);
            }
            Schema::TimeMillis => long(time_of_day(v)? / 1_000_000, out),
            Schema::TimeMicros => long(time_of_day(v)? / 1000, out),
            Schema::TimestampMillis | Schema::LocalTimestampMillis => {
                long(timestamp(v, 1_000_000)?, out)
            }
            Schema::TimestampMicros | Schema::LocalTimestampMicros => {
                long(timestamp(v, 1000)?, out)
            }
            Schema::TimestampNanos | Schema::LocalTimestampNanos => long(timestamp(v, 1)?, out),
            Schema::Duration(_) => {
                for part in ["months", "days", "millis"] {
                    let n = v
                        .get(part)
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .ok_or_else(|| mismatch("a duration {months, days, millis}", v))?;
                    out.extend_from_slice(&n.to_le_bytes());
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
