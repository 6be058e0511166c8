//! `ctxopt report`: canaries for every figure, snapshots in every format, the fixture
//! logs' conformance to the frame-log records, and the HTML rendered in headless Chromium.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::command::run_ok;
use ctxopt::framelog::json_scan::root;
use ctxopt::framelog::meta_strip::strip_meta;
use ctxopt::framelog::LogLine;
use ctxopt::measure::report::{self, html, text, Report, ToolReport};
use ctxopt::tokenizer::Tokenizer;
use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn log(name: &str) -> PathBuf {
    repo().join("fixtures/frame-logs").join(name)
}

fn both() -> Report {
    report::collect(&[
        log("filesystem-anomalies.jsonl"),
        log("everything-stateless.jsonl"),
    ])
    .unwrap()
}

fn tool<'a>(r: &'a Report, server: &str, name: &str) -> &'a ToolReport {
    r.servers
        .iter()
        .find(|s| s.name == server)
        .and_then(|s| s.tools.iter().find(|t| t.tool == name))
        .unwrap_or_else(|| panic!("{server}/{name} missing"))
}

/// The hand-made logs are version 1 (kept as backward-compatible input: a version-1 log is a
/// version-4 log without the later members); the recorded `everything-compaction.jsonl` is of
/// the current version (re-recorded when the format changes). Both read and re-serialize
/// exactly.
#[test]
fn fixture_logs_follow_the_record_types_and_count_true_tokens() {
    let dir = repo().join("fixtures/frame-logs");
    let mut logs = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("jsonl") {
            continue;
        }
        logs += 1;
        for (i, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            let record: LogLine = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            if let LogLine::Header(h) = &record {
                let recorded = path.ends_with("everything-compaction.jsonl");
                let expected = if recorded {
                    ctxopt::framelog::FORMAT_VERSION
                } else {
                    1
                };
                assert_eq!(h.format_version, expected, "{}", path.display());
            }
            // Same members, same order: the line is exactly what the types write.
            assert_eq!(
                serde_json::to_string(&record).unwrap(),
                line,
                "{}:{}",
                path.display(),
                i + 1
            );
            if let LogLine::Frame(f) = record {
                let raw = f.raw.as_deref().unwrap();
                let t = Tokenizer::O200kBase;
                assert_eq!(
                    f.tokens,
                    t.count(raw) as u64,
                    "{}:{} tokens",
                    path.display(),
                    i + 1
                );
                let stripped = serde_json::from_str::<Value>(raw)
                    .ok()
                    .and_then(|_| strip_meta(raw, root(raw)))
                    .map_or(f.tokens, |text| t.count(&text) as u64);
                assert_eq!(
                    f.meta_tokens,
                    f.tokens - stripped,
                    "{}:{} meta",
                    path.display(),
                    i + 1
                );
            }
        }
    }
    assert!(logs >= 4);
}

#[test]
fn anomalies_each_counted_in_a_log_made_to_contain_them() {
    let r = report::collect(&[log("filesystem-anomalies.jsonl")]).unwrap();
    let a = &r.anomalies;
    assert_eq!(
        a.unanswered_requests, 2,
        "search_files (cancelled) and the last list_directory"
    );
    assert_eq!(a.unknown_id_responses, 1);
    assert_eq!(a.unadvertised_tool_calls, 1);
    assert_eq!(a.cancellations, 1);
    assert_eq!(a.unparseable_frames, 2, "the banner and the CRLF garbage");
    let listed: Vec<(&str, u64)> = a.listed.iter().map(|x| (x.kind.as_str(), x.seq)).collect();
    assert!(listed.contains(&("unadvertised_tool_call", 16)));
    assert!(listed.contains(&("unknown_id_response", 22)));
    // The server's own request id 0 (roots/list) overlaps the client's initialize id 0
    // and is paired per direction: neither is unanswered or unknown.
    assert!(!a
        .listed
        .iter()
        .any(|x| x.detail.contains("roots/list") || x.detail == "id 0"));
}

#[test]
fn a_clean_log_has_no_anomalies() {
    let r = report::collect(&[log("gap-trial.jsonl")]).unwrap();
    let a = &r.anomalies;
    assert_eq!(
        [
            a.unanswered_requests,
            a.unknown_id_responses,
            a.unadvertised_tool_calls,
            a.cancellations,
            a.unparseable_frames
        ],
        [0; 5]
    );
}

#[test]
fn envelope_share_is_positive_with_inline_icons() {
    let r = both();
    let echo = tool(&r, "everything", "echo");
    assert!(
        echo.envelope_share > 0.5,
        "the icon envelope dominates: {}",
        echo.envelope_share
    );
    assert!(echo.stripped_tokens.total < echo.call_tokens.total);
    assert_eq!(
        echo.envelope_tokens,
        echo.call_tokens.total - echo.stripped_tokens.total
    );
    let read = tool(&r, "filesystem", "read_text_file");
    assert_eq!(read.envelope_share, 0.0, "no _meta, no envelope");
}

