//! `ctxopt serve`: the injected tools as a plain stdio MCP server, one JSON-RPC message per
//! line. It speaks both protocol eras: `initialize` ([`LEGACY_VERSIONS`]) and the
//! stateless [`MODERN_VERSION`] (`server/discover`, a protocol version in every request's `_meta`,
//! `resultType` and the server's identity in every result). Why this is a small hand-written
//! loop rather than rmcp is in `docs/injected-tools.md`.

use std::io::{self, BufRead, Write};

use serde_json::{json, Value};

use super::Bridge;
use crate::protocol::{self, LEGACY_VERSIONS, MODERN_VERSION};

/// What the server tells clients about itself.
const INSTRUCTIONS: &str = "ctxopt keeps the records of your sessions in this workspace \
(tool outputs, errors, file snapshots, test results, decisions). Call build_context with your \
task to get a compact briefing of what already happened; use ingest_records to save decisions \
and facts worth keeping.";

/// The server's identity.
fn server_info() -> Value {
    json!({"name": "ctxopt", "title": "ctxopt context optimizer", "version": env!("CARGO_PKG_VERSION")})
}

fn capabilities() -> Value {
    json!({"tools": {"listChanged": false}})
}

/// Serves requests from `input` until it ends, writing responses to `output`.
pub fn serve(bridge: &Bridge, input: impl BufRead, mut output: impl Write) -> io::Result<()> {
    for line in input.split(b'\n') {
        let line = line?;
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches('\r');
        if text.trim().is_empty() {
            continue;
        }
        if let Some(response) = respond(bridge, text) {
            output.write_all(response.as_bytes())?;
            output.write_all(b"\n")?;
            output.flush()?;
        }
    }
    Ok(())
}

/// The response to one incoming line, or `None` (notifications, responses).
pub(crate) fn respond(bridge: &Bridge, line: &str) -> Option<String> {
    let Ok(message) = serde_json::from_str::<Value>(line) else {
        return Some(protocol::error_frame(
            &Value::Null,
            protocol::PARSE_ERROR,
            "Parse error",
            None,
        ));
    };
    if !message.is_object() {
        return Some(protocol::error_frame(
            &Value::Null,
            protocol::INVALID_REQUEST,
            "Invalid Request: expected one JSON-RPC object (batches are not supported)",
            None,
        ));
    }
    let method = message.get("method")?.as_str()?;
    let id = message.get("id")?;
    let modern = protocol::request_version(&message);
    if let Some(version) = modern.filter(|v| *v != MODERN_VERSION) {
        return Some(unsupported(id, version));
    }
    let outcome = match method {
        "initialize" => Ok(initialize(&message)),
        "server/discover" => Ok(json!({
            "supportedVersions": [MODERN_VERSION],
            "capabilities": capabilities(),
            "instructions": INSTRUCTIONS,
        })),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(bridge.own_tools_list()),
        "tools/call" => call(bridge, &message),
        _ => Err((
            protocol::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )),
    };
    Some(match outcome {
        Ok(mut result) => {
            if modern.is_some() {
                protocol::stamp_modern(&mut result);
                if matches!(method, "server/discover" | "tools/list") {
                    protocol::stamp_cacheable(&mut result);
                }
                result["_meta"] = json!({protocol::SERVER_INFO_KEY: server_info()});
            }
            protocol::result_frame(id, result)
        }
        Err((code, text)) => protocol::error_frame(id, code, &text, None),
    })
}

fn unsupported(id: &Value, requested: &str) -> String {
    protocol::error_frame(
        id,
        protocol::UNSUPPORTED_PROTOCOL_VERSION,
        "Unsupported protocol version",
        Some(json!({"supported": [MODERN_VERSION], "requested": requested})),
    )
}

fn initialize(request: &Value) -> Value {
    let asked = request
        .get("params")
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str);
    let version = asked
        .filter(|v| LEGACY_VERSIONS.contains(v))
        .unwrap_or(LEGACY_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
        "instructions": INSTRUCTIONS,
    })
}

fn call(bridge: &Bridge, request: &Value) -> Result<Value, (i64, String)> {
    let params = request.get("params").unwrap_or(&Value::Null);
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err((
            protocol::INVALID_PARAMS,
            "tools/call needs a tool name".into(),
        ));
    };
    let Some(tool) = bridge.lookup(name) else {
        return Err((protocol::INVALID_PARAMS, format!("Unknown tool: {name}")));
    };
    Ok(bridge.call(tool, params.get("arguments").unwrap_or(&Value::Null)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Scope, Store};

    fn bridge() -> Bridge {
        let scope = Scope {
            workspace: "/ws".into(),
            server: "ctxopt".into(),
            session: "t".into(),
        };
        Bridge::new(Store::open_in_memory().unwrap(), scope)
    }

    fn exchange(lines: &[Value]) -> Vec<Value> {
        let b = bridge();
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let mut out = Vec::new();
        serve(&b, input.as_bytes(), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn initialize_era_session() {
        let out = exchange(&[
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "nope"}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "resources/list"}),
            json!({"jsonrpc": "2.0", "id": 5, "method": "ping"}),
        ]);
        assert_eq!(out.len(), 5);
        assert_eq!(out[0]["result"]["protocolVersion"], "2025-06-18");
        assert_eq!(out[0]["result"]["serverInfo"]["name"], "ctxopt");
        let tools = out[1]["result"]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 6);
        assert_eq!(out[2]["error"]["code"], protocol::INVALID_PARAMS);
        assert_eq!(out[3]["error"]["code"], protocol::METHOD_NOT_FOUND);
        assert_eq!(out[4]["result"], json!({}));
    }

    #[test]
    fn stateless_era_session() {
        let meta = json!({protocol::PROTOCOL_VERSION_KEY: MODERN_VERSION});
        let out = exchange(&[
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "get_decisions", "arguments": {}, "_meta": meta}}),
            json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
                   "params": {"_meta": {protocol::PROTOCOL_VERSION_KEY: "2099-01-01"}}}),
        ]);
        assert_eq!(
            out[0]["result"]["supportedVersions"],
            json!([MODERN_VERSION])
        );
        for r in &out[..3] {
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
            assert_eq!(
                r["result"]["_meta"][protocol::SERVER_INFO_KEY]["name"],
                "ctxopt"
            );
        }
        assert_eq!(
            out[2]["result"]["structuredContent"],
            json!({"decisions": []})
        );
        assert_eq!(
            out[3]["error"]["code"],
            protocol::UNSUPPORTED_PROTOCOL_VERSION
        );
    }

    #[test]
    fn garbage_gets_parse_errors_and_responses_are_ignored() {
        let b = bridge();
        let out = respond(&b, "{oops").unwrap();
        assert!(out.contains("-32700"), "{out}");
        let out = respond(&b, "[1,2]").unwrap();
        assert!(out.contains("-32600"), "{out}");
        assert_eq!(respond(&b, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#), None);
    }
}
