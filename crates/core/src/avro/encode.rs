//! JSON (an output row or envelope) → an Avro binary datum of a schema: the inverse of `json`'s
//! mapping, so a column read from Avro input is written back with its own type (timestamps from
//! their RFC 3339 text, dates, times, exact decimals, base64 bytes, enum symbols). Numbers are
//! accepted for the logical types too (epoch units, days), as a JSON input would hold them.
//!
//! A missing record field is written as `null` when its type allows it, else as its default;
//! otherwise the row does not fit the schema and the error names the field.

use apache_avro::schema::{
    DecimalSchema, EnumSchema, FixedSchema, InnerDecimalSchema, Name, Names, RecordSchema, Schema,
    UnionSchema, UuidSchema,
};
use serde_json::Value;

use super::encode_values::{
    abbreviated, base64_of, float, minimal, mismatch, time_of_day, timestamp, unscaled,
};
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
    /// Appends `v` as a datum of `schema`: one arm per schema kind, the ones longer than a line
    /// in a function of their own.
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
            Schema::Int => int(v, out)?,
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
            Schema::Fixed(f) => fixed(f, v, out)?,
            Schema::Enum(e) => symbol(e, v, out)?,
            Schema::Union(u) => self.union(u, v, out, depth)?,
            Schema::Array(a) => self.array(&a.items, v, out, depth)?,
            Schema::Map(m) => self.map(&m.types, v, out, depth)?,
            Schema::Record(r) => self.record(r, v, out, depth)?,
            Schema::Ref { name } => self.value(self.lookup(name)?, v, out, depth + 1)?,
            Schema::Decimal(d) => decimal(d, v, out)?,
            Schema::BigDecimal => return Err("big-decimal output is not supported".into()),
            Schema::Uuid(u) => uuid(u, v, out)?,
            Schema::Date => long(date(v)?, out),
            Schema::TimeMillis => long(time_of_day(v)? / 1_000_000, out),
            Schema::TimeMicros => long(time_of_day(v)? / 1000, out),
            Schema::TimestampMillis | Schema::LocalTimestampMillis => {
                long(timestamp(v, 1_000_000)?, out)
            }
            Schema::TimestampMicros | Schema::LocalTimestampMicros => {
                long(timestamp(v, 1000)?, out)
            }
            Schema::TimestampNanos | Schema::LocalTimestampNanos => long(timestamp(v, 1)?, out),
            Schema::Duration(_) => duration(v, out)?,
        }
        Ok(())
    }

    /// A union: `null` as its null branch, anything else as the first non-null branch it
    /// encodes as (trying each into a scratch buffer), else the first non-null branch's error.
    fn union(
        &self,
        u: &UnionSchema,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
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
        Err(first_error.unwrap_or_else(|| mismatch("a union branch", v)))
    }

    /// An array as one block of all its items (none for an empty array), then the end marker.
    fn array(
        &self,
        items_schema: &Schema,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        let items = v.as_array().ok_or_else(|| mismatch("an array", v))?;
        if !items.is_empty() {
            long(items.len() as i64, out);
            for item in items {
                self.value(items_schema, item, out, depth + 1)?;
            }
        }
        out.push(0);
        Ok(())
    }

    /// A JSON object as a map: one block of all its entries (none when empty), then the end
    /// marker.
    fn map(
        &self,
        values: &Schema,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
        let entries = v
            .as_object()
            .ok_or_else(|| mismatch("an object (map)", v))?;
        if !entries.is_empty() {
            long(entries.len() as i64, out);
            for (k, item) in entries {
                bytes(k.as_bytes(), out);
                self.value(values, item, out, depth + 1)?;
            }
        }
        out.push(0);
        Ok(())
    }

    /// A JSON object as a record, field by field in the schema's order; a field that is missing
    /// or null and does not fit is written as its default when it has one.
    fn record(
        &self,
        r: &RecordSchema,
        v: &Value,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
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
        Ok(())
    }

    /// The schema a named reference stands for.
    fn lookup(&self, name: &Name) -> Result<&Schema, String> {
        self.names
            .get(name)
            .ok_or_else(|| format!("unknown type {name}"))
    }
}

/// An Avro int: a JSON integer that fits 32 bits.
fn int(v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    let n = v.as_i64().ok_or_else(|| mismatch("an integer", v))?;
    let n = i32::try_from(n).map_err(|_| format!("{n} does not fit an Avro int"))?;
    long(i64::from(n), out);
    Ok(())
}

/// Base64 text of exactly the fixed type's size, written without a length.
fn fixed(f: &FixedSchema, v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
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
    Ok(())
}

/// An enum symbol, written as its index in the schema.
fn symbol(e: &EnumSchema, v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    let s = v.as_str().ok_or_else(|| mismatch("an enum symbol", v))?;
    let i = e
        .symbols
        .iter()
        .position(|x| x == s)
        .ok_or_else(|| format!("{s:?} is not a symbol of enum {}", e.name))?;
    long(i as i64, out);
    Ok(())
}

/// An exact decimal's unscaled value, in minimal two's complement bytes (`bytes`) or
/// sign-extended to the fixed size (`fixed`).
fn decimal(d: &DecimalSchema, v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    let unscaled = unscaled(v, d.scale)?;
    match &d.inner {
        InnerDecimalSchema::Bytes => bytes(&minimal(&unscaled), out),
        InnerDecimalSchema::Fixed(f) => {
            let m = minimal(&unscaled);
            if m.len() > f.size {
                return Err(format!(
                    "decimal {} does not fit {} bytes",
                    abbreviated(&v.to_string()),
                    f.size
                ));
            }
            let fill = if m[0] & 0x80 != 0 { 0xff } else { 0 };
            out.extend(std::iter::repeat_n(fill, f.size - m.len()));
            out.extend_from_slice(&m);
        }
    }
    Ok(())
}

/// A uuid string: as it is for a string uuid, else as its 16 bytes (with a length for `bytes`).
fn uuid(u: &UuidSchema, v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    let s = v.as_str().ok_or_else(|| mismatch("a uuid string", v))?;
    match u {
        UuidSchema::String => bytes(s.as_bytes(), out),
        UuidSchema::Bytes => bytes(&uuid_bytes(s)?, out),
        UuidSchema::Fixed(_) => out.extend_from_slice(&uuid_bytes(s)?),
    }
    Ok(())
}

/// The 16 bytes of a uuid's hex text (dashes anywhere are ignored).
fn uuid_bytes(s: &str) -> Result<Vec<u8>, String> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .filter(|b| b.len() == 16)
        .ok_or_else(|| format!("{s:?} is not a uuid"))
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` text, or a number taken as days already.
fn date(v: &Value) -> Result<i64, String> {
    Ok(match v {
        Value::String(s) => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .map_err(|_| format!("{s:?} is not a date (YYYY-MM-DD)"))?
            .signed_duration_since(chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
            .num_days(),
        _ => v.as_i64().ok_or_else(|| mismatch("a date", v))?,
    })
}

/// A duration object as its three little-endian u32s: months, days, milliseconds.
fn duration(v: &Value, out: &mut Vec<u8>) -> Result<(), String> {
    for part in ["months", "days", "millis"] {
        let n = v
            .get(part)
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| mismatch("a duration {months, days, millis}", v))?;
        out.extend_from_slice(&n.to_le_bytes());
    }
    Ok(())
}

#[cfg(test)]
#[path = "encode_tests.rs"]
mod tests;