#[test]
fn call_figures_latency_errors_and_raw_values() {
    let r = both();
    let read = tool(&r, "filesystem", "read_text_file");
    assert_eq!((read.calls, read.answered), (3, 3));
    assert_eq!(read.call_tokens.values.len(), 3);
    assert!(
        read.call_tokens.min < read.call_tokens.median
            && read.call_tokens.median < read.call_tokens.max
    );
    assert_eq!(read.latency.max_us, 25_000);
    assert!(read.latency.p50_us > 0 && read.latency.p95_us >= read.latency.p50_us);
    assert!(read.bytes.total > 0);
    assert_eq!(tool(&r, "filesystem", "list_directory").is_error_results, 1);
    assert_eq!(tool(&r, "filesystem", "write_file").jsonrpc_errors, 1);
    let proxy = tool(&r, "everything", "build_context");
    assert_eq!(proxy.origin, "proxy");
}

#[test]
fn sessions_carry_identity_protocol_and_totals() {
    let r = both();
    let [fs, ev] = &r.sessions[..] else {
        panic!("two sessions")
    };
    assert_eq!(fs.protocols, ["2025-06-18"]);
    assert_eq!(ev.protocols, ["2026-07-28"]);
    assert_eq!(fs.client.as_ref().unwrap().name, "gemini-cli-mcp-client");
    assert_eq!(ev.client.as_ref().unwrap().name, "mcp-python-client");
    assert_eq!(fs.server.as_ref().unwrap().name, "secure-filesystem-server");
    assert_eq!(
        ev.server.as_ref().unwrap().version.as_deref(),
        Some("2026.8.31")
    );
    assert_eq!(fs.calls, 8);
    assert_eq!(fs.jsonrpc_errors, 2, "write_file and delete_file");
    assert_eq!(ev.jsonrpc_errors, 0);
    assert!(ev.meta_tokens.s2c > 0 && ev.call_tokens > 0);
    assert!(fs.complete && ev.complete);
}

