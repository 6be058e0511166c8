//! The few JSON-RPC and MCP envelope facts the bridge needs to originate frames: response
//! and error frames, and which protocol era a request speaks.

use serde_json::{json, Value};

/// The stateless revision: no `initialize`, a protocol version in every request's `_meta`,
/// `resultType` in every result.
pub const MODERN_VERSION: &str = "2026-07-28";

/// The `initialize`-era revisions served, newest first.
pub const LEGACY_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The `_meta` key of a request's protocol version (2026-07-28).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key of the server's identity in results (2026-07-28).
pub const SERVER_INFO_KEY: &str = "io.modelcontextprotocol/serverInfo";

/// Method not found.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid params (also: unknown tool).
pub const INVALID_PARAMS: i64 = -32602;
/// Invalid request.
pub const INVALID_REQUEST: i64 = -32600;
/// Internal error.
pub const INTERNAL_ERROR: i64 = -32603;
/// Parse error.
pub const PARSE_ERROR: i64 = -32700;
/// The request's protocol version is not supported (2026-07-28).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The protocol version a request names in its `_meta`, if any.
pub fn request_version(request: &Value) -> Option<&str> {
    request
        .get("params")?
        .get("_meta")?
        .get(PROTOCOL_VERSION_KEY)?
        .as_str()
}

/// Whether a request speaks the stateless revision.
pub fn is_modern(request: &Value) -> bool {
    request_version(request) == Some(MODERN_VERSION)
}

/// Marks a result as complete, as 2026-07-28 requires of every result.
pub fn stamp_modern(result: &mut Value) {
    if let Some(obj) = result.as_object_mut() {
        obj.insert("resultType".into(), json!("complete"));
    }
}

/// Marks a cacheable result (`server/discover`, `tools/list`) as private and immediately
/// stale: 2026-07-28 requires `cacheScope` and `ttlMs` on them.
pub fn stamp_cacheable(result: &mut Value) {
    if let Some(obj) = result.as_object_mut() {
        obj.insert("cacheScope".into(), json!("private"));
        obj.insert("ttlMs".into(), json!(0));
    }
}

/// A response frame (without line ending).
pub fn result_frame(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error frame (without line ending).
pub fn error_frame(id: &Value, code: i64, message: &str, data: Option<Value>) -> String {
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
        let mut result = json!({"tools": []});
        stamp_modern(&mut result);
        assert_eq!(result["resultType"], "complete");
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
