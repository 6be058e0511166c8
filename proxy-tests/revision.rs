//! The 2026-07-28 revision through the proxy, on the stdio path: an `input_required` result
//! relayed whole and its retry paired with it; a tool call answered with a task handle
//! accounted to its tool when the task's result comes; `subscriptions/listen`
//! notifications logged under their subscription; an extended `tools/list` that keeps
//! `ttlMs` and `cacheScope`. The server's frames here are hand-written from the
//! specification, in the shapes of the Python SDK's `mcp_types` (2.3.0): they cover what the
//! pinned SDK peers do not send (an `input_required` result that also holds long text, a
//! 2026-07-28 task handle with `resultType: "task"`, a `tasks/get` that ends the call without
//! `tasks/result`). The real SDKs run the same features in `interop::revision_peers` (Python
//! SDK: `input_required`, `subscriptions/listen`) and `interop::tasks` (TypeScript SDK tasks).

use std::path::Path;
use std::process::Command;

use ctxopt::framelog::{Direction, Frame, FrameKind};
use serde_json::{json, Value};

use crate::support::log::{read_log, Log};
use crate::support::proxy::{ProxyCmd, Session};

const MODERN: &str = "2026-07-28";

/// A 2026-07-28 request frame (`_meta` names the revision and the client).
fn request(id: u64, method: &str, mut params: Value) -> String {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "revision-test", "version": "1"},
    });
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string() + "\n"
}

/// The frame the client received with `id`.
fn received(stdout: &[u8], id: u64) -> String {
    String::from_utf8_lossy(stdout)
        .lines()
        .find(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v["id"] == id))
        .unwrap_or_else(|| panic!("no answer {id}"))
        .to_string()
}

fn frames<'a>(log: &'a Log, dir: Direction, method: &str) -> Vec<&'a Frame> {
    log.dir(dir)
        .into_iter()
        .filter(|f| f.method.as_deref() == Some(method))
        .collect()
}

/// Sends each request in turn, waiting for its answer (a client retries or polls only
/// after it read the answer before); returns the answers as the client got them.
fn converse(cmd: &ProxyCmd, requests: &[String]) -> Vec<String> {
    let mut s = Session::start(cmd);
    let answers = requests
        .iter()
        .map(|r| {
            s.send(r.as_bytes());
            let line = String::from_utf8(s.recv()).expect("UTF-8");
            line.trim_end().to_string()
        })
        .collect();
    let (_, status) = s.close();
    assert!(status.success(), "{status:?}");
    answers
}

/// `ctxopt report --format json` of one log.
pub(crate) fn report(log: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .args(["report", "--format", "json"])
        .arg(log)
        .output()
        .expect("run ctxopt report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("report JSON")
}

/// The report's entry for the server tool `tool`.
pub(crate) fn tool_report<'a>(report: &'a Value, tool: &str) -> &'a Value {
    report["servers"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["tools"].as_array().into_iter().flatten())
        .find(|t| t["tool"] == tool && t["origin"] == "server")
        .unwrap_or_else(|| panic!("no tool {tool} in {report}"))
}

/// Tokens of a frame's member `name` (`params`, `result`), as the report counts a call.
pub(crate) fn member_tokens(frame: &Frame, name: &str) -> u64 {
    let v: Value = serde_json::from_str(frame.raw.as_deref().unwrap()).unwrap();
    let text = v[name].to_string();
    // The report counts the member's text as it is on the wire; these frames are compact
    // JSON written by serde_json, so re-serializing gives the same text.
    assert!(frame.raw.as_deref().unwrap().contains(&text));
    ctxopt::tokenizer::Tokenizer::O200kBase.count(&text) as u64
}