#[test]
fn a_damaged_log_is_read_to_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(log("gap-trial.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // Drop the trailer and cut the last frame in half, as a killed proxy would leave it.
    let last = lines[lines.len() - 2];
    let damaged = format!(
        "{}\n{}",
        lines[..lines.len() - 2].join("\n"),
        &last[..last.len() / 2]
    );
    let path = dir.path().join("damaged.jsonl");
    std::fs::write(&path, damaged).unwrap();
    let r = report::collect(&[path]).unwrap();
    let s = &r.sessions[0];
    assert!(!s.complete);
    assert_eq!(s.unreadable_log_lines, 1);
    assert_eq!(
        r.anomalies.unanswered_requests, 1,
        "the answer was in the cut line"
    );
}

#[test]
fn snapshots_in_every_format() {
    let r = both();
    insta::assert_json_snapshot!("report_json_fixtures", r);
    insta::assert_snapshot!(
        "report_table_fixtures",
        text::render(&r, text::Style::Plain)
    );
    insta::assert_snapshot!(
        "report_md_fixtures",
        text::render(&r, text::Style::Markdown)
    );
    for name in ["gap-trial.jsonl", "gap-no-calls.jsonl"] {
        let one = report::collect(&[log(name)]).unwrap();
        let stem = name.trim_end_matches(".jsonl");
        insta::assert_json_snapshot!(format!("report_json_{stem}"), one);
        insta::assert_snapshot!(
            format!("report_table_{stem}"),
            text::render(&one, text::Style::Plain)
        );
    }
}

/// Real logs recorded by the interop tests, when this checkout has them.
#[test]
fn snapshots_of_recorded_logs() {
    let dir = repo().join("frame-logs");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("jsonl"))
        .collect();
    paths.sort();
    for path in paths {
        let r = report::collect(std::slice::from_ref(&path)).unwrap();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(r#""started": "[^"]*""#, r#""started": "[time]""#);
        settings.bind(|| {
            insta::assert_json_snapshot!(format!("report_recorded_json_{stem}"), r);
            insta::assert_snapshot!(
                format!("report_recorded_table_{stem}"),
                text::render(&r, text::Style::Plain)
            );
        });
    }
}

fn ctxopt_report(args: &[&str]) -> Vec<u8> {
    let out = run_ok(
        Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .arg("report")
            .args(args)
            .arg(log("filesystem-anomalies.jsonl"))
            .arg(log("everything-stateless.jsonl")),
    );
    out.stdout
}

#[test]
fn cli_output_is_deterministic_in_every_format() {
    for format in ["json", "html"] {
        assert_eq!(
            ctxopt_report(&["--format", format]),
            ctxopt_report(&["--format", format]),
            "{format}"
        );
    }
    let json: Value = serde_json::from_slice(&ctxopt_report(&["--format", "json"])).unwrap();
    assert_eq!(json, serde_json::to_value(both()).unwrap());
}

#[test]
fn html_is_self_contained() {
    let page = html::render(&both());
    assert!(page.starts_with("<!DOCTYPE html>"));
    assert!(!page.contains("<script"), "no scripts");
    for external in ["src=\"http", "href=\"http", "@import", "url("] {
        assert!(!page.contains(external), "no external resource: {external}");
    }
}

/// Renders the HTML report in headless Chromium and inspects the DOM it built.
/// Set CTXOPT_SKIP_BROWSER_TESTS=1 to skip where Chromium cannot be installed.
#[test]
fn html_renders_in_headless_chromium() {
    let chromium = ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .map(|name| Path::new("/usr/bin").join(name))
        .find(|p| p.exists());
    let Some(chromium) = chromium else {
        if std::env::var_os("CTXOPT_SKIP_BROWSER_TESTS").is_some() {
            return;
        }
        panic!("headless Chromium is missing: `apt-get install -y chromium` (or set CTXOPT_SKIP_BROWSER_TESTS=1)");
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .args(["report", "--format", "html", "--output"])
        .arg(&page)
        .arg(log("filesystem-anomalies.jsonl"))
        .arg(log("everything-stateless.jsonl"))
        .output()
        .unwrap();
    assert!(out.status.success());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&page).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the report file is private");
    let profile = dir.path().join("profile");
    let shot = dir.path().join("shot.png");
    let chrome = |extra: &[&str]| {
        Command::new(&chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                "--window-size=1000,2000",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(extra)
            .arg(format!("file://{}", page.display()))
            .output()
            .unwrap()
    };
    let dom = chrome(&["--dump-dom"]);
    assert!(
        dom.status.success(),
        "{}",
        String::from_utf8_lossy(&dom.stderr)
    );
    let dom = String::from_utf8(dom.stdout).unwrap();
    let r = both();
    let tools: usize = r.servers.iter().map(|s| s.tools.len()).sum();
    for chart in ["chart-cost", "chart-envelope", "chart-latency"] {
        let start = dom
            .find(&format!("id=\"{chart}\""))
            .unwrap_or_else(|| panic!("{chart} not in the DOM"));
        let body = &dom[start..start + dom[start..].find("</svg>").unwrap()];
        let bars = body.matches("<rect").count();
        assert!(bars >= tools, "{chart}: {bars} bars for {tools} tools");
    }
    assert!(dom.contains("data-label=\"everything / echo\""));
    assert!(dom.contains("<li data-kind=\"unanswered_request\">unanswered requests: 2</li>"));
    let rendered = chrome(&[&format!("--screenshot={}", shot.display())]);
    assert!(rendered.status.success());
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 10_000,
        "a non-trivial screenshot"
    );
}

/// A log of format 5 carries its pins in the trailer, and the report takes them from there; a
/// log without them gets the same pins derived from its frames.
#[test]
fn the_report_takes_the_trailers_pins_and_derives_them_for_a_log_without() {
    let recorded = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/frame-logs/everything-compaction.jsonl");
    let text = std::fs::read_to_string(&recorded).unwrap();
    let session = |text: &str| -> Report {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.jsonl");
        std::fs::write(&path, text).unwrap();
        report::collect(&[path]).unwrap()
    };
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let trailer = lines.last_mut().unwrap();
    let pins = trailer["pins"].clone();
    assert!(
        pins["client"]["version"].is_string(),
        "the recorded log is pinned"
    );
    let joined = |lines: &[Value]| {
        lines
            .iter()
            .map(|l| l.to_string() + "\n")
            .collect::<String>()
    };
    // Derived from the frames when the trailer has none: the same pins.
    trailer.as_object_mut().unwrap().remove("pins");
    let derived = session(&joined(&lines)).sessions.remove(0);
    let as_written = session(&text).sessions.remove(0);
    assert_eq!(derived.client, as_written.client);
    assert_eq!(derived.server, as_written.server);
    assert_eq!(derived.protocols, as_written.protocols);
    assert_eq!(derived.catalog_digests, as_written.catalog_digests);
    assert_eq!(
        serde_json::to_value(&as_written.client).unwrap(),
        pins["client"]
    );
    // Preferred when present: a trailer that says otherwise wins.
    let mut other = pins.clone();
    other["client"]["version"] = "9.9.9-trailer".into();
    other["changed"] = serde_json::json!(["client"]);
    lines.last_mut().unwrap()["pins"] = other;
    let preferred = session(&joined(&lines)).sessions.remove(0);
    assert_eq!(
        preferred.client.and_then(|c| c.version).as_deref(),
        Some("9.9.9-trailer")
    );
    assert_eq!(preferred.changed_mid_run, ["client"]);
}
