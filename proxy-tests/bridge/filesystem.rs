//! The whole path, live and replayed. Live: a real client (Python `mcp`, TypeScript SDK) reads
//! files and hits an error through `ctxopt-proxy` in front of
//! `@modelcontextprotocol/server-filesystem`, then asks the proxy's own `build_context` and
//! `get_file_history` in the same session. Replayed: a real client reads files and hits an error through
//! `ctxopt-proxy` in front of `@modelcontextprotocol/server-filesystem`; `ctxopt ingest` puts
//! the frame log into the store; `ctxopt serve` then answers `build_context` with the error and
//! the files, each source resolving to its frame in the log, and `get_file_history` with both
//! reads of a file that changed in between.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use super::serve::python;
use super::{ctxopt, json_output};
use crate::support::command::run_ok;

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
                if name == "tools/list":
                    out.append({"tools": [t.name for t in (await s.list_tools()).tools]})
                    continue
                r = await s.call_tool(name, args)
                out.append({"text": "\n".join(c.text for c in r.content if c.type == "text"),
                            "structured": r.structured_content, "isError": bool(r.is_error)})
    print(json.dumps(out))

anyio.run(main)
"#;

pub(crate) fn run_calls(python: &Path, calls: Value, command: &[&std::ffi::OsStr]) -> Vec<Value> {
    let out = run_ok(
        Command::new(python)
            .args(["-c", CALLS])
            .arg(calls.to_string())
            .args(command),
    );
    json_output(&out.stdout).as_array().unwrap().clone()
}

/// `ctxopt-proxy --log LOG --store STORE --workspace PROJECT OPTIONS -- node
/// server-filesystem PROJECT`.
pub(crate) fn proxy_command(
    log: &Path,
    store: &Path,
    project: &Path,
    options: &[&str],
) -> Vec<std::ffi::OsString> {
    let mut command: Vec<std::ffi::OsString> = vec![
        env!("CARGO_BIN_EXE_ctxopt-proxy").into(),
        "--log".into(),
        log.into(),
        "--store".into(),
        store.into(),
        "--workspace".into(),
        project.into(),
    ];
    command.extend(options.iter().map(Into::into));
    command.extend([
        "--".into(),
        "node".into(),
        filesystem_server().into(),
        project.into(),
    ]);
    command
}

fn filesystem_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "proxy-tests/peers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js",
    )
}

/// A temporary project holding `notes.txt` and `billing.rs` (not `rates.rs`), with the
/// session's log and store next to it.
struct Project {
    _dir: tempfile::TempDir,
    project: PathBuf,
    notes: PathBuf,
    billing: PathBuf,
    missing: PathBuf,
    log: PathBuf,
    store: PathBuf,
}

impl Project {
    fn new() -> Project {
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
        Project {
            _dir: dir,
            project,
            notes,
            billing,
            missing,
            log,
            store,
        }
    }
}

#[test]
fn build_context_and_file_history_from_a_real_filesystem_session() {
    let Some(python) = python() else { return };
    let Project {
        _dir,
        project,
        notes,
        billing,
        missing,
        log,
        store,
    } = Project::new();
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
            "--inject".as_ref(),
            "none".as_ref(),
            "--store".as_ref(),
            ":memory:".as_ref(),
            "--".as_ref(),
            "node".as_ref(),
            server.as_os_str(),
            project.as_os_str(),
        ],
    );
    assert_eq!(seen[2]["isError"], true, "{:?}", seen[2]);

    // 2. The log into the store.
    run_ok(
        Command::new(ctxopt())
            .arg("ingest")
            .arg("--store")
            .arg(&store)
            .arg("--workspace")
            .arg(&project)
            .arg(&log),
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

/// The TypeScript SDK's `Client` running the same calls as [`CALLS`] (run from
/// proxy-tests/peers so its imports resolve).
const TS_CALLS: &str = r#"
const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
const [calls, command, ...args] = process.argv.slice(1);
const client = new Client({ name: "ctxopt-live-ts", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command, args }));
const out = [];
for (const [name, a] of JSON.parse(calls)) {
  if (name === "tools/list") { out.push({ tools: (await client.listTools()).tools.map((t) => t.name) }); continue; }
  const r = await client.callTool({ name, arguments: a });
  out.push({ text: r.content.filter((c) => c.type === "text").map((c) => c.text).join("\n"),
             structured: r.structuredContent ?? null, isError: Boolean(r.isError) });
}
await client.close();
console.log(JSON.stringify(out));
"#;

pub(crate) fn run_ts_calls(calls: Value, command: &[&std::ffi::OsStr]) -> Option<Vec<Value>> {
    let sdk = crate::support::peers::peer("node_modules/@modelcontextprotocol/sdk")?;
    let peers = sdk.ancestors().nth(3).unwrap();
    let out = run_ok(
        Command::new("node")
            .current_dir(peers)
            .args(["--input-type=module", "-e", TS_CALLS])
            .arg(calls.to_string())
            .args(command),
    );
    Some(json_output(&out.stdout).as_array().unwrap().clone())
}

