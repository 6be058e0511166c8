//! Volatile fields: the parts of a message that differ from one run to the next without
//! changing what it asks or answers (ids, progress tokens, the peer's own version), left out
//! before two messages are compared.
//!
//! A field is named by a JSON Pointer (RFC 6901) into the message, where a segment `*`
//! stands for any member or element: `/params/_meta/progressToken`,
//! `/params/_meta/io.modelcontextprotocol~1clientInfo`, `/result/content/*/annotations`.
//! The JSON-RPC `id` is never compared and needs no entry.

use serde_json::Value;

use super::EvidenceError;

/// The fields left out of every comparison unless `--no-default-volatile` says otherwise
/// (documented in `docs/replay.md`).
pub const DEFAULT_VOLATILE: &[&str] = &[
    // Chosen per request by the client (MCP: any unique string or integer).
    "/params/_meta/progressToken",
    // The id of the request a cancellation names: an id, chosen by the client.
    "/params/requestId",
    // The client's identity: changes with every client release, not the request.
    "/params/clientInfo",
    "/params/_meta/io.modelcontextprotocol~1clientInfo",
];

/// A set of volatile fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Volatile {
    paths: Vec<Vec<String>>,
}

impl Volatile {
    /// The fields of [`DEFAULT_VOLATILE`].
    pub fn defaults() -> Volatile {
        Volatile::parse(DEFAULT_VOLATILE.iter().copied()).expect("the defaults are pointers")
    }

    /// Parses JSON Pointers (`/a/b`, `*` for any segment).
    pub fn parse<'a>(
        pointers: impl IntoIterator<Item = &'a str>,
    ) -> Result<Volatile, EvidenceError> {
        let mut out = Volatile::default();
        for pointer in pointers {
            out.add(pointer)?;
        }
        Ok(out)
    }

    /// Adds one JSON Pointer.
    pub fn add(&mut self, pointer: &str) -> Result<(), EvidenceError> {
        let Some(rest) = pointer.strip_prefix('/') else {
            return Err(EvidenceError::Usage(format!(
                "volatile field `{pointer}`: a JSON Pointer starts with `/` (e.g. /params/_meta/progressToken)"
            )));
        };
        self.paths.push(
            rest.split('/')
                .map(|s| s.replace("~1", "/").replace("~0", "~"))
                .collect(),
        );
        Ok(())
    }

    /// The pointers, as given (unescaped segments joined by `/`).
    pub fn pointers(&self) -> impl Iterator<Item = String> + '_ {
        self.paths.iter().map(|p| {
            p.iter()
                .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
                .collect()
        })
    }

    /// `message` with every volatile field removed.
    pub fn mask(&self, message: &Value) -> Value {
        let mut out = message.clone();
        for path in &self.paths {
            remove(&mut out, path);
        }
        out
    }
}

fn remove(value: &mut Value, path: &[String]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    match value {
        Value::Object(map) => {
            if rest.is_empty() {
                if first == "*" {
                    map.clear();
                } else {
                    map.shift_remove(first);
                }
                return;
            }
            if first == "*" {
                map.values_mut().for_each(|v| remove(v, rest));
            } else if let Some(v) = map.get_mut(first) {
                remove(v, rest);
            }
        }
        Value::Array(items) => {
            if first == "*" {
                if rest.is_empty() {
                    items.clear();
                } else {
                    items.iter_mut().for_each(|v| remove(v, rest));
                }
            } else if let Some(v) = first.parse::<usize>().ok().and_then(|i| items.get_mut(i)) {
                if rest.is_empty() {
                    *v = Value::Null;
                } else {
                    remove(v, rest);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn defaults_drop_tokens_and_identity_but_nothing_else() {
        let request = json!({"method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "clientInfo": {"name": "c", "version": "9"}, "_meta": {"progressToken": 7, "x": 1}}});
        assert_eq!(
            Volatile::defaults().mask(&request),
            json!({"method": "initialize", "params": {"protocolVersion": "2025-11-25", "_meta": {"x": 1}}})
        );
    }

    #[test]
    fn wildcards_and_escapes() {
        let mut v = Volatile::parse(["/result/content/*/ts", "/a~1b"]).unwrap();
        v.add("/params/_meta/io.modelcontextprotocol~1clientInfo")
            .unwrap();
        let msg = json!({"a/b": 1, "result": {"content": [{"ts": 1, "t": "x"}, {"ts": 2}]},
            "params": {"_meta": {"io.modelcontextprotocol/clientInfo": {}}}});
        assert_eq!(
            v.mask(&msg),
            json!({"result": {"content": [{"t": "x"}, {}]}, "params": {"_meta": {}}})
        );
        assert_eq!(
            v.pointers().collect::<Vec<_>>(),
            [
                "/result/content/*/ts",
                "/a~1b",
                "/params/_meta/io.modelcontextprotocol~1clientInfo"
            ]
        );
        assert!(Volatile::parse(["params/x"]).is_err());
    }
}
