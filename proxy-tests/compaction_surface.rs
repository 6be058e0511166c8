//! The tool surface evidence (issue 12, item 5): `ctxopt audit` counts a listing with and
//! without the tools `--hide-tools`/`--only-tools` take out (given to `audit`, or read from
//! a log where the proxy hid them), and `ctxopt report` lists the tools a set of sessions
//! never called with what they cost per session. On the recorded logs of `frame-logs/` and a
//! live session with the real server-filesystem.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxopt::measure::audit::{audit, tool_tokens};
use ctxopt::measure::report::{self, text};
use ctxopt::measure::toollist;
use ctxopt::tokenizer::Tokenizer;
use serde_json::{json, Value};

use crate::support::command::run_ok;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn recorded(name: &str) -> PathBuf {
    repo().join("frame-logs").join(name)
}

fn audit_json(args: &[&std::ffi::OsStr]) -> Value {
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["audit", "--format", "json"])
            .args(args),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The tokens of a listing made of `tools` alone, counted by auditing it as a capture: the
/// figure a proxy hiding the others would put in front of the client.
fn listing_tokens(tools: Vec<Value>) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("shown.jsonl");
    std::fs::write(&capture, format!("{}\n", json!({"tools": tools}))).unwrap();
    audit_json(&["--capture".as_ref(), capture.as_os_str()])["total_tokens"]
        .as_u64()
        .unwrap()
}

fn names(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect()
}

#[test]
fn audit_counts_a_recorded_listing_with_and_without_the_tools_given() {
    let log = recorded("ts-filesystem.jsonl");
    let hide = "write_file,edit_file,move_file,create_directory";
    let report = audit_json(&[
        "--log".as_ref(),
        log.as_os_str(),
        "--hide-tools".as_ref(),
        hide.as_ref(),
    ]);
    let surface = &report["surface"];
    assert_eq!(surface["source"], "--hide-tools");
    assert_eq!(
        names(&surface["hidden"]),
        ["write_file", "edit_file", "create_directory", "move_file"],
        "in wire order"
    );
    assert_eq!(surface["shown_count"], 10);
    let listing = toollist::from_frame_log(&log).unwrap();
    let hidden = hide.split(',').collect::<Vec<_>>();
    let shown: Vec<Value> = listing
        .tools
        .iter()
        .filter(|t| !hidden.contains(&t["name"].as_str().unwrap()))
        .cloned()
        .collect();
    assert_eq!(
        surface["shown_tokens"].as_u64().unwrap(),
        listing_tokens(shown)
    );
    let total = report["total_tokens"].as_u64().unwrap();
    assert_eq!(
        surface["saved_tokens"].as_u64().unwrap(),
        total - surface["shown_tokens"].as_u64().unwrap()
    );
    assert!(surface["saved_tokens"].as_u64().unwrap() > 0);

    // --only-tools hides the rest; a name the server does not list is said.
    let only = audit_json(&[
        "--log".as_ref(),
        log.as_os_str(),
        "--only-tools".as_ref(),
        "read_text_file,list_directory,no_such_tool".as_ref(),
    ]);
    assert_eq!(only["surface"]["source"], "--only-tools");
    assert_eq!(only["surface"]["shown_count"], 2);
    assert_eq!(only["surface"]["hidden"].as_array().unwrap().len(), 12);
    assert!(
        only["warnings"]
            .to_string()
            .contains("the server lists no tool named no_such_tool"),
        "{}",
        only["warnings"]
    );
    // Without the options, nothing is hidden in this log: no surface member.
    let plain = audit_json(&["--log".as_ref(), log.as_os_str()]);
    assert!(plain.get("surface").is_none());
}

#[test]
fn audit_table_with_hidden_tools_snapshot() {
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["audit", "--log"])
            .arg(recorded("ts-filesystem.jsonl"))
            .args([
                "--hide-tools",
                "write_file,edit_file,move_file,create_directory",
            ]),
    );
    insta::assert_snapshot!(
        "audit_table_hidden_tools",
        String::from_utf8(out.stdout).unwrap()
    );
}

