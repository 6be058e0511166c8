//! The injected tools through the live proxy, against the scripted fixture server: what the
//! client sees, what the server sees, and what the log says (`c2p`/`p2c`, `server_raw`).

use std::process::Command;

use ctxopt::framelog::Direction;
use serde_json::{json, Value};

use crate::support::log::read_log;
use crate::support::proxy::{fixture_server, locked_store, ProxyCmd, Session};

const SIX: [&str; 6] = [
    "build_context",
    "search_context",
    "get_decisions",
    "get_relevant_errors",
    "get_file_history",
    "ingest_records",
];

fn init_result(tools: bool) -> String {
    let caps = if tools {
        json!({"tools": {"listChanged": true}})
    } else {
        json!({"prompts": {}})
    };
    json!({"protocolVersion": "2025-06-18", "capabilities": caps,
           "serverInfo": {"name": "fixture", "version": "1"}})
    .to_string()
}

fn tools_result(names: &[&str], next: Option<&str>) -> String {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "inputSchema": {"type": "object"}}))
        .collect();
    let mut result = json!({ "tools": tools });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    result.to_string()
}

fn request(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n"
}

fn call(id: u64, name: &str, arguments: Value) -> String {
    request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// The parsed lines a client received.
fn lines(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn by_id(lines: &[Value], id: u64) -> &Value {
    lines.iter().find(|l| l["id"] == id).unwrap_or_else(|| {
        let ids: Vec<&Value> = lines.iter().map(|l| &l["id"]).collect();
        panic!("no response {id} among {ids:?}")
    })
}

/// Talks like a client that waits for each answer: sends each request, reads until its
/// response (and whatever came before it). Returns every line received, the proxy's
/// stderr and the log path.
fn converse(cmd: &ProxyCmd, requests: &[String]) -> (Vec<Value>, String) {
    let mut session = Session::start(cmd);
    let mut seen = Vec::new();
    for request in requests {
        let id = serde_json::from_str::<Value>(request).unwrap()["id"].clone();
        session.send(request.as_bytes());
        loop {
            let line: Value = serde_json::from_slice(&session.recv()).unwrap();
            let done = line["id"] == id && line.get("method").is_none();
            seen.push(line);
            if done {
                break;
            }
        }
    }
    let (rest, status, stderr) = session.close_with_stderr();
    assert!(status.success(), "{stderr}");
    seen.extend(lines(&rest));
    (seen, stderr)
}

/// The tool names of a `tools/list` answer.
pub(crate) fn names(list: &Value) -> Vec<String> {
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// A session with the fixture answering like a server with tools `echo` and `read_file`.
fn server_steps(extra: &[String]) -> Vec<String> {
    let mut steps = vec![
        format!("method-result:initialize:{}", init_result(true)),
        format!(
            "method-result:tools/list:{}",
            tools_result(&["echo", "read_file"], None)
        ),
        r#"method-result:tools/call:{"content":[{"type":"text","text":"fn main() { println!(\"v1\") }"}]}"#.into(),
    ];
    steps.extend(extra.iter().cloned());
    steps.push("respond".into());
    steps
}

fn handshake() -> String {
    request(
        1,
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    )
}

#[test]
fn inject_none_relays_byte_for_byte() {
    let steps = server_steps(&[]);
    let input = [
        handshake(),
        request(2, "tools/list", json!({})),
        call(3, "build_context", json!({"task": "x"})),
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}"#
            .to_string()
            + "\n",
    ]
    .concat();
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let run = ProxyCmd::fixture(&steps)
        .option(&[
            "--inject".as_ref(),
            "none".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
        ])
        .option(&["--workspace".as_ref(), dir.path().as_os_str()])
        .run(input.as_bytes());
    assert!(run.status.success(), "{}", run.stderr);
    let mut direct = Command::new(fixture_server())
        .args(&steps)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    direct
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let direct = direct.wait_with_output().unwrap();
    assert_eq!(run.stdout, direct.stdout);
    let log = read_log(&run.log);
    assert!(log.dir(Direction::C2p).is_empty() && log.dir(Direction::P2c).is_empty());
    assert!(log.frames.iter().all(|f| f.server_raw.is_none()));
    // Not injecting still ingests: the call went to the server, and its result was stored.
    let workspace = dir.path().canonicalize().unwrap().display().to_string();
    let stored = ctxopt::store::Store::open_path(&store).unwrap();
    assert_eq!(stored.count(&workspace).unwrap(), 1);
}

#[test]
fn all_six_follow_the_servers_tools_and_calls_are_answered_by_the_proxy() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let cmd =
        ProxyCmd::fixture(&server_steps(&[])).option(&["--store".as_ref(), store.as_os_str()]);
    let (out, _) = converse(
        &cmd,
        &[
            handshake(),
            request(2, "tools/list", json!({})),
            call(3, "read_file", json!({"path": "src/main.rs"})),
            call(4, "get_file_history", json!({"path": "main.rs"})),
        ],
    );
    assert_eq!(
        by_id(&out, 1)["result"],
        serde_json::from_str::<Value>(&init_result(true)).unwrap()
    );
    let mut expected = vec!["echo".to_string(), "read_file".into()];
    expected.extend(SIX.iter().map(|s| s.to_string()));
    assert_eq!(names(by_id(&out, 2)), expected);
    // The read went to the server and was ingested before the history was asked for.
    let history = &by_id(&out, 4)["result"]["structuredContent"];
    assert_eq!(
        history["versions"][0]["content"],
        "fn main() { println!(\"v1\") }"
    );

    let log = read_log(cmd.log_path());
    let c2p = log.dir(Direction::C2p);
    let p2c = log.dir(Direction::P2c);
    assert_eq!(c2p.len(), 1);
    assert_eq!(p2c.len(), 1);
    assert_eq!(c2p[0].tool.as_deref(), Some("get_file_history"));
    assert_eq!(p2c[0].id.as_deref(), Some("4"));
    assert_eq!(p2c[0].method.as_deref(), Some("tools/call"));
    assert!(log
        .dir(Direction::C2s)
        .iter()
        .all(|f| f.id.as_deref() != Some("4")));
    // The rewritten list: the client's bytes in `raw`, the server's in `server_raw`.
    let list = log
        .dir(Direction::S2c)
        .into_iter()
        .find(|f| f.method.as_deref() == Some("tools/list"))
        .unwrap();
    let original: Value = serde_json::from_str(list.server_raw.as_deref().unwrap()).unwrap();
    assert_eq!(names(&original), ["echo", "read_file"]);
    assert_eq!(
        list.raw.as_deref().map(str::len),
        Some(list.bytes as usize - 1)
    );
    assert_eq!(log.trailer.frames_unlogged, 0);
    assert_eq!(log.trailer.frames_relayed.c2s, 3);
    // The source names the read's response frame in this log.
    assert_eq!(history["versions"][0]["seq"], json!(by_seq_of_read(&log)));
}

fn by_seq_of_read(log: &crate::support::log::Log) -> u64 {
    log.dir(Direction::S2c)
        .into_iter()
        .find(|f| f.tool.as_deref() == Some("read_file"))
        .unwrap()
        .seq
}

#[test]
fn inject_build_context_offers_only_that_tool() {
    let input = [handshake(), request(2, "tools/list", json!({}))].concat();
    let run = ProxyCmd::fixture(&server_steps(&[]))
        .option(&["--inject", "build_context"])
        .run(input.as_bytes());
    let out = lines(&run.stdout);
    assert_eq!(
        names(by_id(&out, 2)),
        ["echo", "read_file", "build_context"]
    );
}

#[test]
fn a_name_the_server_uses_is_not_shadowed() {
    let steps = vec![
        format!("method-result:initialize:{}", init_result(true)),
        format!(
            "method-result:tools/list:{}",
            tools_result(&["build_context"], None)
        ),
        r#"method-result:tools/call:{"content":[{"type":"text","text":"the server's own"}]}"#
            .into(),
        "respond".into(),
    ];
    let cmd = ProxyCmd::fixture(&steps);
    let (out, stderr) = converse(
        &cmd,
        &[
            handshake(),
            request(2, "tools/list", json!({})),
            call(3, "build_context", json!({"task": "x"})),
            call(
                4,
                "ctxopt_build_context",
                json!({"task": "find the server's answer"}),
            ),
        ],
    );
    let listed = names(by_id(&out, 2));
    assert_eq!(listed[0], "build_context");
    assert!(listed.contains(&"ctxopt_build_context".to_string()));
    assert!(
        stderr.contains("ours is offered as `ctxopt_build_context`"),
        "{stderr}"
    );
    assert_eq!(
        by_id(&out, 3)["result"]["content"][0]["text"],
        "the server's own"
    );
    assert!(by_id(&out, 4)["result"]["structuredContent"]["context"].is_string());
    let log = read_log(cmd.log_path());
    assert_eq!(
        log.dir(Direction::C2p)[0].tool.as_deref(),
        Some("ctxopt_build_context")
    );
    assert!(log
        .dir(Direction::C2s)
        .iter()
        .any(|f| f.tool.as_deref() == Some("build_context")));
}

#[test]
fn a_server_without_tools_gets_the_capability_and_the_proxy_lists_them() {
    let steps = vec![
        format!("method-result:initialize:{}", init_result(false)),
        "respond".into(),
    ];
    let cmd = ProxyCmd::fixture(&steps);
    let mut session = Session::start(&cmd);
    session.send(handshake().as_bytes());
    let init: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": false})
    );
    assert_eq!(init["result"]["capabilities"]["prompts"], json!({}));
    session.send(request(2, "tools/list", json!({})).as_bytes());
    let list: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(names(&list), SIX);
    // The stateless revision: stamped like any 2026-07-28 result.
    let meta = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}});
    session.send(request(3, "tools/list", meta).as_bytes());
    let modern: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(modern["result"]["resultType"], "complete");
    assert_eq!(modern["result"]["cacheScope"], "private");
    let (_, status) = session.close();
    assert!(status.success());
    let log = read_log(cmd.log_path());
    assert!(log
        .dir(Direction::C2s)
        .iter()
        .all(|f| f.method.as_deref() != Some("tools/list")));
    assert_eq!(log.dir(Direction::P2c).len(), 2);
    let init_frame = &log.dir(Direction::S2c)[0];
    assert!(init_frame
        .server_raw
        .as_deref()
        .unwrap()
        .contains("prompts"));
}

