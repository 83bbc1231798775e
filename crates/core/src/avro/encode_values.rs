//! JSON values → the numbers and bytes of Avro's logical types (`encode`): floats from numbers
//! or the NaN/infinity strings, base64 bytes, exact decimals' unscaled digits, times of day and
//! timestamps from their text or from epoch numbers.

use serde_json::Value;

use super::json::MAX_UNSCALED_DIGITS;

pub(super) fn mismatch(what: &str, v: &Value) -> String {
    format!("expected {what}, found {}", abbreviated(&v.to_string()))
}

pub(super) fn float(v: &Value) -> Result<f64, String> {
    match v {
        Value::String(s) if s == "NaN" => Ok(f64::NAN),
        Value::String(s) if s == "Infinity" => Ok(f64::INFINITY),
        Value::String(s) if s == "-Infinity" => Ok(f64::NEG_INFINITY),
        _ => v.as_f64().ok_or_else(|| mismatch("a number", v)),
    }
}

pub(super) fn base64_of(v: &Value) -> Result<Vec<u8>, String> {
    let s = v.as_str().ok_or_else(|| mismatch("a base64 string", v))?;
    base64_decode(s).ok_or_else(|| format!("{s:?} is not base64"))
}

/// Standard base64, padding optional.
pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        };
        acc = acc << 6 | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The unscaled integer of a decimal (JSON number or string) at `scale`, as decimal digits with
/// a sign: exact (no float; an exponent is applied to the digits), refusing digits beyond the
/// scale and values of more than `MAX_UNSCALED_DIGITS` digits.
pub(super) fn unscaled(v: &Value, scale: usize) -> Result<(bool, Vec<u8>), String> {
    let text = match v {
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        _ => return Err(mismatch("a decimal", v)),
    };
    let plain = || format!("{} is not a plain decimal number", abbreviated(&text));
    let (negative, body) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.as_str()),
    };
    let (mantissa, exponent) = match body.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().map_err(|_| plain())?),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty()
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return Err(plain());
    }
    // The value is digits × 10^(exponent - fraction digits); leading and trailing zeros do not
    // count, so `0.000…1e1000` and `1e-1000` stay small.
    let digits = int.bytes().chain(frac.bytes()).map(|b| b - b'0');
    let mut digits: Vec<u8> = digits.skip_while(|&d| d == 0).collect();
    let mut power = exponent.saturating_sub(frac.len() as i64);
    while digits.last() == Some(&0) {
        digits.pop();
        power = power.saturating_add(1);
    }
    if digits.is_empty() {
        return Ok((negative, vec![0]));
    }
    // Digits at `scale`: the point moves by `scale + power`.
    let shift = power.saturating_add(scale as i64);
    if shift < 0 {
        return Err(format!(
            "{} has more than {scale} fraction digits",
            abbreviated(&text)
        ));
    }
    let width = (digits.len() as i64).saturating_add(shift);
    if width > MAX_UNSCALED_DIGITS as i64 {
        return Err(format!(
            "{} has more than {MAX_UNSCALED_DIGITS} digits at scale {scale}",
            abbreviated(&text)
        ));
    }
    digits.extend(std::iter::repeat_n(0, shift as usize));
    Ok((negative, digits))
}

/// At most 80 characters of a value's text, for error messages.
pub(super) fn abbreviated(text: &str) -> String {
    match text.char_indices().nth(80) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_string(),
    }
}

/// Minimal big-endian two's complement bytes of a signed decimal-digit integer.
pub(super) fn minimal((negative, digits): &(bool, Vec<u8>)) -> Vec<u8> {
    // Base-256 magnitude by multiply-and-add.
    let mut mag: Vec<u8> = vec![0];
    for d in digits {
        let mut carry = u32::from(*d);
        for b in mag.iter_mut().rev() {
            let cur = u32::from(*b) * 10 + carry;
            *b = cur as u8;
            carry = cur >> 8;
        }
        while carry > 0 {
            mag.insert(0, carry as u8);
            carry >>= 8;
        }
    }
    // Room for the sign bit.
    if mag[0] & 0x80 != 0 {
        mag.insert(0, 0);
    }
    if *negative {
        for b in mag.iter_mut() {
            *b = !*b;
        }
        for b in mag.iter_mut().rev() {
            let (v, carry) = b.overflowing_add(1);
            *b = v;
            if !carry {
                break;
            }
        }
    }
    while mag.len() > 1
        && ((mag[0] == 0 && mag[1] & 0x80 == 0) || (mag[0] == 0xff && mag[1] & 0x80 != 0))
    {
        mag.remove(0);
    }
    mag
}

/// Nanoseconds since midnight of `HH:MM:SS[.f…]` (or a number of milliseconds).
pub(super) fn time_of_day(v: &Value) -> Result<i64, String> {
    match v {
        Value::String(s) => {
            let t = chrono::NaiveTime::parse_from_str(s, "%H:%M:%S%.f")
                .map_err(|_| format!("{s:?} is not a time of day (HH:MM:SS.fff)"))?;
            let since = t.signed_duration_since(chrono::NaiveTime::MIN);
            since
                .num_nanoseconds()
                .ok_or_else(|| format!("{s:?} out of range"))
        }
        _ => v
            .as_i64()
            .map(|ms| ms * 1_000_000)
            .ok_or_else(|| mismatch("a time of day", v)),
    }
}

/// Units of `unit_nanos` since the epoch of an RFC 3339 / `YYYY-MM-DD HH:MM:SS` text (no zone:
/// UTC), of any year chrono reads, or of an integer taken as already in those units.
pub(super) fn timestamp(v: &Value, unit_nanos: i64) -> Result<i64, String> {
    match v {
        Value::String(s) => {
            let (secs, nanos) =
                parse_timestamp(s).ok_or_else(|| format!("{s:?} is not an RFC 3339 timestamp"))?;
            // Floor division, as the seconds are floored and the nanoseconds non-negative.
            let (per_sec, sub) = (1_000_000_000 / unit_nanos, i64::from(nanos) / unit_nanos);
            let units = if secs < 0 && sub > 0 {
                // The same sum from the next second down: the lowest timestamp of the type
                // (i64::MIN ns is −9,223,372,037 s + 145,224,192 ns) overflows secs × per_sec.
                (secs + 1)
                    .checked_mul(per_sec)
                    .and_then(|units| units.checked_sub(per_sec - sub))
            } else {
                secs.checked_mul(per_sec)
                    .and_then(|units| units.checked_add(sub))
            };
            units.ok_or_else(|| format!("{s:?} is out of the range of this timestamp type"))
        }
        _ => v.as_i64().ok_or_else(|| mismatch("a timestamp", v)),
    }
}

/// Seconds since the epoch and the nanoseconds past them of a timestamp text (no zone: UTC, as
/// `format::parse_time`).
fn parse_timestamp(s: &str) -> Option<(i64, u32)> {
    let utc = chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.to_utc())
        .ok()
        .or_else(|| {
            ["%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M:%S%.f"]
                .iter()
                .find_map(|f| chrono::NaiveDateTime::parse_from_str(s, f).ok())
                .map(|t| t.and_utc())
        })?;
    Some((utc.timestamp(), utc.timestamp_subsec_nanos()))
}
