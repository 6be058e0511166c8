//! A tool call that runs as a task (the tasks API of the TypeScript SDK, SEP-1686), against
//! server-everything's `simulate-research-query`, direct and through the proxy: the
//! `tools/call` is answered with a task handle, the client polls `tasks/get` and fetches the
//! result with `tasks/result`. The log carries the task on every frame about it, and
//! `ctxopt report` accounts the whole call to the tool when the task's result comes.

use std::ffi::OsString;

use ctxopt::framelog::{Direction, FrameKind};

use super::peers::{fixture_tree, Peers, Server};
use super::session::{proxied, run_driver};
use crate::revision::{member_tokens, report, tool_report};
use crate::support::log::read_log;

const TOOL: &str = "simulate-research-query";

#[test]
fn ts_sdk_task_call_is_accounted_to_its_tool_when_the_task_completes() {
    let Some(peers) = Peers::locate() else { return };
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let server = peers.server_command(Server::Everything, &fixture_tree());
    let driver = |target: Vec<OsString>| {
        let mut command: Vec<OsString> = vec![
            "node".into(),
            peers.dir.join("ts_task_client.mjs").into(),
            TOOL.into(),
            r#"{"topic":"tides"}"#.into(),
            "--".into(),
        ];
        command.extend(target);
        run_driver(&command, &[])
    };
    let (direct, through) = std::thread::scope(|s| {
        let direct = s.spawn(|| driver(server.clone()));
        let through = s.spawn(|| driver(proxied(&server, &log_path)));
        (direct.join().unwrap(), through.join().unwrap())
    });
    assert_eq!(
        direct.json["result"]["content"],
        through.json["result"]["content"]
    );
    // The same events in the same order; how many times the client polled the task's status
    // depends on timing (the two runs race each other), so runs of one event count once.
    let events = |v: &serde_json::Value| {
        let mut events: Vec<String> = v
            .as_array()
            .expect("the events")
            .iter()
            .map(|e| e.as_str().unwrap_or_default().to_string())
            .collect();
        events.dedup();
        events
    };
    assert_eq!(
        events(&direct.json["events"]),
        events(&through.json["events"])
    );
    let task = through.json["taskId"].as_str().expect("a task was created");

    let log = read_log(&log_path);
    log.assert_trailer_consistent();
    let call = log
        .dir(Direction::C2s)
        .into_iter()
        .find(|f| f.tool.as_deref() == Some(TOOL))
        .expect("the call");
    let about: Vec<_> = log
        .frames
        .iter()
        .filter(|f| f.seq >= call.seq && f.kind != FrameKind::Notification)
        .filter(|f| {
            f.method.as_deref().is_some_and(|m| m.starts_with("tasks/"))
                || f.tool.as_deref() == Some(TOOL)
        })
        .collect();
    let methods: Vec<&str> = about.iter().filter_map(|f| f.method.as_deref()).collect();
    assert!(methods.contains(&"tasks/get"), "{methods:?}");
    assert_eq!(methods.last(), Some(&"tasks/result"));
    for f in &about[1..] {
        assert_eq!(
            f.task.as_deref(),
            Some(task),
            "seq {} {:?}",
            f.seq,
            f.method
        );
    }

    let report = report(&log_path);
    let research = tool_report(&report, TOOL);
    assert_eq!(research["calls"], 1);
    assert_eq!(research["answered"], 1);
    let tokens: u64 = about
        .iter()
        .map(|f| {
            member_tokens(
                f,
                if f.dir == Direction::C2s {
                    "params"
                } else {
                    "result"
                },
            )
        })
        .sum();
    assert_eq!(research["call_tokens"]["total"], tokens);
    let answer = about[1];
    assert!(
        tokens > member_tokens(call, "params") + member_tokens(answer, "result"),
        "canary: the polls and the result count"
    );
    let ts = |f: &ctxopt::framelog::Frame| chrono::DateTime::parse_from_rfc3339(&f.ts).unwrap();
    let whole = (ts(about.last().unwrap()) - ts(call))
        .num_microseconds()
        .unwrap() as u64;
    assert_eq!(research["latency"]["max_us"], whole);
    assert!(
        whole > answer.latency_us.unwrap(),
        "canary: longer than the handle's answer"
    );
}