#[test]
fn only_the_last_page_is_extended() {
    let page1 = tools_result(&["a", "b"], Some("p2"));
    let steps = vec![
        format!("method-result:tools/list:{page1}"),
        format!(
            "method-result:tools/list@p2:{}",
            tools_result(&["get_decisions"], None)
        ),
        "respond".into(),
    ];
    let input = [
        request(1, "tools/list", json!({})),
        request(2, "tools/list", json!({"cursor": "p2"})),
    ]
    .concat();
    let run = ProxyCmd::fixture(&steps).run(input.as_bytes());
    let text = String::from_utf8(run.stdout.clone()).unwrap();
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        format!(r#"{{"jsonrpc":"2.0","id":1,"result":{page1}}}"#),
        "an earlier page is relayed as it is"
    );
    let out = lines(&run.stdout);
    let last = names(by_id(&out, 2));
    assert_eq!(last[0], "get_decisions");
    assert_eq!(last.len(), 7);
    assert!(last.contains(&"ctxopt_get_decisions".to_string()));
}

#[test]
fn after_list_changed_the_next_list_is_extended_again() {
    let changed = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;
    let steps = vec![
        format!("method-result:tools/list#1:{}", tools_result(&["a"], None)),
        format!(
            "method-result:tools/list#2:{}",
            tools_result(&["a", "search_context"], None)
        ),
        format!("notify-after:tools/list:{changed}"),
        "respond".into(),
    ];
    let cmd = ProxyCmd::fixture(&steps);
    let mut session = Session::start(&cmd);
    session.send(request(1, "tools/list", json!({})).as_bytes());
    let first: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(names(&first).len(), 7);
    let note: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(note["method"], "notifications/tools/list_changed");
    session.send(request(2, "tools/list", json!({})).as_bytes());
    let second: Value = serde_json::from_slice(&session.recv()).unwrap();
    let listed = names(&second);
    assert_eq!(listed.len(), 8);
    assert!(listed.contains(&"ctxopt_search_context".to_string()));
    // The renamed tool is now the one the proxy answers.
    session.send(call(3, "ctxopt_search_context", json!({"query": "anything"})).as_bytes());
    let _ = session.recv(); // the list_changed after the second list
    let answer: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(answer["id"], 3);
    assert!(answer["result"]["structuredContent"]["hits"].is_array());
    session.close();
}

