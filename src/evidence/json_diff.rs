//! Where two JSON values differ, member by member: the path of each difference and both
//! sides. A recorded string holding redaction placeholders (`[REDACTED:<rule>:<n>:<hmac8>]`,
//! `docs/security.md`) matches any string that equals it outside the placeholders and has
//! exactly `n` bytes in place of each.

use std::fmt;
use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::redact::matcher::PLACEHOLDER_PATTERN;

/// One difference between a recorded value and a new one.
#[derive(Debug, Clone, PartialEq)]
pub struct Difference {
    /// Where, as a JSON Pointer (`/params/arguments/path`; `` for the whole value).
    pub path: String,
    /// The recorded value there (`None`: the recording has no such member).
    pub recorded: Option<Value>,
    /// The new value there (`None`: the new message has no such member).
    pub now: Option<Value>,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        match (&self.recorded, &self.now) {
            (Some(r), Some(n)) => write!(f, "{path}: recorded {}, now {}", short(r), short(n)),
            (Some(r), None) => write!(f, "{path}: recorded {}, now absent", short(r)),
            (None, Some(n)) => write!(f, "{path}: not recorded, now {}", short(n)),
            (None, None) => write!(f, "{path}"),
        }
    }
}

/// A value's compact JSON, cut to 80 characters.
fn short(v: &Value) -> String {
    let text = v.to_string();
    match text.char_indices().nth(80) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The differences between `recorded` and `now`, at most `limit` of them, in the recorded
/// value's member order (members only `now` has come after).
pub fn differences(recorded: &Value, now: &Value, limit: usize) -> Vec<Difference> {
    let mut out = Vec::new();
    walk(recorded, now, &mut String::new(), &mut out, limit);
    out
}

/// Whether `now` matches `recorded` (no differences).
pub fn matches(recorded: &Value, now: &Value) -> bool {
    differences(recorded, now, 1).is_empty()
}

/// `value` with every object's keys sorted, at every depth (a canonical form for hashing
/// and lookup: member order carries no meaning in JSON).
pub fn sorted(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            Value::Object(
                entries
                    .into_iter()
                    .map(|(k, v)| (k.clone(), sorted(v)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

/// Whether the value holds a redaction placeholder anywhere.
pub fn has_placeholder(value: &Value) -> bool {
    match value {
        Value::String(s) => s.contains("[REDACTED:"),
        Value::Array(items) => items.iter().any(has_placeholder),
        Value::Object(map) => map.values().any(has_placeholder),
        _ => false,
    }
}

fn walk(recorded: &Value, now: &Value, path: &mut String, out: &mut Vec<Difference>, limit: usize) {
    if out.len() >= limit {
        return;
    }
    match (recorded, now) {
        (Value::Object(a), Value::Object(b)) => {
            for (key, av) in a {
                let len = path.len();
                push_segment(path, key);
                match b.get(key) {
                    Some(bv) => walk(av, bv, path, out, limit),
                    None => push(out, path, Some(av), None, limit),
                }
                path.truncate(len);
            }
            for (key, bv) in b.iter().filter(|(k, _)| !a.contains_key(*k)) {
                let len = path.len();
                push_segment(path, key);
                push(out, path, None, Some(bv), limit);
                path.truncate(len);
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for i in 0..a.len().max(b.len()) {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                match (a.get(i), b.get(i)) {
                    (Some(av), Some(bv)) => walk(av, bv, path, out, limit),
                    (av, bv) => push(out, path, av, bv, limit),
                }
                path.truncate(len);
            }
        }
        (Value::String(a), Value::String(b)) if a.contains("[REDACTED:") => {
            if !matches_redacted(a, b) {
                push(out, path, Some(recorded), Some(now), limit);
            }
        }
        _ if recorded == now => {}
        _ => push(out, path, Some(recorded), Some(now), limit),
    }
}

fn push_segment(path: &mut String, key: &str) {
    path.push('/');
    path.push_str(&key.replace('~', "~0").replace('/', "~1"));
}

fn push(out: &mut Vec<Difference>, path: &str, r: Option<&Value>, n: Option<&Value>, limit: usize) {
    if out.len() < limit {
        out.push(Difference {
            path: path.to_owned(),
            recorded: r.cloned(),
            now: n.cloned(),
        });
    }
}

/// Whether `now` could be `recorded` before redaction: equal outside the placeholders, and
/// exactly `n` bytes in place of each `[REDACTED:<rule>:<n>:<hmac8>]`.
fn matches_redacted(recorded: &str, now: &str) -> bool {
    static PLACEHOLDER: OnceLock<Regex> = OnceLock::new();
    let placeholder = PLACEHOLDER.get_or_init(|| Regex::new(PLACEHOLDER_PATTERN).expect("pattern"));
    let mut rest = now;
    let mut at = 0;
    for m in placeholder.find_iter(recorded) {
        let Some(after) = rest.strip_prefix(&recorded[at..m.start()]) else {
            return false;
        };
        let length: usize = m
            .as_str()
            .split(':')
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        match after.get(length..) {
            Some(tail) => rest = tail,
            None => return false,
        }
        at = m.end();
    }
    rest == &recorded[at..]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn paths_and_both_sides_are_named() {
        let a = json!({"name": "echo", "arguments": {"message": "hi", "n": [1, 2]}});
        let b = json!({"name": "echo", "arguments": {"message": "ho", "n": [1], "x/y": true}});
        let d: Vec<String> = differences(&a, &b, 10)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            d,
            [
                "/arguments/message: recorded \"hi\", now \"ho\"",
                "/arguments/n/1: recorded 2, now absent",
                "/arguments/x~1y: not recorded, now true"
            ]
        );
        assert_eq!(differences(&a, &b, 1).len(), 1);
        assert!(matches(&a, &a.clone()));
    }

    #[test]
    fn member_order_does_not_matter() {
        let a: Value = serde_json::from_str(r#"{"a":1,"b":2}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"b":2,"a":1}"#).unwrap();
        assert!(matches(&a, &b));
    }

    #[test]
    fn a_placeholder_matches_a_secret_of_its_length_only() {
        let recorded = json!({"key": "Bearer [REDACTED:bearer:12:0a1b2c3d] end"});
        assert!(has_placeholder(&recorded));
        assert!(matches(
            &recorded,
            &json!({"key": "Bearer abcdefghijkl end"})
        ));
        assert!(!matches(
            &recorded,
            &json!({"key": "Bearer abcdefghijklmnop end"})
        ));
        assert!(!matches(
            &recorded,
            &json!({"key": "Basic abcdefghijkl end"})
        ));
    }
}
