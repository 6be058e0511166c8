//! A client message about to be POSTed: what its HTTP headers and its answer depend on,
//! read from its text.

use base64::Engine;

use crate::framelog::classify::{classify, Shape};
use crate::framelog::FrameKind;

/// One client message (a single JSON-RPC message or a batch), as the transport sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing<'a> {
    /// Its text, without a line ending.
    pub text: &'a [u8],
    /// Its method (a request's or notification's; `None` for responses and batches).
    pub method: Option<String>,
    /// The value the `Mcp-Name` header mirrors: `params.name` of `tools/call` and
    /// `prompts/get`, `params.uri` of `resources/read`.
    pub name: Option<String>,
    /// The protocol revision its `params._meta` names (the stateless revision carries it
    /// on every request), or for `initialize` the revision it asks for.
    pub protocol: Option<String>,
    /// The ids (their JSON text) of the requests in it, which the server must answer.
    pub requests: Vec<String>,
    /// For a `notifications/cancelled`: the id (JSON text) of the request it cancels.
    pub cancels: Option<String>,
}

impl<'a> Outgoing<'a> {
    /// Reads `text` (one line of the client's, without its line ending).
    pub fn new(text: &'a [u8]) -> Self {
        let mut out = Outgoing {
            text,
            method: None,
            name: None,
            protocol: None,
            requests: Vec::new(),
            cancels: None,
        };
        let Ok(str) = std::str::from_utf8(text) else {
            return out;
        };
        match classify(str) {
            Shape::Unparseable => {}
            Shape::Batch(items) => {
                out.requests = items
                    .into_iter()
                    .filter(|m| m.kind == FrameKind::Request)
                    .filter_map(|m| m.id)
                    .collect();
            }
            Shape::Single(message) => {
                if message.kind == FrameKind::Request {
                    out.requests.extend(message.id);
                }
                out.protocol = message.request_protocol;
                out.name = message.tool;
                let needs_params = matches!(
                    message.method.as_deref(),
                    Some("prompts/get" | "resources/read" | "notifications/cancelled")
                );
                if needs_params {
                    let params = serde_json::from_str::<serde_json::Value>(str)
                        .ok()
                        .and_then(|mut v| v.get_mut("params").map(serde_json::Value::take));
                    if let Some(params) = params {
                        match message.method.as_deref() {
                            Some("notifications/cancelled") => {
                                out.cancels = params.get("requestId").map(|id| id.to_string());
                            }
                            Some("resources/read") => out.name = string(&params, "uri"),
                            _ => out.name = string(&params, "name"),
                        }
                    }
                }
                out.method = message.method;
            }
        }
        out
    }

    /// Whether it is an `initialize` request (which starts a new session).
    pub fn is_initialize(&self) -> bool {
        self.method.as_deref() == Some("initialize") && !self.requests.is_empty()
    }

    /// How long its answer may stay silent: `timeout`, except for a `subscriptions/listen`
    /// stream, which stays open, silent, as long as the client listens.
    pub(crate) fn idle(&self, timeout: std::time::Duration) -> Option<std::time::Duration> {
        (self.method.as_deref() != Some("subscriptions/listen")).then_some(timeout)
    }
}

fn string(params: &serde_json::Value, key: &str) -> Option<String> {
    params.get(key).and_then(|v| v.as_str()).map(str::to_string)
}

/// A header value that survives HTTP as it is (printable ASCII without edge whitespace),
/// else its UTF-8 bytes in the `=?base64?…?=` form the MCP revision of 2026-07-28 gives
/// for `Mcp-Name`.
pub(crate) fn header_value(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim() == value
        && !(value.starts_with("=?base64?") && value.ends_with("?="));
    if plain {
        value.to_string()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value.as_bytes());
        format!("=?base64?{encoded}?=")
    }
}

/// Whether two JSON ids (their texts) are the same id: the same text, or the same JSON
/// value written differently (`"\u0061"` and `"a"`).
pub(crate) fn same_id(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (
                serde_json::from_str::<serde_json::Value>(a),
                serde_json::from_str::<serde_json::Value>(b),
            ),
            (Ok(x), Ok(y)) if x == y
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_notifications_and_batches_are_told_apart() {
        let call = Outgoing::new(
            br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}"#,
        );
        assert_eq!(call.requests, ["3"]);
        assert_eq!(call.method.as_deref(), Some("tools/call"));
        assert_eq!(call.name.as_deref(), Some("echo"));
        assert_eq!(call.protocol.as_deref(), Some("2026-07-28"));
        let read = Outgoing::new(
            br#"{"jsonrpc":"2.0","id":"r","method":"resources/read","params":{"uri":"file:///a b"}}"#,
        );
        assert_eq!(read.name.as_deref(), Some("file:///a b"));
        let cancel = Outgoing::new(
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x-1"}}"#,
        );
        assert!(cancel.requests.is_empty());
        assert_eq!(cancel.cancels.as_deref(), Some("\"x-1\""));
        let batch = Outgoing::new(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"n"},{"jsonrpc":"2.0","id":9,"result":{}}]"#,
        );
        assert_eq!(batch.requests, ["1"]);
        assert_eq!(batch.method, None);
        let init = Outgoing::new(
            br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        );
        assert!(init.is_initialize());
        assert_eq!(init.protocol.as_deref(), Some("2025-06-18"));
        assert_eq!(Outgoing::new(b"not json").requests, Vec::<String>::new());
    }

    #[test]
    fn header_values_outside_printable_ascii_are_base64_wrapped() {
        assert_eq!(header_value("get_weather"), "get_weather");
        assert_eq!(header_value("café"), "=?base64?Y2Fmw6k=?=");
        assert_eq!(header_value(" x"), "=?base64?IHg=?=");
        assert!(same_id("\"a\"", "\"\\u0061\"") && !same_id("1", "\"1\""));
    }
}