#[test]
fn a_cancelled_injected_call_gets_no_answer_and_the_server_never_hears_of_it() {
    let cmd = ProxyCmd::fixture(&["respond"]).option(&["--answer-delay-ms", "400"]);
    let mut session = Session::start(&cmd);
    session.send(call(5, "build_context", json!({"task": "anything"})).as_bytes());
    session.send(
        (r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5,"reason":"user"}}"#.to_string() + "\n").as_bytes(),
    );
    session.send(request(6, "ping", json!({})).as_bytes());
    let ping: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(ping["id"], 6);
    // The proxy writes every answer under way before it exits: had one been sent, it
    // would be in what is left of its output.
    let (rest, status) = session.close();
    assert!(status.success());
    assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    let log = read_log(cmd.log_path());
    let c2p: Vec<_> = log.dir(Direction::C2p);
    assert_eq!(c2p.len(), 2);
    assert_eq!(c2p[1].method.as_deref(), Some("notifications/cancelled"));
    assert!(log.dir(Direction::P2c).is_empty());
    assert_eq!(
        log.dir(Direction::C2s).len(),
        1,
        "only the ping reached the server"
    );
}

#[test]
fn a_store_that_cannot_open_never_stops_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    let corrupt = dir.path().join("store.sqlite3");
    std::fs::write(&corrupt, vec![0x5a; 8192]).unwrap();
    let input = [
        call(1, "echo", json!({})),
        call(2, "build_context", json!({"task": "x"})),
    ]
    .concat();
    let run = ProxyCmd::fixture(&["respond"])
        .option(&["--store".as_ref(), corrupt.as_os_str()])
        .run(input.as_bytes());
    assert!(run.status.success());
    let out = lines(&run.stdout);
    assert_eq!(by_id(&out, 1)["result"], json!({}));
    assert_eq!(by_id(&out, 2)["result"]["isError"], true);
    assert_eq!(
        run.stderr
            .matches("relaying continues without the store")
            .count(),
        1,
        "{}",
        run.stderr
    );
    let log = read_log(&run.log);
    assert!(
        log.trailer
            .errors
            .iter()
            .any(|e| e.starts_with("store: 1 write(s) failed")),
        "{:?}",
        log.trailer.errors
    );
}

