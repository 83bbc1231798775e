//! An Avro binary datum → compact JSON text, walking the writer schema: the JSON a row of a JSON
//! topic would hold, so Avro records enter the same decoders and `Row`s as JSON ones.
//!
//! The mapping (docs/src/operations/avro.md): unions are their branch's value (no `{"type": …}` wrapper);
//! records and maps are objects (map keys sorted), arrays arrays; enums their symbol; bytes and
//! fixed base64 (standard, padded) strings; `decimal` an exact JSON number with the schema's
//! scale (`12.30`); `uuid` its string; `date` `"2024-01-31"`; `time-millis`/`-micros`
//! `"13:45:00.123"`/`"13:45:00.123456"`; `timestamp-millis`/`-micros`/`-nanos` RFC 3339 UTC with
//! 3/6/9 fraction digits (`"2024-01-31T13:45:00.123Z"`), `local-timestamp-*` the same without
//! `Z` (outside the years 0000–9999, the number of units); `duration` `{"months":…,"days":…,"millis":…}`; NaN and infinities the strings `"NaN"`,
//! `"Infinity"`, `"-Infinity"` (JSON has no such numbers).
//!
//! Never trusts the body: every length is checked against what is left before anything is
//! allocated, nesting is bounded (recursive schemas), and bytes left over after the datum are an
//! error (the body was not written with this schema).

use std::io::Write;

use apache_avro::schema::{
    EnumSchema, InnerDecimalSchema, Name, Names, RecordSchema, Schema, UnionSchema, UuidSchema,
};

pub use super::json_values::base64;
use super::json_values::{decimal, float, string, time_of_day, timestamp, uuid};

mod reader;

/// Deepest nesting of records, arrays, maps and unions in one datum.
pub const MAX_DEPTH: usize = 128;

/// The JSON of one datum may be at most this many times its body's size, plus
/// `OUTPUT_ALLOWANCE`: zero-width values (`null`, empty records, array items of those) cost no
/// body bytes, so only a bound on the output keeps a forged block count from writing forever.
pub const OUTPUT_FACTOR: usize = 64;

/// The output a datum may write regardless of its body's size (a record of null fields).
pub const OUTPUT_ALLOWANCE: usize = 1 << 20;

/// The largest decimal scale (digits after the point) and precision a datum or schema may name.
pub const MAX_DECIMAL_DIGITS: usize = 1_000;

/// The longest unscaled decimal value, in bytes (2,466 decimal digits): the text conversion
/// divides the whole value once per digit, so its cost grows with the square of this.
pub const MAX_DECIMAL_BYTES: usize = 1_024;

/// The most digits an unscaled value of `MAX_DECIMAL_BYTES` has (2^8191 < 10^2466): the bound
/// of a decimal the encoder reads, so every decimal the decoder writes encodes again.
pub const MAX_UNSCALED_DIGITS: usize = 2_466;

/// The most JSON a body of `body_len` bytes may decode to.
pub fn datum_output_limit(body_len: usize) -> usize {
    body_len
        .saturating_mul(OUTPUT_FACTOR)
        .saturating_add(OUTPUT_ALLOWANCE)
}

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
        limit: out.len().saturating_add(datum_output_limit(body.len())),
        held: 0,
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

/// A cursor over one body, with the named types its schema may refer to; its reading
/// primitives are in `reader`.
struct Reader<'a, 'n> {
    bytes: &'a [u8],
    pos: usize,
    names: &'n Names,
    /// The most output `out.len() + held` may reach (`datum_output_limit`).
    limit: usize,
    /// Output written to buffers other than the `out` at hand (map entries not yet sorted).
    held: usize,
}

impl<'a, 'n> Reader<'a, 'n> {
    /// Appends the JSON of the next datum, a `schema`: one arm per schema kind, reading with
    /// the primitives of `reader` or a function of its own, writing with `json_values`.
    fn value(&mut self, schema: &Schema, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        // Every value writes at least 2 bytes, so this bounds the work too.
        if out.len() + self.held > self.limit {
            return Err(format!(
                "the datum's JSON exceeds {OUTPUT_FACTOR} times its {}-byte body plus {OUTPUT_ALLOWANCE} bytes (zero-width items?)",
                self.bytes.len()
            ));
        }
        match schema {
            Schema::Null => out.extend_from_slice(b"null"),
            Schema::Boolean => write!(out, "{}", self.boolean()?).unwrap(),
            Schema::Int => write!(out, "{}", self.int()?).unwrap(),
            Schema::Long => write!(out, "{}", self.long()?).unwrap(),
            Schema::Float => float(f64::from(self.single()?), out, true),
            Schema::Double => float(self.double()?, out, false),
            Schema::Bytes => string(&base64(self.bytes()?), out),
            Schema::String => string(self.string()?, out),
            Schema::Fixed(f) => string(&base64(self.take(f.size, "fixed")?), out),
            Schema::Enum(e) => string(self.symbol(e)?, out),
            Schema::Union(u) => {
                let branch = self.branch(u)?;
                self.value(branch, out, depth + 1)?;
            }
            Schema::Array(a) => self.array(&a.items, out, depth)?,
            Schema::Map(m) => self.map(&m.types, out, depth)?,
            Schema::Record(rec) => self.record(rec, out, depth)?,
            Schema::Ref { name } => {
                let target = self.lookup(name)?;
                self.value(target, out, depth + 1)?;
            }
            Schema::Decimal(d) => {
                if d.precision.max(d.scale) > MAX_DECIMAL_DIGITS {
                    return Err(format!(
                        "a decimal schema of precision {} and scale {}: over the limit of {MAX_DECIMAL_DIGITS} digits",
                        d.precision, d.scale
                    ));
                }
                decimal(unscaled_bounded(self.unscaled(&d.inner)?)?, d.scale, out);
            }
            Schema::BigDecimal => {
                let (unscaled, scale) = self.big_decimal()?;
                decimal(unscaled_bounded(unscaled)?, scale, out);
            }
            Schema::Uuid(UuidSchema::String) => string(self.string()?, out),
            Schema::Uuid(UuidSchema::Bytes) => uuid(self.bytes()?, out)?,
            Schema::Uuid(UuidSchema::Fixed(f)) => uuid(self.take(f.size, "uuid")?, out)?,
            Schema::Date => string(&self.date()?.format("%Y-%m-%d").to_string(), out),
            Schema::TimeMillis => time_of_day(i64::from(self.int()?) * 1_000_000, 3, out)?,
            Schema::TimeMicros => time_of_day(self.long()?.saturating_mul(1000), 6, out)?,
            Schema::TimestampMillis => timestamp(self.long()?, 1_000_000, 3, true, out)?,
            Schema::TimestampMicros => timestamp(self.long()?, 1000, 6, true, out)?,
            Schema::TimestampNanos => timestamp(self.long()?, 1, 9, true, out)?,
            Schema::LocalTimestampMillis => timestamp(self.long()?, 1_000_000, 3, false, out)?,
            Schema::LocalTimestampMicros => timestamp(self.long()?, 1000, 6, false, out)?,
            Schema::LocalTimestampNanos => timestamp(self.long()?, 1, 9, false, out)?,
            Schema::Duration(_) => self.duration(out)?,
        }
        Ok(())
    }

