//! The JSON text of Avro's scalar and logical values (README "Avro" in `json`): strings, floats
//! (NaN and infinities as strings), base64 bytes, exact decimals, UUIDs, times and timestamps.

use std::io::Write;

use chrono::Datelike;

pub(super) fn string(s: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, s).expect("writing to a Vec cannot fail");
}

pub(super) fn float(v: f64, out: &mut Vec<u8>, single: bool) {
    if v.is_nan() {
        out.extend_from_slice(b"\"NaN\"");
    } else if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        });
    } else if single {
        // The shortest text that reads back as the same f32 (not the f64 widening's digits).
        serde_json::to_writer(&mut *out, &(v as f32)).expect("a finite float");
    } else {
        // As JSON writers write doubles: `5.0`, `1e20`.
        serde_json::to_writer(&mut *out, &v).expect("a finite float");
    }
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

/// A two's-complement big-endian unscaled value with `scale` as exact decimal text.
pub(super) fn decimal(raw: &[u8], scale: usize, out: &mut Vec<u8>) {
    let negative = raw.first().is_some_and(|b| b & 0x80 != 0);
    // Magnitude, big-endian.
    let mag: Vec<u8> = if negative {
        let mut m: Vec<u8> = raw.iter().map(|b| !b).collect();
        for b in m.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
        m
    } else {
        raw.to_vec()
    };
    // Decimal digits, least significant first: the magnitude as 32-bit limbs (most significant
    // first) divided by 10^9 until nothing is left, 9 digits per division (`MAX_DECIMAL_BYTES`
    // keeps the quadratic cost in microseconds).
    let pad = (4 - mag.len() % 4) % 4;
    let padded: Vec<u8> = std::iter::repeat_n(0, pad).chain(mag).collect();
    let mut limbs: Vec<u32> = padded
        .chunks(4)
        .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")))
        .collect();
    let mut digits = Vec::new();
    let mut first = limbs.iter().position(|&l| l != 0).unwrap_or(limbs.len());
    while first < limbs.len() {
        let mut rem = 0u64;
        for l in &mut limbs[first..] {
            let cur = rem << 32 | u64::from(*l);
            *l = (cur / 1_000_000_000) as u32;
            rem = cur % 1_000_000_000;
        }
        for _ in 0..9 {
            digits.push(b'0' + (rem % 10) as u8);
            rem /= 10;
        }
        while first < limbs.len() && limbs[first] == 0 {
            first += 1;
        }
    }
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    while digits.len() <= scale {
        digits.push(b'0');
    }
    digits.reverse();
    if negative && digits.iter().any(|&d| d != b'0') {
        out.push(b'-');
    }
    let point = digits.len() - scale;
    out.extend_from_slice(&digits[..point]);
    if scale > 0 {
        out.push(b'.');
        out.extend_from_slice(&digits[point..]);
    }
}

pub(super) fn uuid(b: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    if b.len() != 16 {
        return Err(format!("a uuid of {} bytes (not 16)", b.len()));
    }
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let s = format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    );
    string(&s, out);
    Ok(())
}

/// `HH:MM:SS.fff…` of a time of day in nanoseconds, `digits` fraction digits.
pub(super) fn time_of_day(nanos: i64, digits: usize, out: &mut Vec<u8>) -> Result<(), String> {
    if !(0..86_400_000_000_000).contains(&nanos) {
        return Err(format!("a time of day out of range ({nanos} ns)"));
    }
    let secs = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    let frac = frac / 10i64.pow(9 - digits as u32);
    write!(
        out,
        "\"{:02}:{:02}:{:02}.{:0w$}\"",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        frac,
        w = digits
    )
    .unwrap();
    Ok(())
}

/// RFC 3339 text of `value` units of `unit_nanos` since the epoch, `digits` fraction digits; a
/// timestamp outside the years 0000–9999 (which RFC 3339 cannot write) is its number of units,
/// as Avro holds it (the encoder reads it back as such).
pub(super) fn timestamp(
    value: i64,
    unit_nanos: i64,
    digits: usize,
    utc: bool,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let per_sec = 1_000_000_000 / unit_nanos;
    let secs = value.div_euclid(per_sec);
    let sub = value.rem_euclid(per_sec);
    let Some(t) = chrono::DateTime::from_timestamp(secs, (sub * unit_nanos) as u32)
        .filter(|t| (0..=9999).contains(&t.year()))
    else {
        write!(out, "{value}").expect("writing to a Vec cannot fail");
        return Ok(());
    };
    let frac = sub * unit_nanos / 10i64.pow(9 - digits as u32);
    write!(
        out,
        "\"{}.{:0w$}{}\"",
        t.format("%Y-%m-%dT%H:%M:%S"),
        frac,
        if utc { "Z" } else { "" },
        w = digits
    )
    .expect("writing to a Vec cannot fail");
    Ok(())
}