#[test]
fn the_stateless_revision_discovers_tools_and_gets_stamped_answers() {
    let discover = json!({"supportedVersions": ["2026-07-28"], "capabilities": {"prompts": {}},
        "resultType": "complete"});
    let steps = vec![
        format!("method-result:server/discover:{discover}"),
        "respond".into(),
    ];
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let cmd = ProxyCmd::fixture(&steps);
    let (out, _) = converse(
        &cmd,
        &[
            request(1, "server/discover", json!({"_meta": meta})),
            request(
                2,
                "tools/call",
                json!({"name": "get_decisions", "arguments": {}, "_meta": meta}),
            ),
        ],
    );
    let discovered = &by_id(&out, 1)["result"];
    assert_eq!(
        discovered["capabilities"]["tools"],
        json!({"listChanged": false})
    );
    assert_eq!(discovered["resultType"], "complete");
    let answer = &by_id(&out, 2)["result"];
    assert_eq!(answer["resultType"], "complete");
    assert_eq!(answer["structuredContent"], json!({"decisions": []}));
    let log = read_log(cmd.log_path());
    let p2c = log.dir(Direction::P2c);
    let dirs: Vec<_> = log
        .frames
        .iter()
        .map(|f| (f.dir, f.method.clone()))
        .collect();
    assert_eq!(p2c.len(), 1, "{dirs:?}");
    assert_eq!(p2c[0].protocol.as_deref(), Some("2026-07-28"));
}

