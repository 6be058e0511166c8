//! `ctxopt serve` with a real client: the Python SDK (`mcp`, pinned in
//! proxy-tests/peers/requirements.txt), in the `initialize` era (`ClientSession`) and the
//! stateless 2026-07-28 era (`Client`, which probes `server/discover`); and the TypeScript
//! SDK client.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use super::{ctxopt, json_output};
use crate::support::command::run_ok;
use crate::support::peers::peer;

/// The driver: lists the tools, saves an error with `ingest_records`, asks `build_context`,
/// calls an unknown tool, and prints what it saw as JSON.
const DRIVER: &str = r#"
import json, sys, anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client

async def scenario(api):
    out = {}
    tools = (await api.list_tools()).tools
    out["tools"] = sorted(t.name for t in tools)
    out["withOutputSchema"] = sorted(t.name for t in tools if t.output_schema)
    r = await api.call_tool("ingest_records", {"records": {"errors": [
        {"message": "BillingError: total of invoice 42 is negative"}]}})
    out["ingest"] = r.structured_content
    r = await api.call_tool("build_context", {"task": "fix the negative invoice total"})
    out["context"] = r.content[0].text
    out["isError"] = bool(r.is_error)
    out["sources"] = r.structured_content["sources"]
    try:
        await api.call_tool("no_such_tool", {})
        out["unknown"] = "no error"
    except Exception as e:
        out["unknown"] = getattr(getattr(e, "error", None), "code", str(e))
    return out

async def main():
    mode, cmd = sys.argv[1], sys.argv[2:]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    if mode == "session":
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                init = await s.initialize()
                out = await scenario(s)
                out["protocol"] = init.protocol_version
    else:
        async with Client(stdio_client(params)) as c:
            out = await scenario(c)
            out["protocol"] = c.protocol_version
    print(json.dumps(out))

anyio.run(main)
"#;

/// The installed Python with the `mcp` SDK.
pub(crate) fn python() -> Option<PathBuf> {
    peer(".venv/bin/python")
}

fn run(mode: &str, expected_protocol: &str) {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("state/store.sqlite3");
    let out = run_ok(
        Command::new(python)
            .args(["-c", DRIVER, mode, ctxopt(), "serve", "--store"])
            .arg(&store)
            .arg("--workspace")
            .arg(dir.path()),
    );
    let seen = json_output(&out.stdout);
    assert_eq!(seen["protocol"], expected_protocol);
    let six = [
        "build_context",
        "get_decisions",
        "get_file_history",
        "get_relevant_errors",
        "ingest_records",
        "search_context",
    ];
    assert_eq!(seen["tools"], serde_json::json!(six));
    // Output schemas are not listed (they cost tokens in every session; see src/injected/tools.rs).
    assert_eq!(seen["withOutputSchema"], serde_json::json!([]));
    assert_eq!(seen["ingest"]["inserted"], 1);
    assert_eq!(seen["isError"], false);
    let context = seen["context"].as_str().unwrap();
    assert!(
        context.contains("BillingError: total of invoice 42 is negative"),
        "{context}"
    );
    let error = seen["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == "error")
        .expect("the error is a source");
    assert_eq!(error["tool"], "ingest_records");
    assert!(context.contains(&format!("record {}", error["record"].as_str().unwrap())));
    assert_eq!(seen["unknown"], -32602);
    let mode_of = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode_of(store.clone()), 0o600);
    assert_eq!(mode_of(store.parent().unwrap().to_path_buf()), 0o700);
}

#[test]
fn python_session_initialize_era() {
    run("session", "2025-11-25");
}

#[test]
fn python_client_stateless_era() {
    run("client", "2026-07-28");
}

/// The same with the TypeScript SDK's `Client` (which would validate every `structuredContent`
/// against an output schema; none is listed), run from proxy-tests/peers so its imports resolve.
const TS_DRIVER: &str = r#"
const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
const [command, ...args] = process.argv.slice(1);
const client = new Client({ name: "ctxopt-bridge-ts", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args }));
const out = { server: client.getServerVersion()?.name };
out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
const records = { errors: [{ message: "BillingError: total of invoice 42 is negative" }] };
out.ingest = (await client.callTool({ name: "ingest_records", arguments: { records } })).structuredContent;
const built = await client.callTool({ name: "build_context", arguments: { task: "fix the negative invoice total" } });
out.context = built.content[0].text;
for (const [name, a] of [["search_context", { query: "invoice" }], ["get_decisions", {}],
                         ["get_relevant_errors", {}], ["get_file_history", { path: "a.rs" }]]) {
  const r = await client.callTool({ name, arguments: a });
  out[name] = r.isError ? r.content[0].text : Object.keys(r.structuredContent);
}
await client.close();
console.log(JSON.stringify(out));
"#;

#[test]
fn typescript_client_validates_every_output() {
    let Some(sdk) = peer("node_modules/@modelcontextprotocol/sdk") else {
        return;
    };
    let peers = sdk.ancestors().nth(3).unwrap();
    let out = run_ok(Command::new("node").current_dir(peers).args([
        "--input-type=module",
        "-e",
        TS_DRIVER,
        ctxopt(),
        "serve",
        "--store",
        ":memory:",
    ]));
    let seen = json_output(&out.stdout);
    assert_eq!(seen["server"], "ctxopt");
    assert_eq!(seen["tools"].as_array().unwrap().len(), 6);
    assert_eq!(seen["ingest"]["inserted"], 1);
    assert!(seen["context"]
        .as_str()
        .unwrap()
        .contains("BillingError: total of invoice 42 is negative"));
    assert_eq!(seen["search_context"], serde_json::json!(["query", "hits"]));
    assert_eq!(seen["get_decisions"], serde_json::json!(["decisions"]));
    assert_eq!(seen["get_relevant_errors"], serde_json::json!(["errors"]));
    assert_eq!(
        seen["get_file_history"],
        serde_json::json!(["path", "versions"])
    );
}
