//! `ctxopt audit`: the published figures reproduce exactly; snapshots of each capture;
//! both protocol eras and pagination against a scripted server; the real filesystem server.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxopt::measure::audit::{audit, render_table, AuditReport};
use ctxopt::measure::toollist;
use ctxopt::tokenizer::Tokenizer;
use serde_json::Value;

use crate::support::command::run_ok;
use crate::support::peers::peer;
use crate::support::proxy::ProxyCmd;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn captures_dir() -> PathBuf {
    repo().join("fixtures/real-world/tier1-tools-list")
}

fn captures() -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(captures_dir())
        .expect("fixtures/real-world/tier1-tools-list is readable")
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-wire.jsonl"))
        .map(|p| {
            let name = p
                .file_name()
                .unwrap()
                .to_string_lossy()
                .replace("-wire.jsonl", "");
            (name, p)
        })
        .collect();
    out.sort();
    out
}

fn audit_capture(path: &Path) -> AuditReport {
    let text = std::fs::read_to_string(path).unwrap();
    let mut listing = toollist::from_capture(&text).unwrap();
    listing.source = format!("capture:{}", path.file_name().unwrap().to_string_lossy());
    audit(&listing, Tokenizer::O200kBase)
}

fn published() -> Value {
    let text = std::fs::read_to_string(repo().join("fixtures/audit/published-o200k.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn published_totals_per_tool_figures_and_hashes_reproduce() {
    let published = published();
    let caps = captures();
    assert_eq!(caps.len(), 12, "twelve captures expected");
    for (name, path) in caps {
        let report = audit_capture(&path);
        let expected = &published["servers"][&name];
        assert!(expected.is_object(), "{name}: no published figures");
        let resolved = expected["counted_on"] == "ref_resolved";
        let (total, sha) = if resolved {
            (
                report.ref_resolved_total_tokens,
                &report.ref_resolved_sha256,
            )
        } else {
            (report.total_tokens, &report.canonical_sha256)
        };
        assert_eq!(
            total as u64,
            expected["total_tokens"].as_u64().unwrap(),
            "{name} total"
        );
        assert_eq!(
            sha,
            expected["canonical_sha256"].as_str().unwrap(),
            "{name} sha256"
        );
        assert_eq!(
            report.tool_count as u64,
            expected["tool_count"].as_u64().unwrap()
        );
        for tool in &report.tools {
            let figure = if resolved {
                tool.ref_resolved_tokens
            } else {
                tool.tokens
            };
            assert_eq!(
                Some(figure as u64),
                expected["per_tool"][&tool.name].as_u64(),
                "{name}/{}",
                tool.name
            );
        }
    }
}

#[test]
fn the_three_totals_named_in_source_md() {
    for (name, tools, tokens) in [
        ("github", 47, 59084),
        ("filesystem", 14, 2697),
        ("playwright", 24, 4024),
    ] {
        let report = audit_capture(&captures_dir().join(format!("{name}-wire.jsonl")));
        assert_eq!(
            (report.tool_count, report.total_tokens),
            (tools, tokens),
            "{name}"
        );
    }
}

#[test]
fn notion_wire_and_ref_resolved_figures_differ() {
    let report = audit_capture(&captures_dir().join("notion-wire.jsonl"));
    assert_ne!(report.total_tokens, report.ref_resolved_total_tokens);
    assert_ne!(report.canonical_sha256, report.ref_resolved_sha256);
}

#[test]
fn snapshots_of_every_capture() {
    for (name, path) in captures() {
        let report = audit_capture(&path);
        insta::assert_json_snapshot!(format!("audit_json_{name}"), report);
        insta::assert_snapshot!(format!("audit_table_{name}"), render_table(&report));
    }
}

#[test]
fn envelope_and_icon_sizes_are_counted_canary() {
    // github ships inline icons on every tool; jaeger and linear carry tool `_meta`.
    let github = audit_capture(&captures_dir().join("github-wire.jsonl"));
    assert!(github
        .tools
        .iter()
        .all(|t| t.icons_bytes > 0 && t.envelope_tokens > 0));
    let linear = audit_capture(&captures_dir().join("linear-wire.jsonl"));
    assert!(linear.tools.iter().any(|t| t.meta_bytes > 0));
    let fs = audit_capture(&captures_dir().join("filesystem-wire.jsonl"));
    assert!(fs
        .tools
        .iter()
        .all(|t| t.schema_dialect == "draft-07" && t.schema_bytes > 0));
}

fn ctxopt() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ctxopt"))
}

fn run_json(cmd: &mut Command) -> Value {
    serde_json::from_slice(&run_ok(cmd).stdout).unwrap()
}

#[test]
fn cli_capture_json_matches_the_library_and_is_deterministic() {
    let path = captures_dir().join("playwright-wire.jsonl");
    let first = ctxopt()
        .args(["audit", "--format", "json", "--capture"])
        .arg(&path)
        .output()
        .unwrap();
    let second = ctxopt()
        .args(["audit", "--format", "json", "--capture"])
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(first.stdout, second.stdout);
    let cli: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(cli, serde_json::to_value(audit_capture(&path)).unwrap());
    for key in [
        "server",
        "protocol",
        "tool_count",
        "total_tokens",
        "canonical_sha256",
        "tools",
        "warnings",
    ] {
        assert!(cli.get(key).is_some(), "JSON output lacks `{key}`");
    }
}

fn scripted(mode: &str) -> Value {
    let script = repo().join("fixtures/servers/paged_server.py");
    run_json(
        ctxopt()
            .args([
                "audit",
                "--format",
                "json",
                "--timeout",
                "20",
                "--",
                "python3",
            ])
            .arg(script)
            .arg(mode),
    )
}

#[test]
fn stateless_server_is_discovered_and_paged() {
    let report = scripted("stateless");
    assert_eq!(report["server"]["source"], "server/discover");
    assert_eq!(report["protocol"], "2026-07-28");
    let names = tool_names(&report);
    assert_eq!(names, ["alpha", "beta", "gamma"], "all three pages");
    assert_eq!(report["prompts"]["count"], 1);
    assert_eq!(report["resources"]["names"][0], "one");
}

#[test]
fn initialize_era_server_falls_back_and_warns_on_2020_12() {
    let report = scripted("initialize");
    assert_eq!(report["server"]["source"], "initialize");
    assert_eq!(report["server"]["name"], "paged-test-server");
    assert_eq!(report["protocol"], "2025-06-18");
    assert_eq!(report["tool_count"], 3);
    let beta = &report["tools"][1];
    assert_eq!(beta["schema_dialect"], "2020-12");
    assert!(beta["icons_bytes"].as_u64().unwrap() > 0);
    assert!(beta["envelope_tokens"].as_u64().unwrap() > 0);
    assert_eq!(report["tools"][2]["schema_dialect"], "none");
    let warnings = report["warnings"].to_string();
    assert!(
        warnings.contains("2020-12") && warnings.contains("beta") && !warnings.contains("alpha")
    );
}

#[test]
fn real_filesystem_server_matches_its_published_capture() {
    let Some(server) = peer("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let live = run_json(
        ctxopt()
            .args(["audit", "--format", "json", "--", "node"])
            .arg(&server)
            .arg(dir.path()),
    );
    assert_eq!(live["server"]["name"], "secure-filesystem-server");
    assert_eq!(
        live["server"]["source"], "initialize",
        "an initialize-era server"
    );
    let capture =
        serde_json::to_value(audit_capture(&captures_dir().join("filesystem-wire.jsonl"))).unwrap();
    assert_eq!(live["tool_count"], capture["tool_count"]);
    assert_eq!(live["total_tokens"], capture["total_tokens"]);
}

#[test]
fn real_python_sdk_server_is_audited_statelessly() {
    let (Some(python), Some(script)) = (peer(".venv/bin/python"), peer("py_server.py")) else {
        return;
    };
    let live = run_json(
        ctxopt()
            .args(["audit", "--format", "json", "--"])
            .arg(python)
            .arg(script),
    );
    assert_eq!(live["server"]["source"], "server/discover");
    assert_eq!(live["protocol"], "2026-07-28");
    assert!(live["tool_count"].as_u64().unwrap() > 0);
    assert!(live["total_tokens"].as_u64().unwrap() > 0);
    assert!(live["prompts"]["count"].as_u64().unwrap() > 0);
    assert!(live["resources"]["count"].as_u64().unwrap() > 0);
}

#[test]
fn frame_log_listing_uses_the_servers_last_answer_and_identity() {
    let log = repo().join("fixtures/frame-logs/everything-stateless.jsonl");
    let report = run_json(
        ctxopt()
            .args(["audit", "--format", "json", "--log"])
            .arg(log),
    );
    assert_eq!(report["server"]["source"], "frame-log");
    assert_eq!(report["server"]["name"], "mcp-servers/everything");
    assert_eq!(report["protocol"], "2026-07-28");
    let names = tool_names(&report);
    assert_eq!(names, ["echo", "get-tiny-image"]);
}

/// The names of the tools in an audit report, in report order.
fn tool_names(report: &Value) -> Vec<&str> {
    report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect()
}

/// The frame logs a test can audit: the hand-made ones, and the recorded ones when this
/// checkout has them (`frame-logs/`), each with a `tools/list` answer.
fn logs_with_listings(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .filter(|p| {
            std::fs::read_to_string(p)
                .unwrap()
                .contains("\"method\":\"tools/list\"")
        })
        .collect();
    paths.sort();
    paths
}

#[test]
fn snapshots_of_frame_log_listings() {
    let fixtures = logs_with_listings(&repo().join("fixtures/frame-logs"));
    assert!(fixtures.len() >= 3);
    let recorded = logs_with_listings(&repo().join("frame-logs"));
    for (prefix, path) in fixtures
        .iter()
        .map(|p| ("fixture", p))
        .chain(recorded.iter().map(|p| ("recorded", p)))
    {
        let listing = toollist::from_frame_log(path).unwrap();
        let report = audit(&listing, Tokenizer::O200kBase);
        assert_eq!(report.tool_count, listing.tools.len());
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        insta::assert_json_snapshot!(format!("audit_log_json_{prefix}_{stem}"), report);
        insta::assert_snapshot!(
            format!("audit_log_table_{prefix}_{stem}"),
            render_table(&report)
        );
    }
}

#[test]
fn a_recorded_filesystem_session_lists_what_the_published_capture_lists() {
    let listing = toollist::from_frame_log(&repo().join("frame-logs/ts-filesystem.jsonl")).unwrap();
    let live = audit(&listing, Tokenizer::O200kBase);
    let published = &published()["servers"]["filesystem"];
    assert_eq!(
        live.total_tokens as u64,
        published["total_tokens"].as_u64().unwrap()
    );
    assert_eq!(
        live.canonical_sha256,
        published["canonical_sha256"].as_str().unwrap()
    );
    assert_eq!(
        live.server.name.as_deref(),
        Some("secure-filesystem-server")
    );
}

#[test]
fn a_logged_list_the_proxy_extended_is_audited_as_the_server_sent_it() {
    // The client received the server's tool plus the six injected ones; the server's own
    // list is what `audit --log` measures, the same as auditing the server's answer itself.
    let list = r#"{"tools":[{"name":"echo","description":"Echoes its input.","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}}}]}"#;
    let run = ProxyCmd::fixture(&[format!("method-result:tools/list:{list}"), "respond".into()])
        .run(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
    assert!(run.status.success(), "{}", run.stderr);
    let received: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(received["result"]["tools"].as_array().unwrap().len(), 7);

    let from_log = run_json(
        ctxopt()
            .args(["audit", "--format", "json", "--log"])
            .arg(&run.log),
    );
    assert_eq!(tool_names(&from_log), ["echo"]);
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("list.jsonl");
    std::fs::write(&capture, format!("{list}\n")).unwrap();
    let direct = run_json(
        ctxopt()
            .args(["audit", "--format", "json", "--capture"])
            .arg(&capture),
    );
    assert_eq!(from_log["total_tokens"], direct["total_tokens"]);
    assert_eq!(from_log["canonical_sha256"], direct["canonical_sha256"]);
}