    /// The symbol an enum's index names.
    fn symbol<'s>(&mut self, e: &'s EnumSchema) -> Result<&'s str, String> {
        let i = self.long()?;
        usize::try_from(i)
            .ok()
            .and_then(|i| e.symbols.get(i))
            .map(String::as_str)
            .ok_or_else(|| format!("enum {} has no symbol #{i}", e.name))
    }

    /// The schema of the union branch whose index comes next.
    fn branch<'s>(&mut self, u: &'s UnionSchema) -> Result<&'s Schema, String> {
        let i = self.long()?;
        usize::try_from(i)
            .ok()
            .and_then(|i| u.variants().get(i))
            .ok_or_else(|| format!("union branch #{i} of a {}-branch union", u.variants().len()))
    }

    /// An array, block by block, as a JSON array.
    fn array(&mut self, items: &Schema, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
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
                self.value(items, out, depth + 1)?;
            }
        }
        out.push(b']');
        Ok(())
    }

    /// A record as a JSON object of its fields, in the schema's order.
    fn record(
        &mut self,
        rec: &RecordSchema,
        out: &mut Vec<u8>,
        depth: usize,
    ) -> Result<(), String> {
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
        Ok(())
    }

    /// A decimal's unscaled two's complement bytes: length-prefixed, or the fixed type's size.
    fn unscaled(&mut self, inner: &InnerDecimalSchema) -> Result<&'a [u8], String> {
        match inner {
            InnerDecimalSchema::Bytes => self.bytes(),
            InnerDecimalSchema::Fixed(f) => self.take(f.size, "fixed decimal"),
        }
    }

    /// Avro's big-decimal: bytes holding (unscaled bytes, scale as an int).
    fn big_decimal(&mut self) -> Result<(&'a [u8], usize), String> {
        let inner = self.bytes()?;
        let mut sub = Reader {
            bytes: inner,
            pos: 0,
            names: self.names,
            limit: 0,
            held: 0,
        };
        let unscaled = sub.bytes()?;
        let scale = sub.long()?;
        match usize::try_from(scale) {
            Ok(scale) if scale <= MAX_DECIMAL_DIGITS => Ok((unscaled, scale)),
            _ => Err(format!(
                "a big-decimal of scale {scale}: not within 0..={MAX_DECIMAL_DIGITS}"
            )),
        }
    }

    /// A date: an int of days since 1970-01-01.
    fn date(&mut self) -> Result<chrono::NaiveDate, String> {
        let days = self.int()?;
        chrono::NaiveDate::from_ymd_opt(1970, 1, 1)
            .unwrap()
            .checked_add_signed(chrono::TimeDelta::days(i64::from(days)))
            .ok_or_else(|| format!("date out of range: {days} days"))
    }

    /// A duration (12 bytes: months, days, milliseconds as little-endian u32s) as a JSON object.
    fn duration(&mut self, out: &mut Vec<u8>) -> Result<(), String> {
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
        Ok(())
    }

    fn map(&mut self, values: &Schema, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
        let mut entries: Vec<(&str, Vec<u8>)> = Vec::new();
        let held = self.held;
        self.held += out.len();
        loop {
            let n = self.block()?;
            if n == 0 {
                break;
            }
            for _ in 0..n {
                let k = self.string()?;
                let mut v = Vec::new();
                self.value(values, &mut v, depth + 1)?;
                self.held += k.len() + v.len() + 4;
                entries.push((k, v));
            }
        }
        self.held = held;
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

/// A decimal's unscaled bytes, if within `MAX_DECIMAL_BYTES`.
fn unscaled_bounded(raw: &[u8]) -> Result<&[u8], String> {
    if raw.len() > MAX_DECIMAL_BYTES {
        return Err(format!(
            "a decimal of {} bytes: over the limit of {MAX_DECIMAL_BYTES} bytes",
            raw.len()
        ));
    }
    Ok(raw)
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "json_bounds_tests.rs"]
mod bounds_tests;
