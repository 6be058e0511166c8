//! The whole path without the live wiring: a real client reads files and hits an error through
//! `ctxopt-proxy` in front of `@modelcontextprotocol/server-filesystem`; `ctxopt ingest` puts
//! the frame log into the store; `ctxopt serve` then answers `build_context` with the error and
//! the files, each source resolving to its frame in the log, and `get_file_history` with both
//! reads of a file that changed in between.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::serve::python;
use super::{ctxopt, json_output};

/// Calls tools in order with the Python SDK's `ClientSession` and prints, per call, its text,
/// structured content and error flag. argv: the calls as JSON (`[[name, arguments], …]`),
/// then the server command.
const CALLS: &str = r#"
import json, sys, anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

async def main():
    calls, cmd = json.loads(sys.argv[1]), sys.argv[2:]
    params = StdioServerParameters(command=cmd[0], args=cmd[1:])
    out = []
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()
            for name, args in calls:
                r = await s.call_tool(name, args)
                out.append({"text": "\n".join(c.text for c in r.content if c.type == "text"),
                            "structured": r.structured_content, "isError": bool(r.is_error)})
    print(json.dumps(out))

anyio.run(main)
"#;

fn run_calls(python: &Path, calls: Value, command: &[&std::ffi::OsStr]) -> Vec<Value> {
    let out = Command::new(python)
        .args(["-c", CALLS])
        .arg(calls.to_string())
        .args(command)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json_output(&out.stdout).as_array().unwrap().clone()
}

fn filesystem_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "proxy-tests/peers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    )
}

#[test]
fn build_context_and_file_history_from_a_real_filesystem_session() {
    let Some(python) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let project = root.join("project");
    std::fs::create_dir(&project).unwrap();
    let notes = project.join("notes.txt");
    let billing = project.join("billing.rs");
    std::fs::write(&notes, "invoice totals are rounded half up (v1)\n").unwrap();
    std::fs::write(&billing, "pub fn total_cents(x: f64) -> i64 { x as i64 }\n").unwrap();
    let missing = project.join("rates.rs");
    let log = root.join("session.jsonl");
    let store = root.join("store.sqlite3");
    let p = |path: &Path| path.display().to_string();

    // 1. A real session through the proxy.
    let calls = json!([
        ["read_text_file", {"path": p(&notes)}],
        ["read_text_file", {"path": p(&billing)}],
        ["read_text_file", {"path": p(&missing)}],
        ["write_file", {"path": p(&notes), "content": "invoice totals are rounded half even (v2)\n"}],
        ["read_text_file", {"path": p(&notes)}],
    ]);
    let proxy = env!("CARGO_BIN_EXE_ctxopt-proxy");
    let server = filesystem_server();
    let seen = run_calls(
        &python,
        calls,
        &[
            proxy.as_ref(),
            "--log".as_ref(),
            log.as_os_str(),
            "--".as_ref(),
            "node".as_ref(),
            server.as_os_str(),
            project.as_os_str(),
        ],
    );
    assert_eq!(seen[2]["isError"], true, "{:?}", seen[2]);

    // 2. The log into the store.
    let out = Command::new(ctxopt())
        .arg("ingest")
        .arg("--store")
        .arg(&store)
        .arg("--workspace")
        .arg(&project)
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // 3. The tools over the store.
    let asked = run_calls(
        &python,
        json!([
            ["build_context", {"task": "fix total_cents rounding in billing.rs; the rates come from rates.rs", "budget": 2000}],
            ["get_file_history", {"path": "notes.txt"}],
        ]),
        &[
            ctxopt().as_ref(),
            "serve".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--workspace".as_ref(),
            project.as_os_str(),
        ],
    );
    let context = asked[0]["text"].as_str().unwrap();
    assert!(
        context.contains("ENOENT: no such file or directory"),
        "{context}"
    );
    assert!(context.contains("pub fn total_cents(x: f64)"), "{context}");

    // Every ingested source names a frame of the log: a server response to its tools/call.
    let frames: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l["type"] == "frame")
        .collect();
    let sources = asked[0]["structured"]["sources"].as_array().unwrap();
    let from_log: Vec<&Value> = sources.iter().filter(|s| s.get("seq").is_some()).collect();
    assert!(from_log.iter().any(|s| s["kind"] == "error"), "{sources:?}");
    assert!(from_log.iter().any(|s| s["kind"] == "file"), "{sources:?}");
    for source in from_log {
        assert_eq!(source["log"], p(&log));
        let frame = frames
            .iter()
            .find(|f| f["seq"] == source["seq"])
            .unwrap_or_else(|| panic!("no frame {} in the log", source["seq"]));
        assert_eq!(frame["dir"], "s2c");
        assert_eq!(frame["method"], "tools/call");
        assert_eq!(frame["tool"], source["tool"]);
        let tag = format!("record {}", source["record"].as_str().unwrap());
        assert!(context.contains(&tag), "{tag}");
    }

    let versions = asked[1]["structured"]["versions"].as_array().unwrap();
    let contents: Vec<&str> = versions
        .iter()
        .map(|v| v["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        [
            "invoice totals are rounded half up (v1)\n",
            "invoice totals are rounded half even (v2)\n"
        ]
    );
    assert!(versions.iter().all(|v| v["changed"] == true));
}