/// `calls` pipelined `tools/call` requests to the fixture's `echo_tool`.
fn many_calls(calls: u64) -> String {
    (0..calls)
        .map(|k| call(k, "echo_tool", json!({"k": k})))
        .collect()
}

#[test]
fn four_proxies_on_one_store_store_every_result_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let input = many_calls(1000);
    let runs: Vec<_> = (0..4)
        .map(|_| {
            let cmd = ProxyCmd::fixture(&["respond"]).option(&[
                "--store".as_ref(),
                store.as_os_str(),
                "--workspace".as_ref(),
                dir.path().as_os_str(),
                "--tokenizer".as_ref(),
                "chars/4".as_ref(),
            ]);
            let input = input.clone();
            std::thread::spawn(move || cmd.run(input.as_bytes()))
        })
        .collect();
    for run in runs {
        let run = run.join().unwrap();
        assert!(run.status.success(), "{}", run.stderr);
        assert_eq!(read_log(&run.log).trailer.errors, Vec::<String>::new());
    }
    let workspace = dir.path().canonicalize().unwrap().display().to_string();
    let stored = ctxopt::store::Store::open_path(&store).unwrap();
    assert_eq!(stored.count(&workspace).unwrap(), 4000);
}

#[test]
fn a_proxy_killed_mid_ingest_leaves_a_store_the_next_run_uses() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let options = [
        "--store".as_ref(),
        store.as_os_str(),
        "--workspace".as_ref(),
        dir.path().as_os_str(),
    ];
    let cmd = ProxyCmd::fixture(&["respond"]).option(&options);
    let mut session = Session::start(&cmd);
    session.send(many_calls(2000).as_bytes());
    // Some results are in once the first answers come back; kill while the rest flow.
    let _ = session.recv();
    session.kill();
    let stored = ctxopt::store::Store::open_path(&store).unwrap();
    stored.check_integrity().unwrap();
    let next = ProxyCmd::fixture(&["respond"])
        .option(&options)
        .run(call(1, "echo_tool", json!({})).as_bytes());
    assert!(next.status.success(), "{}", next.stderr);
    assert_eq!(lines(&next.stdout)[0]["result"], json!({}));
    let log = read_log(&next.log);
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
}

#[test]
fn a_store_another_process_holds_locked_delays_neither_the_server_nor_the_relay() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let holder = locked_store(&path);
    let cmd = ProxyCmd::fixture(&["respond"]).option(&["--store".as_ref(), path.as_os_str()]);
    let mut session = Session::start(&cmd);
    // Answered by the server while the store is still locked: its start and the relay
    // did not wait for the store.
    session.send(request(1, "ping", json!({})).as_bytes());
    let ping: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(ping["id"], 1);
    holder.execute_batch("COMMIT").unwrap();
    drop(holder);
    // Once the lock clears, the store opens and the injected tools work from it.
    session.send(call(2, "get_decisions", json!({})).as_bytes());
    let answer: Value = serde_json::from_slice(&session.recv()).unwrap();
    assert_eq!(answer["id"], 2);
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let (_, status, stderr) = session.close_with_stderr();
    assert!(status.success());
    assert!(!stderr.contains("without the store"), "{stderr}");
}
