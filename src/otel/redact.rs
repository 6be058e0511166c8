//! Tool arguments and results for spans, only when opted in: the JSON with the value of
//! every member whose name says it holds a secret replaced by `"[REDACTED]"`.
//!
//! This only catches secrets under telling names (`password`, `api_key`, `token`, …); a
//! secret inside a file's text or a free-form result passes. Keep content capture off
//! (the default) where that matters; see docs/otel.md.

use serde_json::Value;

/// What replaces a secret value.
pub const REDACTED: &str = "[REDACTED]";

/// Parts of a member name (lowercase, `-` and `_` removed) that mark its value as secret.
const SECRET_NAMES: [&str; 9] = [
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "privatekey",
];

/// Whether a member named `name` holds a secret.
fn is_secret(name: &str) -> bool {
    let folded: String = name
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_NAMES.iter().any(|s| folded.contains(s))
}

/// `value` with secret-named members masked at any depth.
pub fn redacted(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret(k) {
                        Value::String(REDACTED.into())
                    } else {
                        redacted(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redacted).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_named_members_are_masked_at_any_depth() {
        let value: Value = serde_json::from_str(
            r#"{"path":"/a","headers":{"Authorization":"Bearer x","X-Api-Key":"k"},"items":[{"access_token":"t","n":1}],"tokens":3}"#,
        )
        .unwrap();
        assert_eq!(
            redacted(&value).to_string(),
            r#"{"path":"/a","headers":{"Authorization":"[REDACTED]","X-Api-Key":"[REDACTED]"},"items":[{"access_token":"[REDACTED]","n":1}],"tokens":"[REDACTED]"}"#
        );
    }
}
