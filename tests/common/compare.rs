//! Output comparison as SPEC §10 defines "the same output".

use std::collections::BTreeMap;

use serde_json::Value;

/// Drops null-valued top-level columns: a missing column equals `null`.
fn normalize_row(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// One output line made comparable: rows (and envelope rows) normalised, `cause` removed.
fn normalize_line(v: &Value) -> (u64, String) {
    let Value::Object(m) = v else {
        return (u64::MAX, v.to_string());
    };
    let cause = m.get("cause").and_then(Value::as_u64).unwrap_or(u64::MAX);
    let mut out = serde_json::Map::new();
    for (k, v) in m {
        match k.as_str() {
            "cause" => {}
            "row" => {
                out.insert(k.clone(), normalize_row(v));
            }
            "value" => {
                let nv = match v {
                    Value::Object(env)
                        if env.contains_key("op")
                            && (env.contains_key("before") || env.contains_key("after")) =>
                    {
                        let mut e = env.clone();
                        for f in ["before", "after"] {
                            if let Some(r) = env.get(f) {
                                e.insert(f.into(), normalize_row(r));
                            }
                        }
                        Value::Object(e)
                    }
                    other => normalize_row(other),
                };
                out.insert(k.clone(), nv);
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    // serde_json with preserve_order keeps insertion order; sort keys for a canonical string.
    (cause, canonical(&Value::Object(out)))
}

/// JSON text with object keys sorted, recursively.
pub(crate) fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, String> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            let parts: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::String((*k).clone())))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// Parses JSONL text into values; blank lines are skipped.
pub(crate) fn parse_lines(text: &str) -> Result<Vec<Value>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).map_err(|e| format!("bad JSON line {l:?}: {e}")))
        .collect()
}

/// Groups lines into runs of equal `cause`, each a sorted multiset.
fn grouped(lines: &[Value]) -> Vec<(u64, Vec<String>)> {
    let mut groups: Vec<(u64, Vec<String>)> = Vec::new();
    for l in lines {
        let (cause, text) = normalize_line(l);
        match groups.last_mut() {
            Some((c, items)) if *c == cause => items.push(text),
            _ => groups.push((cause, vec![text])),
        }
    }
    for (_, items) in &mut groups {
        items.sort();
    }
    groups
}

/// `Ok` when `actual` is the same output as `expected` (SPEC §10).
pub(crate) fn same_output(expected: &str, actual: &str) -> Result<(), String> {
    let e = grouped(&parse_lines(expected)?);
    let a = grouped(&parse_lines(actual)?);
    if e == a {
        return Ok(());
    }
    let show = |g: &[(u64, Vec<String>)]| {
        g.iter()
            .flat_map(|(c, items)| items.iter().map(move |i| format!("  cause {c}: {i}")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Err(format!("expected:\n{}\nactual:\n{}", show(&e), show(&a)))
}

/// `Ok` when the lines are the same in the same order (rows compared as in `same_output`).
pub(crate) fn same_order(expected: &str, actual: &str) -> Result<(), String> {
    let norm = |text: &str| -> Result<Vec<(u64, String)>, String> {
        Ok(parse_lines(text)?.iter().map(normalize_line).collect())
    };
    let (e, a) = (norm(expected)?, norm(actual)?);
    if e == a {
        Ok(())
    } else {
        Err(format!("order differs:\nexpected {e:#?}\nactual {a:#?}"))
    }
}

/// Whether `expected` is contained in `actual`: objects by their listed members, strings as
/// substrings, anything else by equality.
pub(crate) fn subset(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e
            .iter()
            .all(|(k, v)| a.get(k).is_some_and(|w| subset(v, w))),
        (Value::String(e), Value::String(a)) => a.contains(e.as_str()),
        (e, a) => e == a,
    }
}
