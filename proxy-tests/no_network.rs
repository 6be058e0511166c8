//! No network, proven (issue 16, item 5): `ctxopt-proxy` around a real server
//! (server-memory), `ctxopt serve` and `ctxopt build` run under `strace -f`, and every
//! socket any of their processes opens is a Unix socket (node's own `socketpair`
//! included). A second check runs the proxy session in a network namespace with no
//! interfaces (`unshare -n`) and expects the same answers.
//!
//! Needs `strace` (installed by `.ci/run`) and, for the second check, `unshare` with the
//! right to make a namespace (root); each says plainly when it skips.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::support::peers::peer;
use crate::support::proxy::PROXY;

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");

fn available(tool: &str, probe: &[&str]) -> bool {
    let ok = Command::new(tool)
        .args(probe)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!("skipping: `{tool} {}` does not run here", probe.join(" "));
    }
    ok
}

/// Runs `argv` with `input` on stdin under `strace -f`, returning its stdout and the
/// socket-related calls the trace shows (one per line).
fn traced(argv: &[&str], input: &[u8], dir: &Path) -> (Vec<u8>, Vec<String>) {
    let trace = dir.join(format!("trace-{}", std::process::id()));
    let out = run_with_input(
        Command::new("strace")
            .args(["-f", "-qq", "-e", "trace=socket,socketpair,connect,bind"])
            .arg("-o")
            .arg(&trace)
            .args(argv)
            .env("XDG_STATE_HOME", dir),
        input,
    );
    let calls = std::fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    (out, calls)
}

fn run_with_input(cmd: &mut Command, input: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The calls that open or use a socket other than a Unix one.
fn network_calls(calls: &[String]) -> Vec<&String> {
    calls
        .iter()
        .filter(|c| {
            ["socket(", "socketpair(", "connect(", "bind("]
                .iter()
                .any(|f| c.contains(f))
        })
        .filter(|c| !(c.contains("(AF_UNIX") || c.contains("sa_family=AF_UNIX")))
        .collect()
}

/// A session: initialize, list, one call of the server's tool, and (`build`) one
/// `build_context` call (answered by the proxy or `ctxopt serve`, from the store).
fn session_input(build: bool) -> Vec<u8> {
    let mut lines = vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_graph","arguments":{}}}"#,
    ];
    if build {
        lines.push(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"build_context","arguments":{"task":"x"}}}"#);
    }
    lines.push("");
    lines.join("\n").into_bytes()
}

fn server_memory() -> Option<PathBuf> {
    peer("node_modules/@modelcontextprotocol/server-memory/dist/index.js")
}

fn proxy_argv(dir: &Path, server: &Path) -> Vec<String> {
    vec![
        PROXY.into(),
        "--log".into(),
        dir.join("log.jsonl").display().to_string(),
        "--store".into(),
        dir.join("store.sqlite3").display().to_string(),
        "--".into(),
        "node".into(),
        server.display().to_string(),
    ]
}

fn answered_ids(stdout: &[u8]) -> Vec<u64> {
    let mut ids: Vec<u64> = String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v.get("id").and_then(serde_json::Value::as_u64))
        .collect();
    ids.sort();
    ids
}

#[test]
fn the_tracer_sees_a_network_socket_when_one_is_opened() {
    // The canary: the same trace and filter flag a process that opens an Internet socket.
    if !available("strace", &["-V"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (_, calls) = traced(
        &[
            "python3",
            "-c",
            "import socket; socket.socket(socket.AF_INET)",
        ],
        b"",
        dir.path(),
    );
    let found = network_calls(&calls);
    assert!(
        found.iter().any(|c| c.contains("AF_INET")),
        "not seen: {calls:?}"
    );
}

#[test]
fn proxy_serve_and_build_open_no_network_socket() {
    if !available("strace", &["-V"]) {
        return;
    }
    let Some(server) = server_memory() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let argv = proxy_argv(dir.path(), &server);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let (stdout, proxy_calls) = traced(&argv, &session_input(false), dir.path());
    assert_eq!(answered_ids(&stdout), [1, 2, 3], "the session ran");
    assert!(
        proxy_calls.iter().any(|c| c.contains("AF_UNIX")),
        "node's socketpair is not in the trace: the tracer missed the child: {proxy_calls:?}"
    );

    let store = dir.path().join("store.sqlite3");
    let serve_input = session_input(true);
    let (served, serve_calls) = traced(
        &[CTXOPT, "serve", "--store", store.to_str().unwrap()],
        &serve_input,
        dir.path(),
    );
    assert!(
        answered_ids(&served).contains(&4),
        "serve answered build_context"
    );

    // A scenario's records (the scenario file wraps them under `records`).
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/scenarios/failed-attempts.json");
    let scenario: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(scenario).unwrap()).unwrap();
    let records = dir.path().join("records.json");
    std::fs::write(&records, scenario["records"].to_string()).unwrap();
    let (built, build_calls) = traced(
        &[CTXOPT, "build", "--records", records.to_str().unwrap()],
        b"",
        dir.path(),
    );
    assert!(!built.is_empty(), "build printed a context");

    for (what, calls) in [
        ("ctxopt-proxy", &proxy_calls),
        ("ctxopt serve", &serve_calls),
        ("ctxopt build", &build_calls),
    ] {
        let found = network_calls(calls);
        assert!(found.is_empty(), "{what} opened network sockets: {found:?}");
    }
}

#[test]
fn the_proxy_session_runs_the_same_without_any_network_interface() {
    if !available("unshare", &["-n", "true"]) {
        return;
    }
    let Some(server) = server_memory() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let argv = proxy_argv(dir.path(), &server);
    let stdout = run_with_input(
        Command::new("unshare")
            .arg("-n")
            .args(&argv)
            .env("XDG_STATE_HOME", dir.path()),
        &session_input(false),
    );
    assert_eq!(answered_ids(&stdout), [1, 2, 3]);
}
