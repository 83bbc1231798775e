//! Walking JSON text already validated (by `scan`, or written by sidejoin itself): finding a
//! value's end, the top-level members of an object, and copying a value without whitespace.

use smallvec::SmallVec;

use super::Member;

/// The end of the valid JSON value starting at `at` in `b` (no whitespace inside when `b` is
/// compact; whitespace is skipped otherwise).
pub fn skip_value(b: &[u8], at: usize) -> usize {
    match b.get(at) {
        Some(b'"') => skip_string(b, at),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut i = at;
            while i < b.len() {
                match b[i] {
                    b'"' => {
                        i = skip_string(b, i);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            b.len()
        }
        _ => {
            let mut i = at;
            while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t')
            {
                i += 1;
            }
            i
        }
    }
}

/// The members of the valid JSON object text `b` (already checked by `scan`, possibly with
/// whitespace), and whether it is compact in the sense of `Scanned::compact`.
pub fn members(b: &[u8]) -> (SmallVec<[Member; 16]>, bool) {
    let mut out = SmallVec::new();
    let mut compact = true;
    let ws = |i: &mut usize, compact: &mut bool| {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(*i) {
            *i += 1;
            *compact = false;
        }
    };
    let mut i = 0;
    ws(&mut i, &mut compact);
    i += 1; // `{`
    loop {
        ws(&mut i, &mut compact);
        if b.get(i) != Some(&b'"') {
            break;
        }
        let name_end = skip_string(b, i);
        let name = (i + 1, name_end - 1);
        let name_escaped = b[name.0..name.1].contains(&b'\\');
        compact &= !name_escaped;
        i = name_end;
        ws(&mut i, &mut compact);
        i += 1; // `:`
        ws(&mut i, &mut compact);
        let end = skip_value(b, i);
        if matches!(b[i], b'[' | b'{') && has_whitespace(&b[i..end]) {
            compact = false;
        }
        out.push(Member {
            name,
            name_escaped,
            value: (i, end),
        });
        i = end;
        ws(&mut i, &mut compact);
        if b.get(i) == Some(&b',') {
            i += 1;
        }
    }
    (out, compact)
}

/// Whether valid JSON text has whitespace between tokens.
fn has_whitespace(b: &[u8]) -> bool {
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'"' => i = skip_string(b, i),
            b' ' | b'\n' | b'\r' | b'\t' => return true,
            _ => i += 1,
        }
    }
    false
}

/// The end of the valid string whose opening quote is at `at`.
pub fn skip_string(b: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    b.len()
}

/// Copies the valid JSON `value` to `out` without whitespace between tokens.
pub fn compact_into(value: &[u8], out: &mut Vec<u8>) {
    let mut i = 0;
    while i < value.len() {
        match value[i] {
            b' ' | b'\n' | b'\r' | b'\t' => i += 1,
            b'"' => {
                let end = skip_string(value, i);
                out.extend_from_slice(&value[i..end]);
                i = end;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
}
