//! An Avro binary datum → compact JSON text, walking the writer schema: the JSON a row of a JSON
//! topic would hold, so Avro records enter the same decoders and `Row`s as JSON ones.
//!
//! The mapping (docs/src/operations/avro.md): unions are their branch's value (no `{"type": …}` wrapper);
//! records and maps are objects (map keys sorted), arrays arrays; enums their symbol; bytes and
//! fixed base64 (standard, padded) strings; `decimal` an exact JSON number with the schema's
//! scale (`12.30`); `uuid` its string; `date` `"2024-01-31"`; `time-millis`/`-micros`
//! `"13:45:00.123"`/`"13:45:00.123456"`; `timestamp-millis`/`-micros`/`-nanos` RFC 3339 UTC with
//! 3/6/9 fraction digits (`"2024-01-31T13:45:00.123Z"`), `local-timestamp-*` the same without
//! `Z`; `duration` `{"months":…,"days":…,"millis":…}`; NaN and infinities the strings `"NaN"`,
//! `"Infinity"`, `"-Infinity"` (JSON has no such numbers).
//!
//! Never trusts the body: every length is checked against what is left before anything is
//! allocated, nesting is bounded (recursive schemas), and bytes left over after the datum are an
//! error (the body was not written with this schema).

use std::io::Write;

use apache_avro::schema::{InnerDecimalSchema, Name, Names, Schema, UuidSchema};

pub use super::json_values::base64;
use super::json_values::{decimal, float, string, time_of_day, timestamp, uuid};

/// Deepest nesting of records, arrays, maps and unions in one datum.
pub const MAX_DEPTH: usize = 128;

/// Decodes the whole of `body` as one datum of `schema`, appending its JSON to `out`.
pub fn datum_to_json(
    schema: &Schema,
    names: &Names,
    body: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let mut r = Reader {
        bytes: body,
        pos: 0,
        names,
    };
    r.value(schema, out, 0)?;
    if r.pos != body.len() {
        return Err(format!(
            "{} byte(s) left after the datum: the body does not match its schema",
            body.len() - r.pos
        ));
    }
    Ok(())
}

struct Reader<'a, 'n> {
    bytes: &'a [u8],
    pos: usize,
    names: &'n Names,
}

impl<'a, 'n> Reader<'a, 'n> {
    fn truncated(&self, what: &str) -> String {
        format!("truncated body: {what} at byte {}", self.pos)
    }

