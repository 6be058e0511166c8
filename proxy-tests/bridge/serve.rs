//! `ctxopt serve` with a real client: the Python SDK (`mcp`, pinned in
//! proxy-tests/peers/requirements.txt), in the `initialize` era (`ClientSession`) and the
//! stateless 2026-07-28 era (`Client`, which probes `server/discover`).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Command;

use super::{ctxopt, json_output};

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

/// The installed Python with the `mcp` SDK, or `None` (after saying so) when it is missing
/// and `CTXOPT_SKIP_PEER_TESTS` is set.
pub(super) fn python() -> Option<PathBuf> {
    let python =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("proxy-tests/peers/.venv/bin/python");
    if python.is_file() {
        return Some(python);
    }
    if std::env::var_os("CTXOPT_SKIP_PEER_TESTS").is_some_and(|v| v != "0") {
        eprintln!("skipping: {} is missing", python.display());
        return None;
    }
    panic!(
        "{} is missing: install the peers with `./proxy-tests/run-all --install-only`, \
         or set CTXOPT_SKIP_PEER_TESTS=1",
        python.display()
    );
}

fn run(mode: &str, expected_protocol: &str) {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("state/store.sqlite3");
    let out = Command::new(python)
        .args(["-c", DRIVER, mode, ctxopt(), "serve", "--store"])
        .arg(&store)
        .arg("--workspace")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
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
    assert_eq!(seen["withOutputSchema"], serde_json::json!(six));
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