/// Over the four recorded sessions: every tool offered and never called is listed with the
/// tokens of its definition (as `audit` counts that tool), every tool called is not.
#[test]
fn report_lists_the_tools_a_set_of_recorded_sessions_never_called() {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(repo().join("frame-logs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    logs.sort();
    assert_eq!(logs.len(), 4);
    let r = report::collect(&logs).unwrap();
    assert!(
        !r.never_called.is_empty(),
        "canary: some tools are never called"
    );
    let fs: Vec<&str> = r
        .never_called
        .iter()
        .filter(|n| n.server_name == "filesystem")
        .map(|n| n.tool.as_str())
        .collect();
    assert_eq!(
        fs,
        [
            "create_directory",
            "edit_file",
            "get_file_info",
            "move_file",
            "read_file",
            "read_media_file",
            "write_file"
        ]
    );
    let listing = toollist::from_frame_log(&recorded("ts-filesystem.jsonl")).unwrap();
    for row in r
        .never_called
        .iter()
        .filter(|n| n.server_name == "filesystem")
    {
        let def = listing
            .tools
            .iter()
            .find(|t| t["name"] == row.tool.as_str())
            .unwrap();
        let tokens = tool_tokens(def, Tokenizer::O200kBase) as u64;
        assert_eq!(
            (row.sessions, row.tokens_per_session, row.total_tokens),
            (1, tokens, tokens),
            "{}",
            row.tool
        );
        assert_eq!(
            audit(&listing, Tokenizer::O200kBase)
                .tools
                .iter()
                .find(|t| t.name == row.tool)
                .unwrap()
                .tokens as u64,
            tokens,
            "the same count as audit's"
        );
    }
    for server in &r.servers {
        for tool in server.tools.iter().filter(|t| t.calls > 0) {
            assert!(
                !r.never_called
                    .iter()
                    .any(|n| n.server_name == server.name && n.tool == tool.tool),
                "{} was called",
                tool.tool
            );
        }
    }
    insta::assert_snapshot!(
        "report_never_called_recorded",
        text::render(&r, text::Style::Markdown)
    );
}

/// A live session: the real server-filesystem behind `ctxopt-proxy --hide-tools`, listed and
/// called by the Python SDK client. The client never sees the hidden tools; `audit --log`
/// finds them in the log and counts the listing without them exactly as `audit
/// --hide-tools` does; `report` does not count them as offered.
#[test]
fn audit_and_report_read_the_tools_the_proxy_hid_from_its_log() {
    let Some(python) = crate::bridge::serve::python() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let (log, store) = (
        dir.path().join("frames.jsonl"),
        dir.path().join("store.sqlite3"),
    );
    let hide = "write_file,edit_file,move_file";
    let options = ["--inject", "none", "--hide-tools", hide];
    let command = crate::bridge::filesystem::proxy_command(&log, &store, &project, &options);
    let command: Vec<&std::ffi::OsStr> = command.iter().map(|a| a.as_os_str()).collect();
    let seen = crate::bridge::filesystem::run_calls(
        &python,
        json!([["tools/list", {}], ["list_allowed_directories", {}]]),
        &command,
    );
    let offered = names(&seen[0]["tools"]);
    for hidden in hide.split(',') {
        assert!(!offered.contains(&hidden), "{hidden} offered: {offered:?}");
    }
    assert!(offered.contains(&"read_text_file"));

    let from_log = audit_json(&["--log".as_ref(), log.as_os_str()]);
    let surface = &from_log["surface"];
    assert_eq!(surface["source"], "frame-log");
    let mut hidden = names(&surface["hidden"]);
    hidden.sort_unstable();
    assert_eq!(hidden, ["edit_file", "move_file", "write_file"]);
    assert_eq!(
        from_log["tool_count"].as_u64().unwrap(),
        offered.len() as u64 + 3,
        "the server's whole list is audited"
    );
    let asked = audit_json(&[
        "--log".as_ref(),
        log.as_os_str(),
        "--hide-tools".as_ref(),
        hide.as_ref(),
    ]);
    for figure in ["shown_count", "shown_tokens", "saved_tokens"] {
        assert_eq!(surface[figure], asked["surface"][figure], "{figure}");
    }

    let r = report::collect(std::slice::from_ref(&log)).unwrap();
    let never: Vec<&str> = r.never_called.iter().map(|n| n.tool.as_str()).collect();
    assert!(never.contains(&"read_text_file"), "{never:?}");
    for tool in hide.split(',').chain(["list_allowed_directories"]) {
        assert!(!never.contains(&tool), "{tool} in {never:?}");
    }
}
