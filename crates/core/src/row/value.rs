//! One JSON value of a row, as its text: `Json` borrows the compact bytes sidejoin keeps and reads
//! them on demand — the kind from the first byte, numbers parsed only when compared, strings
//! unescaped only when they hold escapes. Arrays and objects are read through serde_json (they are
//! rare in keys, and slow paths are fine there).

use std::borrow::Cow;

use serde_json::Value;

use super::scan::JsonKind;

/// A valid, compact JSON value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Json<'a>(&'a [u8]);

/// A number reduced to one representation per numeric value (SPEC §1: `1` equals `1.0`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Numeric {
    Int(i64),
    Uint(u64),
    Float(f64),
}

impl Numeric {
    /// Integral floats inside the integer ranges become integers.
    pub fn from_f64(f: f64) -> Numeric {
        // 2^63 and 2^64 are exact in f64.
        const TWO_63: f64 = 9_223_372_036_854_775_808.0;
        const TWO_64: f64 = 18_446_744_073_709_551_616.0;
        if f.fract() == 0.0 && (-TWO_63..TWO_63).contains(&f) {
            Numeric::Int(f as i64)
        } else if f.fract() == 0.0 && (TWO_63..TWO_64).contains(&f) {
            Numeric::Uint(f as u64)
        } else {
            Numeric::Float(f)
        }
    }
}

pub const NULL: Json<'static> = Json(b"null");

impl<'a> Json<'a> {
    /// Wraps text known to be one valid, compact JSON value.
    pub fn new_unchecked(text: &'a [u8]) -> Self {
        Json(text)
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }

    pub fn kind(&self) -> JsonKind {
        JsonKind::of(self.0.first().copied().unwrap_or(b'n'))
    }

    pub fn is_null(&self) -> bool {
        self.0 == b"null"
    }

    /// The number this value holds, read as serde_json reads it: integer text as `i64` or `u64`
    /// when it fits, anything else as a double.
    pub fn numeric(&self) -> Option<Numeric> {
        if self.kind() != JsonKind::Number {
            return None;
        }
        if let Some(i) = small_integer(self.0) {
            return Some(Numeric::Int(i));
        }
        let text = std::str::from_utf8(self.0).ok()?;
        let integral = !self.0.iter().any(|c| matches!(c, b'.' | b'e' | b'E'));
        if integral {
            if let Ok(i) = text.parse::<i64>() {
                return Some(Numeric::Int(i));
            }
            if let Ok(u) = text.parse::<u64>() {
                return Some(Numeric::Uint(u));
            }
        }
        text.parse::<f64>().ok().map(Numeric::from_f64)
    }

    /// An integer value (`5`, `5.0`, `5e0`), as `i64`.
    pub fn as_i64(&self) -> Option<i64> {
        match self.numeric()? {
            Numeric::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self.numeric()? {
            Numeric::Int(i) => Some(i as f64),
            Numeric::Uint(u) => Some(u as f64),
            Numeric::Float(f) => Some(f),
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.0 {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// The text of a string value, unescaped (borrowed when it has no escapes).
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        if self.kind() != JsonKind::String || self.0.len() < 2 {
            return None;
        }
        let inner = &self.0[1..self.0.len() - 1];
        if !inner.contains(&b'\\') {
            return std::str::from_utf8(inner).ok().map(Cow::Borrowed);
        }
        serde_json::from_slice::<String>(self.0)
            .ok()
            .map(Cow::Owned)
    }

    /// The value as a serde_json tree (slow; arrays, objects and tests).
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(self.0).unwrap_or(Value::Null)
    }

    /// SPEC §1 equality: strings exactly, numbers numerically, arrays and objects structurally.
    pub fn equals(&self, other: &Json<'_>) -> bool {
        if self.0 == other.0 {
            return true;
        }
        match (self.kind(), other.kind()) {
            // JSON integers have one spelling per value (no leading zeros), but for `-0`.
            (JsonKind::Number, JsonKind::Number)
                if is_plain_integer(self.0) && is_plain_integer(other.0) =>
            {
                false
            }
            (JsonKind::Number, JsonKind::Number) => self.numeric() == other.numeric(),
            (JsonKind::String, JsonKind::String) => {
                // Equal bytes were handled above; only escapes can make different text equal.
                (self.0.contains(&b'\\') || other.0.contains(&b'\\'))
                    && self.as_str() == other.as_str()
            }
            (JsonKind::Array, JsonKind::Array) | (JsonKind::Object, JsonKind::Object) => {
                values_equal(&self.to_value(), &other.to_value())
            }
            _ => false,
        }
    }
}

impl std::fmt::Debug for Json<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.0))
    }
}

/// Integer text other than `-0`: no fraction, no exponent.
fn is_plain_integer(text: &[u8]) -> bool {
    text != b"-0" && !text.iter().any(|c| matches!(c, b'.' | b'e' | b'E'))
}

/// The value of valid integer text of up to 18 digits (which always fits an `i64`).
#[inline]
fn small_integer(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if negative { -v } else { v })
}

fn number_of(n: &serde_json::Number) -> Numeric {
    if let Some(i) = n.as_i64() {
        Numeric::Int(i)
    } else if let Some(u) = n.as_u64() {
        Numeric::Uint(u)
    } else {
        Numeric::from_f64(n.as_f64().unwrap_or(f64::NAN))
    }
}

/// SPEC §1 equality of two serde_json values (the slow path for arrays and objects).
pub fn values_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => number_of(x) == number_of(y),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| values_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| values_equal(v, w)))
        }
        _ => false,
    }
}

/// The numeric value of a serde_json number, as `Json::numeric` reads text.
pub fn numeric_of(n: &serde_json::Number) -> Numeric {
    number_of(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Json<'_> {
        Json::new_unchecked(s.as_bytes())
    }

    #[test]
    fn numbers_compare_numerically_and_keep_their_text() {
        assert!(j("1").equals(&j("1.0")));
        assert!(j("1.50").equals(&j("1.5")));
        assert!(j("-0.0").equals(&j("0")));
        assert!(j("1e19").equals(&j("10000000000000000000")));
        assert!(!j("1").equals(&j("1.5")));
        assert!(!j("1").equals(&j("\"1\"")));
        assert_eq!(j("1.50").as_bytes(), b"1.50");
        assert_eq!(j("5e0").as_i64(), Some(5));
        assert_eq!(
            j("18446744073709551615").numeric(),
            Some(Numeric::Uint(u64::MAX))
        );
    }

    #[test]
    fn strings_compare_unescaped() {
        assert!(j(r#""a""#).equals(&j(r#""\u0061""#)));
        assert!(!j(r#""a""#).equals(&j(r#""b""#)));
        assert_eq!(j(r#""x\ny""#).as_str().unwrap(), "x\ny");
        assert!(matches!(
            j(r#""xy""#).as_str().unwrap(),
            Cow::Borrowed("xy")
        ));
    }

    #[test]
    fn structures_compare_structurally() {
        assert!(j(r#"{"a":1,"b":[1,2]}"#).equals(&j(r#"{"b":[1.0,2],"a":1}"#)));
        assert!(!j("[1,2]").equals(&j("[2,1]")));
        assert!(j("null").is_null() && !j("0").is_null());
    }
}
