//! `ctxopt gap`: the canaries (a gap of 3 reads 3; a renamed client spelling does not
//! turn a gap into a clean zero; a colliding bare name is shown, not absorbed), the
//! `answered_without_tools` flag, and snapshots of every fixture.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxopt::measure::gap::{client, compare, read_wire, render_table, GapReport};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

fn gap(log: &str, client_file: &str) -> GapReport {
    let wire = read_wire(&fixture(&format!("frame-logs/{log}"))).unwrap();
    let text = std::fs::read_to_string(fixture(&format!("gap/{client_file}"))).unwrap();
    let calls = client::parse(&text, client::detect(&text)).unwrap();
    compare(&wire, &calls, &wire.server_name)
}

fn row<'a>(report: &'a GapReport, tool: &str) -> &'a ctxopt::measure::gap::ToolGap {
    report.tools.iter().find(|r| r.tool == tool).unwrap()
}

#[test]
fn a_gap_of_three_reads_three_for_both_clients() {
    for file in ["gemini-gap3.json", "claude-gap3.jsonl"] {
        let report = gap("gap-trial.jsonl", file);
        assert_eq!(report.gap, 3, "{file}");
        assert_eq!(row(&report, "read_text_file").gap, 2, "{file}");
        assert_eq!(row(&report, "list_directory").gap, 1, "{file}");
        assert_eq!(row(&report, "write_file").gap, 0, "{file}");
        assert!(!report.clean && !report.answered_without_tools);
    }
}

#[test]
fn formats_are_detected() {
    let gemini = std::fs::read_to_string(fixture("gap/gemini-gap3.json")).unwrap();
    let claude = std::fs::read_to_string(fixture("gap/claude-gap3.jsonl")).unwrap();
    assert_eq!(client::detect(&gemini), client::ClientFormat::GeminiJson);
    assert_eq!(
        client::detect(&claude),
        client::ClientFormat::ClaudeStreamJson
    );
    let calls = client::parse(&claude, client::ClientFormat::ClaudeStreamJson).unwrap();
    assert_eq!(calls.version.as_deref(), Some("2.0.14"));
    assert_eq!(calls.by_name.values().sum::<u64>(), 8);
}

#[test]
fn a_renamed_spelling_keeps_the_gap() {
    // The same trial reported by an older Gemini CLI (`fs__tool`) and a newer one
    // (`mcp_fs_tool`): both read 3, in different labelled columns.
    let old = gap("gap-trial.jsonl", "gemini-legacy-gap3.json");
    let new = gap("gap-trial.jsonl", "gemini-gap3.json");
    assert_eq!((old.gap, new.gap), (3, 3));
    assert_eq!(row(&old, "read_text_file").gemini_legacy_qualified, 3);
    assert_eq!(row(&old, "read_text_file").gemini_qualified, 0);
    assert_eq!(row(&new, "read_text_file").gemini_qualified, 3);
    // A spelling nobody knows yet cannot be attributed, but it is never called clean.
    let unknown = gap("gap-trial.jsonl", "gemini-unknown-spelling.json");
    assert!(!unknown.clean);
    assert_eq!(unknown.strays.len(), 3);
    assert!(unknown.strays.iter().all(|s| s.resembles.is_some()));
    assert!(unknown
        .warnings
        .iter()
        .any(|w| w.contains("fs.read_text_file")));
}

#[test]
fn a_colliding_bare_name_is_shown_not_absorbed() {
    // Gemini CLI's built-in `list_directory` was called twice; the server also
    // advertises `list_directory`. The bare calls get their own column and a warning;
    // they change neither the attributed count nor the gap.
    let report = gap("gap-trial.jsonl", "gemini-gap3.json");
    let list = row(&report, "list_directory");
    assert_eq!((list.bare, list.attributed, list.gap), (2, 2, 1));
    assert_eq!(list.gap_with_bare, 3);
    assert_eq!((report.gap, report.gap_with_bare), (3, 5));
    assert!(report
        .warnings
        .iter()
        .any(|w| w.contains("list_directory (2×)")));
}

#[test]
fn strays_are_listed_apart_with_reasons() {
    let report = gap("gap-trial.jsonl", "claude-gap3.jsonl");
    let reasons: Vec<(&str, &str)> = report
        .strays
        .iter()
        .map(|s| (s.name.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            ("Read", "never_advertised"),
            ("mcp__github__get_me", "other_server")
        ]
    );
    assert_eq!(report.attributed_calls, 6);
}

#[test]
fn zero_wire_calls_is_answered_without_tools() {
    let report = gap("gap-no-calls.jsonl", "gemini-no-calls.json");
    assert!(report.answered_without_tools);
    assert!(!report.clean);
    assert_eq!((report.wire_calls, report.gap), (0, 2));
}

#[test]
fn a_matching_trial_is_clean_and_exits_zero() {
    let report = gap("gap-trial.jsonl", "gemini-clean.json");
    assert!(report.clean);
    assert_eq!(report.gap, 0);
    let run = |client_file: &str| {
        Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["gap", "--log"])
            .arg(fixture("frame-logs/gap-trial.jsonl"))
            .arg("--client")
            .arg(fixture(&format!("gap/{client_file}")))
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(run("gemini-clean.json"), Some(0));
    assert_eq!(run("gemini-gap3.json"), Some(1));
}

#[test]
fn server_name_option_changes_what_is_qualified() {
    let wire = read_wire(&fixture("frame-logs/gap-trial.jsonl")).unwrap();
    let text = std::fs::read_to_string(fixture("gap/gemini-gap3.json")).unwrap();
    let calls = client::parse(&text, client::ClientFormat::GeminiJson).unwrap();
    let report = compare(&wire, &calls, "filesystem");
    assert_eq!(
        report.attributed_calls, 0,
        "mcp_fs_* is not the spelling for `filesystem`"
    );
    assert!(report
        .strays
        .iter()
        .any(|s| s.name == "mcp_fs_read_text_file"));
}

