//! The bridge end to end: the session store under concurrent writers and kills
//! (`ctxopt ingest` processes), and `ctxopt serve` driven by the real Python SDK client.
//!
//! # Layout
//! - `store`: four writers on one store, SIGKILL mid-ingest, a corrupt store.
//! - `serve`: `ctxopt serve` with the Python `mcp` client, both protocol eras.
//! - `filesystem`: real server-filesystem sessions through the proxy: live (Python and TypeScript
//!   clients ask the proxy's own `build_context`), and replayed with `ctxopt ingest` into `ctxopt serve`.

pub(crate) mod filesystem;
pub(crate) mod serve;
mod store;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

/// The `ctxopt` binary under test.
fn ctxopt() -> &'static str {
    env!("CARGO_BIN_EXE_ctxopt")
}

/// Writes a frame log of `calls` `tools/call` exchanges (request `seq` 2k, response 2k+1),
/// each answered with a distinct text, and returns its path.
fn write_log(dir: &Path, name: &str, calls: usize) -> PathBuf {
    let frame = |seq: usize, dir: &str, kind: &str, id: usize, raw: String| {
        json!({"type": "frame", "seq": seq, "ts": "2026-03-01T10:00:00.000000Z", "dir": dir,
               "bytes": raw.len() + 1, "line_ending": "lf", "kind": kind, "id": id.to_string(),
               "method": "tools/call", "tool": "run_command", "tokens": 1, "meta_tokens": 0,
               "raw": raw})
        .to_string()
    };
    let mut lines = vec![
        json!({"type": "header", "format_version": 1, "proxy_version": "0.1.0",
        "tokenizer": "o200k_base", "started": "2026-03-01T10:00:00Z", "server_name": name,
        "server_argv": ["server"], "cwd": "/", "server_pid": 1, "proxy_pid": 2})
        .to_string(),
    ];
    for k in 0..calls {
        let request = json!({"jsonrpc": "2.0", "id": k, "method": "tools/call",
            "params": {"name": "run_command", "arguments": {"n": k}}});
        let response = json!({"jsonrpc": "2.0", "id": k,
            "result": {"content": [{"type": "text", "text": format!("{name} output {k}")}]}});
        lines.push(frame(2 * k, "c2s", "request", k, request.to_string()));
        lines.push(frame(2 * k + 1, "s2c", "response", k, response.to_string()));
    }
    let path = dir.join(format!("{name}.jsonl"));
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

/// Parses the JSON a child printed.
fn json_output(stdout: &[u8]) -> Value {
    serde_json::from_slice(stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(stdout)))
}