    fn long(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(self.truncated("a varint runs past the end"));
            };
            self.pos += 1;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err(format!(
            "a varint longer than 10 bytes at byte {}",
            self.pos
        ))
    }

    fn int(&mut self) -> Result<i32, String> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| format!("int out of range: {v}"))
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        if n > self.bytes.len() - self.pos {
            return Err(self.truncated(&format!("{what} of {n} bytes")));
        }
        let s = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn len(&mut self, what: &str) -> Result<usize, String> {
        let n = self.long()?;
        let n = usize::try_from(n).map_err(|_| format!("negative {what} length {n}"))?;
        if n > self.bytes.len() - self.pos {
            return Err(self.truncated(&format!("{what} of {n} bytes")));
        }
        Ok(n)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.len("bytes")?;
        self.take(n, "bytes")
    }

    fn string(&mut self) -> Result<&'a str, String> {
        let n = self.len("string")?;
        let s = self.take(n, "string")?;
        std::str::from_utf8(s)
            .map_err(|_| format!("a string that is not UTF-8 before byte {}", self.pos))
    }

    /// The item count of the next array/map block (0 = the end); a negative count is followed
    /// by the block's size in bytes, which is skipped.
    fn block(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        let n = if n < 0 {
            self.long()?; // block size in bytes
            n.checked_neg().ok_or("bad block count")?
        } else {
            n
        };
        // Every item takes at least one byte unless it is null/empty: bound by what is left so
        // that a forged count cannot spin for long.
        let n = n as u64;
        if n > ((self.bytes.len() - self.pos) as u64 + 1) << 10 {
            return Err(self.truncated(&format!("a block of {n} items")));
        }
        Ok(n as usize)
    }

    fn value(&mut self, schema: &Schema, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        match schema {
            Schema::Null => out.extend_from_slice(b"null"),
            Schema::Boolean => match self.take(1, "boolean")?[0] {
                0 => out.extend_from_slice(b"false"),
                1 => out.extend_from_slice(b"true"),
                b => return Err(format!("a boolean byte {b} (not 0 or 1)")),
            },
            Schema::Int => write!(out, "{}", self.int()?).unwrap(),
            Schema::Long => write!(out, "{}", self.long()?).unwrap(),
            Schema::Float => {
                let b = self.take(4, "float")?;
                float(
                    f64::from(f32::from_le_bytes(b.try_into().unwrap())),
                    out,
                    true,
                );
            }
            Schema::Double => {
                let b = self.take(8, "double")?;
                float(f64::from_le_bytes(b.try_into().unwrap()), out, false);
            }
            Schema::Bytes => {
                let b = self.bytes()?;
                string(&base64(b), out);
            }
            Schema::String => {
                let s = self.string()?;
                string(s, out);
            }
            Schema::Fixed(f) => {
                let b = self.take(f.size, "fixed")?;
                string(&base64(b), out);
            }
            Schema::Enum(e) => {
                let i = self.long()?;
                let symbol = usize::try_from(i)
                    .ok()
                    .and_then(|i| e.symbols.get(i))
                    .ok_or_else(|| format!("enum {} has no symbol #{i}", e.name))?;
                string(symbol, out);
            }
            Schema::Union(u) => {
                let i = self.long()?;
                let branch = usize::try_from(i)
                    .ok()
                    .and_then(|i| u.variants().get(i))
                    .ok_or_else(|| {
                        format!("union branch #{i} of a {}-branch union", u.variants().len())
                    })?;
                self.value(branch, out, depth + 1)?;
            }
            Schema::Array(a) => {
                out.push(b'[');
                let mut first = true;
                loop {
                    let n = self.block()?;
                    if n == 0 {
                        break;
                    }
                    for _ in 0..n {
                        if !std::mem::take(&mut first) {
                            out.push(b',');
                        }
                        self.value(&a.items, out, depth + 1)?;
                    }
                }
                out.push(b']');
            }
            Schema::Map(m) => self.map(&m.types, out, depth)?,
            Schema::Record(rec) => {
                out.push(b'{');
                for (i, f) in rec.fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    string(&f.name, out);
                    out.push(b':');
                    self.value(&f.schema, out, depth + 1)?;
                }
                out.push(b'}');
            }
            Schema::Ref { name } => {
                let target = self.lookup(name)?;
                self.value(target, out, depth + 1)?;
            }
            Schema::Decimal(d) => {
                let raw = match &d.inner {
                    InnerDecimalSchema::Bytes => self.bytes()?,
                    InnerDecimalSchema::Fixed(f) => self.take(f.size, "fixed decimal")?,
                };
                decimal(raw, d.scale, out);
            }
            Schema::BigDecimal => {
                // bytes holding (unscaled bytes, scale as an int) of Avro's big-decimal.
                let inner = self.bytes()?;
                let mut sub = Reader {
                    bytes: inner,
                    pos: 0,
                    names: self.names,
                };
                let unscaled = sub.bytes()?;
                let scale = sub.long()?;
                let scale =
                    usize::try_from(scale).map_err(|_| format!("big-decimal scale {scale}"))?;
                decimal(unscaled, scale, out);
            }
            Schema::Uuid(u) => match u {
                UuidSchema::String => {
                    let s = self.string()?;
                    string(s, out);
                }
                UuidSchema::Bytes => {
                    let b = self.bytes()?;
                    uuid(b, out)?;
                }
                UuidSchema::Fixed(f) => {
                    let b = self.take(f.size, "uuid")?;
                    uuid(b, out)?;
                }
            },
            Schema::Date => {
                let days = self.int()?;
                let date = chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
                    .unwrap()
                    .checked_add_signed(chrono::TimeDelta::days(i64::from(days)))
                    .ok_or_else(|| format!("date out of range: {days} days"))?;
                string(&date.format("%Y-%m-%d").to_string(), out);
            }
            Schema::TimeMillis => {
                let ms = i64::from(self.int()?);
                time_of_day(ms * 1_000_000, 3, out)?;
            }
            Schema::TimeMicros => {
                let us = self.long()?;
                time_of_day(us.saturating_mul(1000), 6, out)?;
            }
            Schema::TimestampMillis => timestamp(self.long()?, 1_000_000, 3, true, out)?,
            Schema::TimestampMicros => timestamp(self.long()?, 1000, 6, true, out)?,
            Schema::TimestampNanos => timestamp(self.long()?, 1, 9, true, out)?,
            Schema::LocalTimestampMillis => timestamp(self.long()?, 1_000_000, 3, false, out)?,
            Schema::LocalTimestampMicros => timestamp(self.long()?, 1000, 6, false, out)?,
            Schema::LocalTimestampNanos => timestamp(self.long()?, 1, 9, false, out)?,
            Schema::Duration(_) => {
                let b = self.take(12, "duration")?;
                let part = |i: usize| u32::from_le_bytes(b[i * 4..i * 4 + 4].try_into().unwrap());
                write!(
                    out,
                    "{{\"months\":{},\"days\":{},\"millis\":{}}}",
                    part(0),
                    part(1),
                    part(2)
                )
                .unwrap();
            }
        }
        Ok(())
    }

    fn map(&mut self, values: &Schema, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
        let mut entries: Vec<(&str, Vec<u8>)> = Vec::new();
        loop {
            let n = self.block()?;
            if n == 0 {
                break;
            }
            for _ in 0..n {
                let k = self.string()?;
                let mut v = Vec::new();
                self.value(values, &mut v, depth + 1)?;
                entries.push((k, v));
            }
        }
        // Sorted, and a repeated key keeps its last value (as JSON objects do).
        entries.sort_by(|a, b| a.0.cmp(b.0));
        entries.dedup_by(|later, earlier| {
            if later.0 == earlier.0 {
                std::mem::swap(later, earlier);
                true
            } else {
                false
            }
        });
        out.push(b'{');
        for (i, (k, v)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            string(k, out);
            out.push(b':');
            out.extend_from_slice(v);
        }
        out.push(b'}');
        Ok(())
    }

    fn lookup(&self, name: &Name) -> Result<&'n Schema, String> {
        self.names
            .get(name)
            .ok_or_else(|| format!("the schema refers to an unknown type {name}"))
    }
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