#[test]
fn snapshots() {
    for (log, file) in [
        ("gap-trial.jsonl", "gemini-gap3.json"),
        ("gap-trial.jsonl", "gemini-legacy-gap3.json"),
        ("gap-trial.jsonl", "gemini-unknown-spelling.json"),
        ("gap-trial.jsonl", "gemini-clean.json"),
        ("gap-trial.jsonl", "claude-gap3.jsonl"),
        ("gap-no-calls.jsonl", "gemini-no-calls.json"),
    ] {
        let report = gap(log, file);
        let name = file.split('.').next().unwrap();
        insta::assert_json_snapshot!(format!("gap_json_{name}"), report);
        insta::assert_snapshot!(format!("gap_table_{name}"), render_table(&report));
    }
}

/// A Claude Code stream-json output whose assistant called `names` (qualified for
/// `server`), one `tool_use` block each.
fn claude_output(server: &str, names: &[&str]) -> String {
    let mut out = serde_json::json!({"type": "system", "subtype": "init",
        "claude_code_version": "2.0.14", "tools": [], "mcp_servers": [{"name": server, "status": "connected"}]})
    .to_string();
    for (i, name) in names.iter().enumerate() {
        let event = serde_json::json!({"type": "assistant", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "id": format!("toolu_{i}"),
                         "name": format!("mcp__{server}__{name}"), "input": {}}]}});
        out.push('\n');
        out.push_str(&event.to_string());
    }
    out.push('\n');
    out
}

/// A real proxy session with the injected tools (and `get_result`, with compaction) listed:
/// the client called the server's `echo` and the proxy's `get_file_history` and
/// `get_result`.
fn session_with_injected_tools() -> crate::support::proxy::ProxyCmd {
    use crate::support::proxy::{ProxyCmd, Session};
    let tools = serde_json::json!({"tools": [
        {"name": "echo", "inputSchema": {"type": "object"}},
        {"name": "read_file", "inputSchema": {"type": "object"}}
    ]});
    let steps = [
        format!("method-result:tools/list:{tools}"),
        r#"method-result:tools/call:{"content":[{"type":"text","text":"hi"}]}"#.to_string(),
        "respond".to_string(),
    ];
    let cmd = ProxyCmd::fixture(&steps).option(&["--compact-results", "1000"]);
    let request = |id: u64, method: &str, params: serde_json::Value| {
        let mut line =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
                .to_string()
                .into_bytes();
        line.push(b'\n');
        line
    };
    let call = |id, name: &str, arguments| {
        request(
            id,
            "tools/call",
            serde_json::json!({"name": name, "arguments": arguments}),
        )
    };
    let mut s = Session::start(&cmd);
    s.send(&request(1, "tools/list", serde_json::json!({})));
    let listed = String::from_utf8(s.recv()).unwrap();
    assert!(listed.contains("\"get_result\"") && listed.contains("\"build_context\""));
    for (id, name, arguments) in [
        (2, "echo", serde_json::json!({"text": "hi"})),
        (3, "get_file_history", serde_json::json!({"path": "a.rs"})),
        (
            4,
            "get_result",
            serde_json::json!({"handle": "r_0000000000000000"}),
        ),
    ] {
        s.send(&call(id, name, arguments));
        s.recv();
    }
    let (_, status) = s.close();
    assert!(status.success());
    cmd
}

#[test]
fn the_proxys_own_tools_are_no_gap_and_a_real_gap_still_is() {
    let cmd = session_with_injected_tools();
    let wire = read_wire(cmd.log_path()).unwrap();
    let server = wire.server_name.clone();
    assert!(wire.injected.iter().any(|t| t == "get_result"));
    assert!(!wire.injected.iter().any(|t| t == "echo"));
    let report_for = |names: &[&str]| {
        let text = claude_output(&server, names);
        let calls = client::parse(&text, client::ClientFormat::ClaudeStreamJson).unwrap();
        compare(&wire, &calls, &server)
    };
    let report = report_for(&["echo", "get_file_history", "get_result"]);
    assert_eq!(report.gap, 0, "{}", render_table(&report));
    assert!(report.strays.is_empty(), "{:?}", report.strays);
    assert!(report.clean, "{}", render_table(&report));
    assert_eq!(
        report.advertised_tools, 2,
        "echo and read_file are the server's"
    );
    assert_eq!((report.wire_calls, report.proxy_calls), (1, 2));
    let history = row(&report, "get_file_history");
    assert!(history.injected && history.wire == 1 && history.gap == 0);
    // The proxy's tools never called are no gap either.
    assert_eq!(row(&report, "build_context").gap, 0);
    assert!(render_table(&report).contains("get_result (ctxopt-proxy's)"));
    // Canaries: a server call and a proxy call the wire never saw are gaps.
    let report = report_for(&["echo", "echo", "read_file", "get_result", "get_result"]);
    assert_eq!(report.gap, 3, "{}", render_table(&report));
    assert_eq!(row(&report, "echo").gap, 1);
    assert_eq!(row(&report, "read_file").gap, 1);
    assert_eq!(row(&report, "get_result").gap, 1);
    assert!(!report.clean);
}

#[test]
fn report_never_lists_the_proxys_own_tools_as_never_called() {
    let cmd = session_with_injected_tools();
    let report = ctxopt::measure::report::collect(&[cmd.log_path().to_path_buf()]).unwrap();
    let never: Vec<&str> = report
        .never_called
        .iter()
        .map(|n| n.tool.as_str())
        .collect();
    // Canary: the server's read_file was offered and never called.
    assert_eq!(never, ["read_file"]);
}