/// One live session through the proxy with `client`; checks the list, the context and the
/// history against the log.
fn live_session(client: &str) {
    let Project {
        _dir,
        project,
        notes,
        billing,
        missing,
        log,
        store,
    } = Project::new();
    let p = |path: &Path| path.display().to_string();
    let calls = json!([
        ["tools/list", {}],
        ["read_text_file", {"path": p(&notes)}],
        ["read_text_file", {"path": p(&billing)}],
        ["read_text_file", {"path": p(&missing)}],
        ["write_file", {"path": p(&notes), "content": "invoice totals are rounded half even (v2)\n"}],
        ["read_text_file", {"path": p(&notes)}],
        ["build_context", {"task": "fix total_cents rounding in billing.rs; the rates come from rates.rs", "budget": 2000}],
        ["get_file_history", {"path": "notes.txt"}],
    ]);
    let command = proxy_command(&log, &store, &project, &[]);
    let command: Vec<&std::ffi::OsStr> = command.iter().map(|a| a.as_os_str()).collect();
    let seen = match client {
        "python" => {
            let Some(python) = python() else { return };
            run_calls(&python, calls, &command)
        }
        _ => match run_ts_calls(calls, &command) {
            Some(seen) => seen,
            None => return,
        },
    };
    let tools: Vec<&str> = seen[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"read_text_file"), "{tools:?}");
    let ours = &tools[tools.len() - 6..];
    assert_eq!(
        ours,
        [
            "build_context",
            "search_context",
            "get_decisions",
            "get_relevant_errors",
            "get_file_history",
            "ingest_records"
        ]
    );
    assert_eq!(seen[3]["isError"], true, "{:?}", seen[3]);
    let context = seen[6]["text"].as_str().unwrap();
    assert!(
        context.contains("ENOENT: no such file or directory"),
        "{context}"
    );
    assert!(context.contains("pub fn total_cents(x: f64)"), "{context}");

    let frames: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &Value| l["type"] == "frame")
        .collect();
    let sources = seen[6]["structured"]["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s["kind"] == "error"), "{sources:?}");
    assert!(sources.iter().any(|s| s["kind"] == "file"), "{sources:?}");
    // Every source but the task itself names a frame of this log.
    let from_log: Vec<&Value> = sources.iter().filter(|s| s["kind"] != "task").collect();
    // The error and billing.rs first; then, with most of the budget left, the other file the
    // session read and, after the files, the session's tool output (the write_file answer):
    // what is left goes to files read, then to tool outputs (docs/scoring.md).
    let chosen: Vec<(&str, &str)> = from_log
        .iter()
        .map(|s| (s["kind"].as_str().unwrap(), s["tool"].as_str().unwrap()))
        .collect();
    assert_eq!(
        chosen,
        [
            ("error", "read_text_file"),
            ("file", "read_text_file"),
            ("file", "read_text_file"),
            ("toolOutput", "write_file")
        ],
        "{sources:?}"
    );
    assert_eq!(from_log[1]["path"], p(&billing), "{sources:?}");
    assert_eq!(from_log[2]["path"], p(&notes), "{sources:?}");
    for source in from_log {
        assert_eq!(source["log"], p(&log), "{source}");
        let frame = frames
            .iter()
            .find(|f| f["seq"] == source["seq"])
            .unwrap_or_else(|| panic!("no frame {} in the log", source["seq"]));
        assert_eq!(frame["dir"], "s2c");
        assert_eq!(frame["tool"], source["tool"]);
        let tag = format!("record {}", source["record"].as_str().unwrap());
        assert!(context.contains(&tag), "{tag}");
    }
    // The injected calls were answered by the proxy, never seen by the server.
    let answered: Vec<&Value> = frames.iter().filter(|f| f["dir"] == "p2c").collect();
    assert!(answered.iter().any(|f| f["tool"] == "build_context"));
    assert!(frames
        .iter()
        .all(|f| f["dir"] != "c2s" || f["tool"] != "build_context"));

    let versions = seen[7]["structured"]["versions"].as_array().unwrap();
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

    // Replaying the same log adds nothing: the live ingestion used the same provenance.
    let out = Command::new(ctxopt())
        .arg("ingest")
        .arg("--store")
        .arg(&store)
        .arg("--workspace")
        .arg(&project)
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let report = String::from_utf8_lossy(&out.stderr);
    assert!(report.contains(" 0 record(s) stored, "), "{report}");
}

#[test]
fn live_python_session_gets_build_context_from_the_proxy() {
    live_session("python");
}

#[test]
fn live_typescript_session_gets_build_context_from_the_proxy() {
    live_session("typescript");
}
