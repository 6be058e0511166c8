//! The MCP envelope, in one place: protocol revisions, the `io.modelcontextprotocol/*`
//! `_meta` keys, which era a request speaks, JSON-RPC error codes, and the response and
//! error frames the proxy and `ctxopt serve` originate.
//!
//! Nothing else in the crate spells these: the frame-log accounting, the reports, the audit
//! probe, the bridge and the relay all take them from here. It depends on nothing but
//! `serde_json`, so every layer can use it.

use serde_json::{json, Value};

/// The stateless revision: no `initialize`, a protocol version in every request's `_meta`,
/// `resultType` in every result.
pub const MODERN_VERSION: &str = "2026-07-28";

/// The `initialize`-era revisions served, newest first.
pub(crate) const LEGACY_VERSIONS: &[&str] =
    &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision a client of ours offers in `initialize`: the newest of the initialize era.
pub(crate) const INITIALIZE_VERSION: &str = LEGACY_VERSIONS[0];

/// The `_meta` key of a request's protocol version (2026-07-28).
pub(crate) const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key of the server's identity in results (2026-07-28).
pub(crate) const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// The `_meta` key of the client's identity in requests (2026-07-28).
pub(crate) const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";

/// The `_meta` key of the client's capabilities in requests (2026-07-28).
pub(crate) const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The `_meta` key naming the `subscriptions/listen` request a notification belongs to
/// (2026-07-28): that request's JSON-RPC id.
pub(crate) const SUBSCRIPTION_ID_KEY: &str = "io.modelcontextprotocol/subscriptionId";

/// The `_meta` key naming the task a `tasks/result` answer belongs to (the tasks
/// extension, `io.modelcontextprotocol/tasks`).
pub(crate) const RELATED_TASK_KEY: &str = "io.modelcontextprotocol/related-task";

/// The `resultType` of a result that needs more input before the request can complete
/// (2026-07-28): never final, never compacted.
pub(crate) const INPUT_REQUIRED: &str = "input_required";

/// Parse error.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// Invalid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;
/// Method not found.
pub(crate) const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params (also: unknown tool).
pub(crate) const INVALID_PARAMS: i64 = -32602;
/// The request's protocol version is not supported (2026-07-28).
pub(crate) const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The member `key` of a message part's `_meta` (`params` of a request, `result` of a
/// response).
pub(crate) fn meta<'a>(part: &'a Value, key: &str) -> Option<&'a Value> {
    part.get("_meta")?.get(key)
}

/// A peer's identity: `info_member` (`clientInfo` of `initialize` params, `serverInfo` of
/// its result) in the initialize era, else the stateless `_meta` key `meta_key`.
pub(crate) fn identity<'a>(
    part: &'a Value,
    info_member: &str,
    meta_key: &str,
) -> Option<&'a Value> {
    part.get(info_member).or_else(|| meta(part, meta_key))
}

/// The server's identity in an `initialize` or `server/discover` result, in either era.
pub(crate) fn server_info(result: &Value) -> Option<&Value> {
    identity(result, "serverInfo", SERVER_INFO_KEY)
}

/// The protocol version a request names in its `_meta`, if any.
pub(crate) fn request_version(request: &Value) -> Option<&str> {
    meta(request.get("params")?, PROTOCOL_VERSION_KEY)?.as_str()
}

/// Whether a request speaks the stateless revision.
pub(crate) fn is_modern(request: &Value) -> bool {
    request_version(request) == Some(MODERN_VERSION)
}

/// The `_meta` a stateless client sends with every request: revision, capabilities
/// (none) and identity.
pub(crate) fn client_meta(name: &str, version: &str) -> Value {
    json!({
        PROTOCOL_VERSION_KEY: MODERN_VERSION,
        CLIENT_CAPABILITIES_KEY: {},
        CLIENT_INFO_KEY: {"name": name, "version": version},
    })
}

/// Marks a result as complete, as 2026-07-28 requires of every result.
pub(crate) fn stamp_modern(result: &mut Value) {
    if let Some(obj) = result.as_object_mut() {
        obj.insert("resultType".into(), json!("complete"));
    }
}

/// Marks a cacheable result (`server/discover`, `tools/list`) as private and immediately
/// stale: 2026-07-28 requires `cacheScope` and `ttlMs` on them.
pub(crate) fn stamp_cacheable(result: &mut Value) {
    if let Some(obj) = result.as_object_mut() {
        obj.insert("cacheScope".into(), json!("private"));
        obj.insert("ttlMs".into(), json!(0));
    }
}

/// A response frame (without line ending).
pub(crate) fn result_frame(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error frame (without line ending).
pub(crate) fn error_frame(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eras_are_told_by_meta() {
        let modern = json!({"method": "tools/list", "params": {"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}});
        assert!(is_modern(&modern));
        assert!(!is_modern(&json!({"method": "tools/list"})));
        let old = json!({"method": "tools/list", "params": {"_meta": {PROTOCOL_VERSION_KEY: "2025-06-18"}}});
        assert_eq!(request_version(&old), Some("2025-06-18"));
        assert!(!is_modern(&old));
        let mut result = json!({"tools": []});
        stamp_modern(&mut result);
        assert_eq!(result["resultType"], "complete");
    }

    #[test]
    fn identities_in_either_era() {
        let legacy = json!({"serverInfo": {"name": "a"}});
        let stateless = json!({"_meta": {"io.modelcontextprotocol/serverInfo": {"name": "b"}}});
        assert_eq!(server_info(&legacy).unwrap()["name"], "a");
        assert_eq!(server_info(&stateless).unwrap()["name"], "b");
        assert_eq!(server_info(&json!({})), None);
        let params = json!({"_meta": client_meta("c", "1")});
        assert_eq!(meta(&params, CLIENT_INFO_KEY).unwrap()["name"], "c");
        assert_eq!(
            request_version(&json!({"params": params})),
            Some(MODERN_VERSION)
        );
    }

    #[test]
    fn frames_keep_big_and_string_ids() {
        let id: Value = serde_json::from_str("18446744073709551616").unwrap();
        assert_eq!(
            result_frame(&id, json!({})),
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#
        );
        assert_eq!(
            error_frame(&json!("a"), METHOD_NOT_FOUND, "Method not found", None),
            r#"{"jsonrpc":"2.0","id":"a","error":{"code":-32601,"message":"Method not found"}}"#
        );
    }
}