#[test]
fn an_input_required_result_is_relayed_whole_and_its_retry_pairs_with_it() {
    let dir = tempfile::tempdir().unwrap();
    // Long enough to be compacted were it a final result.
    let text = "the form needs a name and a date of birth\n".repeat(300);
    let state = format!("v3.{}", "QUJD".repeat(120));
    let first = json!({
        "resultType": "input_required",
        "content": [{"type": "text", "text": text}],
        "inputRequests": {"who": {"method": "elicitation/create", "params": {
            "mode": "form", "message": "Who is asking?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}},
        "requestState": state,
    });
    let done = json!({"resultType": "complete",
                      "content": [{"type": "text", "text": "registered Ada"}]});
    let steps = [
        format!(
            "method-result:tools/list:{}",
            json!({"tools": [{"name": "register", "inputSchema": {"type": "object"}}],
                   "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        ),
        format!("method-result:tools/call#1:{first}"),
        format!("method-result:tools/call#2:{done}"),
        "respond".into(),
    ];
    let store = dir.path().join("store.sqlite3");
    let cmd = ProxyCmd::fixture(&steps).option(&[
        "--compact-results".to_string(),
        "200".into(),
        "--store".into(),
        store.display().to_string(),
        "--workspace".into(),
        dir.path().display().to_string(),
        "--inject".into(),
        "none".into(),
    ]);
    let args = json!({"form": "visitor"});
    let retry = json!({"name": "register", "arguments": args,
                       "inputResponses": {"who": {"action": "accept", "content": {"name": "Ada"}}},
                       "requestState": state});
    let client = converse(
        &cmd,
        &[
            request(1, "tools/list", json!({})),
            request(
                2,
                "tools/call",
                json!({"name": "register", "arguments": args}),
            ),
            request(3, "tools/call", retry),
        ],
    );

    let log = read_log(cmd.log_path());
    let answers = frames(&log, Direction::S2c, "tools/call");
    assert_eq!(answers.len(), 2);
    let (round, last) = (answers[0], answers[1]);
    // The client got the server's bytes: nothing compacted, `requestState` untouched.
    assert_eq!(client[1], round.raw.as_deref().unwrap());
    let got: Value = serde_json::from_str(&client[1]).unwrap();
    assert_eq!(got["result"]["requestState"], state.as_str());
    assert_eq!(round.result_type.as_deref(), Some("input_required"));
    assert!(round.left_whole.is_none());
    assert!(log.dir(Direction::P2c).is_empty(), "nothing compacted");
    assert_eq!(last.result_type, None, "complete is not written");
    // The retry names the answer it retries; the first request names none.
    let calls = frames(&log, Direction::C2s, "tools/call");
    assert_eq!(calls[0].retries, None);
    assert_eq!(calls[1].retries, Some(round.seq));

    // The report counts one call of two rounds: every round's tokens, from the first request
    // to the last answer.
    let report = report(cmd.log_path());
    let register = tool_report(&report, "register");
    assert_eq!(register["calls"], 1);
    assert_eq!(register["answered"], 1);
    let tokens = member_tokens(calls[0], "params")
        + member_tokens(round, "result")
        + member_tokens(calls[1], "params")
        + member_tokens(last, "result");
    assert_eq!(register["call_tokens"]["total"], tokens);
    let one_round = member_tokens(calls[1], "params") + member_tokens(last, "result");
    assert!(tokens > one_round * 2, "canary: the rounds differ in size");
    assert_eq!(report["anomalies"]["unanswered_requests"], 0);
}

#[test]
fn a_call_answered_with_a_task_is_accounted_to_its_tool_when_the_task_completes() {
    let task = |status: &str| {
        json!({"taskId": "task-7", "status": status, "ttl": 60000,
               "createdAt": "2026-12-03T10:00:00Z", "lastUpdatedAt": "2026-12-03T10:00:01Z",
               "pollInterval": 10})
    };
    let handle = json!({"resultType": "task", "task": task("working")});
    let result = json!({"content": [{"type": "text", "text": "research summary: three sources agree"}],
                        "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "task-7"}}});
    let steps = [
        format!("method-result:tools/call:{handle}"),
        format!("method-result:tasks/get#1:{}", task("working")),
        format!("method-result:tasks/get#2:{}", task("completed")),
        format!("method-result:tasks/result:{result}"),
        "respond".into(),
    ];
    let cmd = ProxyCmd::fixture(&steps).option(&["--inject", "none"]);
    let poll = |id, method| request(id, method, json!({"taskId": "task-7"}));
    converse(
        &cmd,
        &[
            request(
                1,
                "tools/call",
                json!({"name": "research", "arguments": {"q": "tides"}, "task": {"ttl": 60000}}),
            ),
            poll(2, "tasks/get"),
            poll(3, "tasks/get"),
            poll(4, "tasks/result"),
        ],
    );

    let log = read_log(cmd.log_path());
    let call_answer = frames(&log, Direction::S2c, "tools/call")[0];
    assert_eq!(call_answer.result_type.as_deref(), Some("task"));
    assert_eq!(call_answer.task.as_deref(), Some("task-7"));
    for method in ["tasks/get", "tasks/result"] {
        for f in frames(&log, Direction::C2s, method)
            .into_iter()
            .chain(frames(&log, Direction::S2c, method))
        {
            assert_eq!(f.task.as_deref(), Some("task-7"), "{method} seq {}", f.seq);
        }
    }

    let report = report(cmd.log_path());
    let research = tool_report(&report, "research");
    assert_eq!(research["calls"], 1);
    assert_eq!(research["answered"], 1);
    let mut tokens = 0;
    for f in log.frames.iter() {
        tokens += member_tokens(
            f,
            if f.dir == Direction::C2s {
                "params"
            } else {
                "result"
            },
        );
    }
    assert_eq!(research["call_tokens"]["total"], tokens);
    // The latency runs from the call to the task's result.
    let first = chrono::DateTime::parse_from_rfc3339(&log.frames[0].ts).unwrap();
    let last = chrono::DateTime::parse_from_rfc3339(&log.frames.last().unwrap().ts).unwrap();
    let whole = (last - first).num_microseconds().unwrap() as u64;
    assert_eq!(research["latency"]["max_us"], whole);
    assert!(
        whole > call_answer.latency_us.unwrap(),
        "canary: longer than the call's own answer"
    );
}

#[test]
fn listen_notifications_are_logged_under_their_subscription() {
    let note = |method: &str, params: Value| {
        json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
    };
    let meta = json!({"io.modelcontextprotocol/subscriptionId": 5});
    let steps = [
        format!(
            "notify-after:subscriptions/listen:{}",
            note(
                "notifications/subscriptions/acknowledged",
                json!({"notifications": {"toolsListChanged": true}, "_meta": meta})
            )
        ),
        format!(
            "notify-after:tools/list:{}",
            note("notifications/tools/list_changed", json!({"_meta": meta}))
        ),
        format!(
            "notify-after:resources/list:{}",
            note(
                "notifications/message",
                json!({"level": "info", "data": "not on a stream"})
            )
        ),
        "respond".into(),
    ];
    let cmd = ProxyCmd::fixture(&steps).option(&["--inject", "none"]);
    let input = request(
        5,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    ) + &request(6, "tools/list", json!({}))
        + &request(7, "resources/list", json!({}));
    let run = cmd.run(input.as_bytes());
    assert!(run.status.success(), "{}", run.stderr);
    let log = read_log(&run.log);
    let listen = frames(&log, Direction::C2s, "subscriptions/listen")[0];
    let notes: Vec<(&str, Option<&str>)> = log
        .dir(Direction::S2c)
        .into_iter()
        .filter(|f| f.kind == FrameKind::Notification)
        .map(|f| (f.method.as_deref().unwrap(), f.subscription.as_deref()))
        .collect();
    assert_eq!(
        notes,
        [
            (
                "notifications/subscriptions/acknowledged",
                listen.id.as_deref()
            ),
            ("notifications/tools/list_changed", listen.id.as_deref()),
            ("notifications/message", None),
        ]
    );
}

#[test]
fn an_extended_tools_list_keeps_ttl_and_cache_scope_and_a_fixed_order() {
    let list = json!({"tools": [{"name": "zeta", "inputSchema": {"type": "object"}},
                                {"name": "alpha", "inputSchema": {"type": "object"}}],
                      "resultType": "complete", "ttlMs": 60000, "cacheScope": "shared"});
    let steps = [format!("method-result:tools/list:{list}"), "respond".into()];
    let input = request(1, "tools/list", json!({}));
    let run = || {
        let run = ProxyCmd::fixture(&steps).run(input.as_bytes());
        assert!(run.status.success(), "{}", run.stderr);
        run
    };
    let (one, two) = (run(), run());
    assert_eq!(
        one.stdout, two.stdout,
        "the extended list is the same bytes"
    );
    let got: Value = serde_json::from_str(&received(&one.stdout, 1)).unwrap();
    let result = got["result"].as_object().unwrap();
    assert_eq!(result["ttlMs"], 60000);
    assert_eq!(result["cacheScope"], "shared");
    assert_eq!(result["resultType"], "complete");
    let keys: Vec<&str> = result.keys().map(String::as_str).collect();
    assert_eq!(keys, ["tools", "resultType", "ttlMs", "cacheScope"]);
    let names: Vec<&str> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    // The server's tools in its order, then the injected ones.
    assert_eq!(names[..2], ["zeta", "alpha"]);
    assert!(names.len() > 2, "canary: the list was extended: {names:?}");
    let log = read_log(&one.log);
    assert!(frames(&log, Direction::S2c, "tools/list")[0]
        .server_raw
        .is_some());
}
