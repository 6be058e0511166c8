//! `--compact-results`: oversized `tools/call` results compacted on the wire, the original
//! kept and served back whole by `get_result` (also after a restart), the log keeping both
//! frames; `--hide-tools` / `--only-tools`. Against the fixture server (a tool with an
//! `outputSchema`, a 50 MB result, a one-line result).

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::log::{read_log, Log};
use crate::support::proxy::{ProxyCmd, Session};
use ctxopt::framelog::{Direction, Frame, LeftWhole, LeftWholeReason};
use ctxopt::tokenizer::Tokenizer;

const LIMIT: usize = 2000;

fn tools_list() -> String {
    json!({"tools": [
        {"name": "dump", "inputSchema": {"type": "object"}},
        {"name": "stats", "inputSchema": {"type": "object"},
         "outputSchema": {"type": "object", "properties": {"rows": {"type": "array", "items": {"type": "string"}}}, "required": ["rows"]}},
        {"name": "danger", "inputSchema": {"type": "object"}}
    ]})
    .to_string()
}

fn request(id: u64, method: &str, params: Value) -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        .to_string()
        .into_bytes();
    line.push(b'\n');
    line
}

fn call(id: u64, tool: &str, arguments: Value) -> Vec<u8> {
    request(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn parse(line: &[u8]) -> Value {
    serde_json::from_slice(line).unwrap_or_else(|e| {
        panic!(
            "{e}: {}",
            String::from_utf8_lossy(&line[..line.len().min(300)])
        )
    })
}

fn parse_str(line: &str) -> Value {
    parse(line.as_bytes())
}

fn text_of(v: &Value, block: usize) -> &str {
    v["result"]["content"][block]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {v}"))
}

fn handle_in(text: &str) -> String {
    let at = text.rfind("{\"handle\": \"r_").expect("a handle") + 12;
    text[at..at + 18].to_string()
}

/// The tool names a `tools/list` through the session returns.
fn listed(s: &mut Session) -> Vec<String> {
    s.send(&request(1, "tools/list", json!({})));
    crate::inject::names(&parse(&s.recv()))
}

fn sha(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

/// Pages through `handle` with get_result (ids from 100) and returns the pages joined.
fn all_pages(s: &mut Session, handle: &str, raw: bool) -> String {
    let mut joined = String::new();
    for page in 1.. {
        s.send(&call(
            100 + page,
            "get_result",
            json!({"handle": handle, "page": page, "raw": raw}),
        ));
        let v = parse(&s.recv());
        let t = Tokenizer::O200kBase;
        let part = text_of(&v, 0);
        let note = text_of(&v, 1);
        assert!(
            t.count(part) + t.count(note) <= LIMIT,
            "page {page} over the limit"
        );
        joined.push_str(part);
        if note.contains("the last page") {
            break;
        }
    }
    joined
}

/// The server's answer to the call `id` (`s2c`, as received).
fn answer<'a>(log: &'a Log, id: &str) -> &'a Frame {
    log.dir(Direction::S2c)
        .into_iter()
        .find(|f| f.id.as_deref() == Some(id))
        .expect("the server's answer is logged")
}

/// The server's answer to the call `id` (`s2c`, as received) and the compacted frame the
/// client got instead (`p2c`, naming it in `compacts`).
fn compacted<'a>(log: &'a Log, id: &str) -> (&'a Frame, &'a Frame) {
    let s2c = answer(log, id);
    let p2c = log
        .dir(Direction::P2c)
        .into_iter()
        .find(|f| f.compacts == Some(s2c.seq))
        .expect("the compacted frame names it");
    (s2c, p2c)
}

fn proxy(steps: &[&str], store: &std::path::Path, workspace: &std::path::Path) -> ProxyCmd {
    let mut all = vec![format!("method-result:tools/list:{}", tools_list())];
    all.extend(steps.iter().map(|s| s.to_string()));
    all.push("respond".into());
    ProxyCmd::fixture(&all).option(&[
        "--compact-results".into(),
        LIMIT.to_string(),
        "--store".into(),
        store.display().to_string(),
        "--workspace".into(),
        workspace.display().to_string(),
        "--inject".into(),
        "none".into(),
    ])
}

#[test]
fn an_oversized_result_is_compacted_and_served_back_byte_exact_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let cmd = proxy(&["text-result:tools/call:20000:100"], &store, dir.path());
    let mut s = Session::start(&cmd);
    assert_eq!(listed(&mut s), ["dump", "stats", "danger", "get_result"]);
    s.send(&call(2, "dump", json!({"query": "payment"})));
    let got = parse(&s.recv());
    assert_eq!(got["id"], 2);
    let text = text_of(&got, 0);
    let t = Tokenizer::O200kBase;
    assert!(t.count(text) <= LIMIT, "{} tokens", t.count(text));
    assert!(
        text.contains("10001 | 00010000 ERROR payment gateway timed out after 30000 ms"),
        "{text}"
    );
    assert!(
        text.contains("of 20,000 lines left out; the whole result: get_result {\"handle\": \"r_")
    );
    let handle = handle_in(text);
    let pages = all_pages(&mut s, &handle, false);
    s.send(&call(
        3,
        "get_result",
        json!({"handle": handle, "pattern": "ERROR"}),
    ));
    let found = parse(&s.recv());
    let found = text_of(&found, 0);
    assert_eq!(found.lines().count(), 1, "{found}");
    assert!(found.starts_with("10001 | 00010000 ERROR payment gateway timed out after 30000 ms."));
    let (_, status) = s.close();
    assert!(status.success());

    // The log: the server's frame as received (s2c, its tokens), then the client's (p2c).
    let log = read_log(cmd.log_path());
    let (s2c, p2c) = compacted(&log, "2");
    assert_eq!(p2c.seq, s2c.seq + 1);
    assert_eq!(p2c.tool.as_deref(), Some("dump"));
    assert_eq!(s2c.left_whole, None, "compacted, not left whole");
    assert!(
        s2c.tokens > 20 * p2c.tokens,
        "{} vs {}",
        s2c.tokens,
        p2c.tokens
    );
    let original: Value = serde_json::from_str(s2c.raw.as_deref().unwrap()).unwrap();
    let original_text = text_of(&original, 0);
    assert_eq!(
        sha(&pages),
        sha(original_text),
        "the pages joined are the original"
    );
    assert_eq!(
        p2c.raw.as_deref().unwrap(),
        serde_json::to_string(&got).unwrap()
    );

    // The saving ledger counts those two frames; the call is answered once, no anomaly.
    let report = ctxopt::measure::report::collect(&[cmd.log_path().to_path_buf()]).unwrap();
    let row = &report.compaction[0];
    assert_eq!(
        (row.tool.as_str(), row.results, row.left_whole),
        ("dump", 1, 0)
    );
    assert_eq!(
        (row.server_tokens, row.client_tokens),
        (s2c.tokens, p2c.tokens)
    );
    assert_eq!(row.saved_tokens, s2c.tokens - p2c.tokens);
    assert_eq!(report.anomalies.unknown_id_responses, 0);
    let text =
        ctxopt::measure::report::text::render(&report, ctxopt::measure::report::text::Style::Plain);
    assert!(text.contains("\nCompaction ("), "{text}");
    // gap reads the relayed call once, as the wire had it.
    let wire = ctxopt::measure::gap::read_wire(cmd.log_path()).unwrap();
    assert_eq!(wire.calls.get("dump"), Some(&1));

    // A new proxy in the same workspace and store serves the same result, raw included.
    let again = proxy(&[], &store, dir.path());
    let mut s = Session::start(&again);
    let raw = all_pages(&mut s, &handle, true);
    assert_eq!(sha(&raw), sha(s2c.raw.as_deref().unwrap()));
    s.close();
}

/// Issue 16's one exception: the copy kept for get_result is the server's bytes, secrets
/// included, while the log's s2c and p2c lines and the records are redacted.
#[test]
fn the_kept_copy_is_exact_while_the_log_and_the_records_are_redacted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let secrets = [
        crate::redaction::aws_key(),
        crate::redaction::github_token(),
    ];
    let mut lines: Vec<String> = (0..1500)
        .map(|i| format!("{i:05} INFO request served in 12 ms"))
        .collect();
    lines[10] = format!("00010 WARN aws_access_key_id = {}", secrets[0]);
    lines[1400] = format!("01400 WARN # github: {}", secrets[1]);
    let text = lines.join("\n");
    let result = json!({"content": [{"type": "text", "text": text}]});
    let cmd = proxy(
        &[&format!("method-result:tools/call:{result}")],
        &store,
        dir.path(),
    );
    let mut s = Session::start(&cmd);
    s.send(&call(2, "dump", json!({})));
    let got = parse(&s.recv());
    let handle = handle_in(text_of(&got, 0));
    let pages = all_pages(&mut s, &handle, false);
    assert_eq!(
        sha(&pages),
        sha(&text),
        "get_result returns the server's bytes"
    );
    let (_, status) = s.close();
    assert!(status.success());

    let log = read_log(cmd.log_path());
    let (s2c, p2c) = compacted(&log, "2");
    assert_eq!(s2c.redactions, Some(2));
    // The client got the warning lines in the excerpts, secrets and all (the wire is never
    // redacted); the log's copy of that frame has placeholders instead.
    let client = got.to_string();
    let shown = secrets
        .iter()
        .filter(|s| client.contains(s.as_str()))
        .count();
    assert!(shown > 0, "canary: the excerpts show a secret");
    assert_eq!(p2c.redactions, Some(shown as u64));
    let log_bytes = std::fs::read(cmd.log_path()).unwrap();
    let records = ctxopt::store::Store::open_path(&store)
        .unwrap()
        .load(&ctxopt::store::Filter::workspace(
            &dir.path().canonicalize().unwrap().display().to_string(),
        ))
        .unwrap();
    let record_text: String = records.iter().map(|r| r.record.search_text()).collect();
    assert!(record_text.contains("[REDACTED:aws-access-key-id:20:"));
    for secret in &secrets {
        assert!(pages.contains(secret.as_str()));
        assert!(
            memchr::memmem::find(&log_bytes, secret.as_bytes()).is_none(),
            "the log holds {secret}"
        );
        assert!(
            !record_text.contains(secret.as_str()),
            "a record holds {secret}"
        );
    }
}

#[test]
fn results_under_the_limit_pass_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = proxy(
        &["text-result:tools/call:50:60"],
        &dir.path().join("s.db"),
        dir.path(),
    );
    let mut s = Session::start(&cmd);
    s.send(&call(1, "dump", json!({})));
    let got = s.recv();
    s.close();
    let log = read_log(cmd.log_path());
    let s2c = &log.dir(Direction::S2c)[0];
    assert_eq!(
        got.strip_suffix(b"\n").unwrap(),
        s2c.raw.as_deref().unwrap().as_bytes()
    );
    assert!(log.dir(Direction::P2c).is_empty());
}

#[test]
fn a_result_over_the_kept_cap_is_relayed_whole_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = proxy(
        &["text-result:tools/call:2000:60"],
        &dir.path().join("s.db"),
        dir.path(),
    )
    .option(&["--max-kept-bytes", "50000"]);
    let mut s = Session::start(&cmd);
    s.send(&call(1, "dump", json!({})));
    let got = s.recv();
    let (_, _, stderr) = s.close_with_stderr();
    let log = read_log(cmd.log_path());
    let s2c = &log.dir(Direction::S2c)[0];
    assert!(s2c.bytes > 50_000, "canary: the result is over the cap");
    assert_eq!(
        got.strip_suffix(b"\n").unwrap(),
        s2c.raw.as_deref().unwrap().as_bytes(),
        "relayed whole, not cut without its whole kept"
    );
    assert!(log.dir(Direction::P2c).is_empty());
    assert!(
        stderr.contains(&format!(
            "dump result of {} bytes relayed whole: the store keeps results of at most 50000 bytes (--max-kept-bytes)",
            s2c.bytes - 1
        )),
        "{stderr}"
    );
    assert_eq!(
        s2c.left_whole,
        Some(LeftWhole {
            reason: LeftWholeReason::OverKeptCap,
            limit: LIMIT as u64,
            structured_tokens: None,
            kept_cap: Some(50_000),
        })
    );
}

#[test]
fn a_fifty_megabyte_result_and_a_one_line_result_are_compacted() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = proxy(
        &[
            "text-result:tools/call#1:500000:100",
            "text-result:tools/call#2:1:2000000",
        ],
        &dir.path().join("s.db"),
        dir.path(),
    );
    let mut s = Session::start(&cmd);
    s.send(&call(1, "dump", json!({})));
    let big = parse(&s.recv());
    let text = text_of(&big, 0);
    assert!(
        text.contains("250001 | 00250000 ERROR payment gateway"),
        "{}",
        &text[..500]
    );
    assert!(text.contains("of 500,000 lines left out"));
    s.send(&call(
        2,
        "get_result",
        json!({"handle": handle_in(text), "pattern": "ERROR", "lines": [250000, 250002]}),
    ));
    let found = parse(&s.recv());
    let found = text_of(&found, 0);
    assert_eq!(found.lines().count(), 1, "{found}");
    assert!(found.starts_with("250001 | 00250000 ERROR payment gateway timed out after 30000 ms."));
    s.send(&call(3, "dump", json!({})));
    let line = parse(&s.recv());
    let text = text_of(&line, 0);
    assert!(
        text.starts_with("1 | STARTabcd"),
        "{}",
        &text[..text.len().min(300)]
    );
    assert!(text.contains("characters left out"));
    assert!(text.contains("END\n… 1 lines shown, 1 cut short"));
    assert!(Tokenizer::O200kBase.count(text) <= LIMIT);
    // The log is not read here: no need to wait for the tap to count 50 MB.
    s.kill();
}

#[test]
fn a_big_structured_result_under_an_output_schema_is_left_whole_and_said_so() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<String> = (0..5000).map(|i| format!("row {i}")).collect();
    let text = rows.join("\n");
    let result =
        json!({"content": [{"type": "text", "text": text}], "structuredContent": {"rows": rows}});
    let cmd = proxy(
        &[&format!("method-result:tools/call:{result}")],
        &dir.path().join("s.db"),
        dir.path(),
    );
    let mut s = Session::start(&cmd);
    s.send(&request(1, "tools/list", json!({})));
    s.recv();
    s.send(&call(2, "stats", json!({})));
    let got = parse(&s.recv());
    let (_, _, stderr) = s.close_with_stderr();
    assert_eq!(got["result"], result, "whole, so it still validates");
    assert!(stderr.contains("stats result left whole"), "{stderr}");
    // The log says which result was left whole, and why; the report counts it.
    let log = read_log(cmd.log_path());
    let s2c = answer(&log, "2");
    assert_eq!(
        s2c.raw.as_deref().map(parse_str),
        Some(got.clone()),
        "relayed as it came"
    );
    let left = s2c
        .left_whole
        .as_ref()
        .expect("left_whole on the s2c frame");
    assert_eq!(left.reason, LeftWholeReason::StructuredContent);
    assert_eq!(left.limit, LIMIT as u64);
    let structured = Tokenizer::O200kBase.count(&result["structuredContent"].to_string());
    assert_eq!(left.structured_tokens, Some(structured as u64));
    assert!(structured > LIMIT / 2, "canary: over half the limit");
    assert!(log.dir(Direction::P2c).is_empty());
    let report = ctxopt::measure::report::collect(&[cmd.log_path().to_path_buf()]).unwrap();
    let row = &report.compaction[0];
    assert_eq!(
        (
            row.tool.as_str(),
            row.results,
            row.left_whole,
            row.saved_tokens
        ),
        ("stats", 0, 1, 0)
    );
}

/// A real file (a server's recorded `tools/list`, `fixtures/real-world`), base64: data that
/// packs few bytes into a token, as images and blobs do.
fn real_file_base64() -> String {
    use base64::Engine as _;
    let file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/real-world/tier1-tools-list/sentry-wire.jsonl"
    );
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(file).unwrap())
}

#[test]
fn a_result_without_text_over_the_limit_is_left_whole_and_counted_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let image = json!({"content": [{"type": "image", "data": real_file_base64(), "mimeType": "image/png"}]});
    let cmd = proxy(
        &[
            &format!("method-result:tools/call#1:{image}"),
            "text-result:tools/call#2:2000:60",
        ],
        &dir.path().join("s.db"),
        dir.path(),
    );
    let mut s = Session::start(&cmd);
    s.send(&call(1, "screenshot", json!({})));
    let got = s.recv();
    s.send(&call(2, "dump", json!({})));
    let text = parse(&s.recv());
    let (_, _, stderr) = s.close_with_stderr();
    assert!(
        text_of(&text, 0).contains("of 2,000 lines left out"),
        "canary: compacted"
    );
    let log = read_log(cmd.log_path());
    let s2c = answer(&log, "1");
    assert!(s2c.tokens as usize > LIMIT, "canary: over the limit");
    assert_eq!(
        got.strip_suffix(b"\n").unwrap(),
        s2c.raw.as_deref().unwrap().as_bytes(),
        "relayed byte for byte"
    );
    assert_eq!(parse(&got)["result"], image);
    assert_eq!(
        s2c.left_whole,
        Some(LeftWhole {
            reason: LeftWholeReason::NoText,
            limit: LIMIT as u64,
            structured_tokens: None,
            kept_cap: None,
        })
    );
    assert!(
        stderr.contains("screenshot result left whole: it has no text content to compact"),
        "{stderr}"
    );
    assert!(log
        .dir(Direction::P2c)
        .iter()
        .all(|f| f.compacts != Some(s2c.seq)));
    let report = ctxopt::measure::report::collect(&[cmd.log_path().to_path_buf()]).unwrap();
    let dump = report.compaction.iter().find(|r| r.tool == "dump").unwrap();
    assert!(
        dump.saved_tokens > 0,
        "canary: the text result saved tokens"
    );
    let mut table = String::new();
    ctxopt::measure::report::text::compaction_table(&report)
        .render(ctxopt::measure::report::text::Style::Markdown, &mut table);
    // The compacted text names a handle over the (temporary) workspace: its tokens vary.
    insta::with_settings!({filters => vec![
        (r"\| dump \| 1 \| 0 \| (\d+) \| \d+ \| \d+ \|", "| dump | 1 | 0 | $1 | [client] | [saved] |"),
    ]}, {
        insta::assert_snapshot!("report_compaction_left_whole_no_text", table);
    });
}

#[test]
fn hidden_tools_leave_the_listing_and_their_calls_never_reach_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = proxy(&[], &dir.path().join("s.db"), dir.path()).option(&["--hide-tools", "danger"]);
    let mut s = Session::start(&cmd);
    assert_eq!(listed(&mut s), ["dump", "stats", "get_result"]);
    s.send(&call(2, "danger", json!({})));
    let refused = parse(&s.recv());
    assert_eq!(refused["id"], 2);
    assert_eq!(refused["error"]["code"], -32602);
    assert!(refused["error"]["message"]
        .as_str()
        .unwrap()
        .contains("hidden by ctxopt-proxy"));
    s.close();
    let log = read_log(cmd.log_path());
    assert!(log
        .dir(Direction::C2s)
        .iter()
        .all(|f| f.tool.as_deref() != Some("danger")));
    assert_eq!(log.dir(Direction::C2p).len(), 1);
}

#[test]
fn hiding_one_of_the_proxys_own_tools_hides_only_a_server_tool_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cmd = proxy(&[], &dir.path().join("s.db"), dir.path())
        .option(&["--hide-tools", "get_result,danger"]);
    let mut s = Session::start(&cmd);
    // get_result stays: compacted results name it.
    assert_eq!(listed(&mut s), ["dump", "stats", "get_result"]);
    let (_, _, stderr) = s.close_with_stderr();
    assert!(
        stderr.contains("--hide-tools get_result: ctxopt-proxy's own get_result is not hidden"),
        "{stderr}"
    );
    assert!(!stderr.contains("--hide-tools danger"), "{stderr}");
}

/// A real client (Python `mcp`, TypeScript SDK) reads a 20,000-line log through the proxy in
/// front of the real server-filesystem: the result arrives compacted and valid (the TypeScript
/// SDK checks structuredContent against the tool's outputSchema), and get_result finds the
/// error line in the whole.
fn real_client_reads_a_big_file(client: &str) {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let logfile = project.join("app.log");
    let text: String = (0..20_000)
        .map(|i| {
            if i == 12_345 {
                "2026-11-30T10:00:00Z ERROR billing: invoice INV-12345 total mismatch\n".to_string()
            } else {
                format!("2026-11-30T10:00:00Z INFO request {i} served\n")
            }
        })
        .collect();
    std::fs::write(&logfile, &text).unwrap();
    let (log, store) = (
        dir.path().join("frames.jsonl"),
        dir.path().join("store.sqlite3"),
    );
    let options = ["--inject", "none", "--compact-results", "3000"];
    let command = crate::bridge::filesystem::proxy_command(&log, &store, &project, &options);
    let command: Vec<&std::ffi::OsStr> = command.iter().map(|a| a.as_os_str()).collect();
    let path = logfile.display().to_string();
    let first = json!([["tools/list", {}], ["read_text_file", {"path": path}]]);
    let seen = match client {
        "python" => {
            let Some(python) = crate::bridge::serve::python() else {
                return;
            };
            crate::bridge::filesystem::run_calls(&python, first, &command)
        }
        _ => match crate::bridge::filesystem::run_ts_calls(first, &command) {
            Some(seen) => seen,
            None => return,
        },
    };
    let tools = seen[0]["tools"].as_array().unwrap();
    assert_eq!(tools.last().unwrap(), "get_result");
    let got = seen[1]["text"].as_str().unwrap();
    assert!(Tokenizer::O200kBase.count(got) <= 3000);
    assert!(
        got.contains(
            "12346 | 2026-11-30T10:00:00Z ERROR billing: invoice INV-12345 total mismatch"
        ),
        "{got}"
    );
    assert_eq!(
        seen[1]["structured"]["content"], got,
        "structuredContent compacted with the text"
    );
    let handle = handle_in(got);
    // A second session (a restart) asks for the error by pattern and the first lines exactly.
    let second = json!([
        ["get_result", {"handle": handle, "pattern": "ERROR"}],
        ["get_result", {"handle": handle, "lines": [1, 2]}]
    ]);
    let asked = match client {
        "python" => crate::bridge::filesystem::run_calls(
            &crate::bridge::serve::python().unwrap(),
            second,
            &command,
        ),
        _ => crate::bridge::filesystem::run_ts_calls(second, &command).unwrap(),
    };
    let found = asked[0]["text"].as_str().unwrap();
    assert!(
        found.starts_with(
            "12346 | 2026-11-30T10:00:00Z ERROR billing: invoice INV-12345 total mismatch\n"
        ),
        "{found}"
    );
    let first_lines = asked[1]["text"].as_str().unwrap();
    assert!(
        first_lines.starts_with(&text[..text.match_indices('\n').nth(1).unwrap().0 + 1]),
        "{first_lines}"
    );
}

#[test]
fn python_client_reads_a_big_file_compacted() {
    real_client_reads_a_big_file("python");
}

#[test]
fn typescript_client_reads_a_big_file_compacted() {
    real_client_reads_a_big_file("typescript");
}

/// A real client (Python `mcp`, TypeScript SDK) through the proxy in front of the real
/// server-everything: its `echo` returns a 2,500-line message, which arrives compacted with
/// the error line kept, and get_result (in a second session: a restart) finds the error.
/// `ctxopt-proxy --compact-results LIMIT` (logging to `dir/frames.jsonl`) in front of the
/// real server-everything; `None` when the peer is missing and may be skipped.
fn proxy_before_everything(dir: &std::path::Path, limit: usize) -> Option<Vec<std::ffi::OsString>> {
    let server = crate::support::peers::peer(
        "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    )?;
    let mut command: Vec<std::ffi::OsString> = vec![
        env!("CARGO_BIN_EXE_ctxopt-proxy").into(),
        "--log".into(),
        dir.join("frames.jsonl").into(),
        "--store".into(),
        dir.join("store.sqlite3").into(),
        "--workspace".into(),
        dir.into(),
        "--inject".into(),
        "none".into(),
        "--compact-results".into(),
        limit.to_string().into(),
        "--".into(),
        "node".into(),
    ];
    command.extend([server.into_os_string(), "stdio".into()]);
    Some(command)
}

fn real_client_gets_a_big_echo(client: &str) {
    let dir = tempfile::tempdir().unwrap();
    let Some(command) = proxy_before_everything(dir.path(), 2000) else {
        return;
    };
    // The calls go to the client as one argument: it stays under the kernel's 128 KiB.
    let message: String = (0..2_500)
        .map(|i| {
            if i == 1_210 {
                "TypeError: Cannot read properties of undefined (reading 'total')\n".to_string()
            } else {
                format!("worker {i} answered in {} ms\n", i % 17)
            }
        })
        .collect();
    let command: Vec<&std::ffi::OsStr> = command.iter().map(|a| a.as_os_str()).collect();
    let run = |calls: Value| match client {
        "python" => crate::bridge::serve::python()
            .map(|python| crate::bridge::filesystem::run_calls(&python, calls, &command)),
        _ => crate::bridge::filesystem::run_ts_calls(calls, &command),
    };
    let Some(seen) = run(json!([["echo", {"message": message}]])) else {
        return;
    };
    let got = seen[0]["text"].as_str().unwrap();
    assert_eq!(seen[0]["isError"], false);
    assert!(Tokenizer::O200kBase.count(got) <= 2000);
    assert!(
        got.contains("1211 | TypeError: Cannot read properties of undefined (reading 'total')"),
        "{got}"
    );
    assert!(
        got.contains(" lines left out; the whole result: get_result {\"handle\": \"r_"),
        "{got}"
    );
    let handle = handle_in(got);
    let asked = run(json!([
        ["get_result", {"handle": handle, "pattern": "TypeError"}],
        ["get_result", {"handle": handle, "lines": [1, 1]}]
    ]))
    .unwrap();
    assert_eq!(
        asked[0]["text"].as_str().unwrap().lines().next().unwrap(),
        "1211 | TypeError: Cannot read properties of undefined (reading 'total')"
    );
    assert!(asked[1]["text"]
        .as_str()
        .unwrap()
        .starts_with("Echo: worker 0 answered in 0 ms\n"));
}

#[test]
fn python_client_gets_a_big_echo_from_server_everything_compacted() {
    real_client_gets_a_big_echo("python");
}

#[test]
fn typescript_client_gets_a_big_echo_from_server_everything_compacted() {
    real_client_gets_a_big_echo("typescript");
}

/// The real server-everything's `gzip-file-as-resource` (a `data:` URI, no network) answers
/// with one `resource` block holding a base64 blob and no text: over the limit, it reaches the
/// real TypeScript client whole, and the log and the report say it was left whole.
#[test]
fn typescript_client_gets_a_gzipped_resource_from_server_everything_left_whole() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 1000;
    let Some(command) = proxy_before_everything(dir.path(), limit) else {
        return;
    };
    let command: Vec<&std::ffi::OsStr> = command.iter().map(|a| a.as_os_str()).collect();
    let data = format!("data:application/json;base64,{}", real_file_base64());
    let calls = json!([["gzip-file-as-resource",
                        {"name": "sentry.jsonl.gz", "data": data, "outputType": "resource"}]]);
    let Some(seen) = crate::bridge::filesystem::run_ts_calls(calls, &command) else {
        return;
    };
    assert_eq!(seen[0]["isError"], false, "{seen:?}");
    assert_eq!(seen[0]["text"], "", "no text block");
    let log = read_log(&dir.path().join("frames.jsonl"));
    let s2c = log
        .dir(Direction::S2c)
        .into_iter()
        .find(|f| f.tool.as_deref() == Some("gzip-file-as-resource"))
        .expect("the answer is logged");
    let content = &s2c.json().unwrap()["result"]["content"];
    assert_eq!(content[0]["type"], "resource", "{content}");
    assert_eq!(content.as_array().map(Vec::len), Some(1));
    assert!(s2c.tokens as usize > limit, "canary: over the limit");
    assert_eq!(
        s2c.left_whole.as_ref().map(|l| (l.reason, l.limit)),
        Some((LeftWholeReason::NoText, limit as u64))
    );
    assert!(log.dir(Direction::P2c).is_empty(), "nothing compacted");
    let report = ctxopt::measure::report::collect(&[dir.path().join("frames.jsonl")]).unwrap();
    let rows: Vec<_> = report
        .compaction
        .iter()
        .map(|r| (r.tool.as_str(), r.results, r.left_whole, r.saved_tokens))
        .collect();
    assert_eq!(rows, [("gzip-file-as-resource", 0, 1, 0)]);
}

/// `fixtures/frame-logs/everything-compaction.jsonl`, recorded through the proxy by
/// `proxy-tests/peers/record-frame-logs.sh everything-compaction` (the TypeScript SDK client, server-everything,
/// `--compact-results 500`), is a log of the current format: it validates against the
/// schema, and its compacted result, its `get_result` call and its result left whole read as
/// the proxy writes them today.
#[test]
fn the_recorded_compaction_log_is_of_the_current_format() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/frame-logs/everything-compaction.jsonl");
    let log = read_log(&path);
    assert_eq!(log.header.format_version, ctxopt::framelog::FORMAT_VERSION);
    log.assert_paired();
    log.assert_token_counts();
    let (s2c, p2c) = compacted(&log, "2");
    // The trailer counts the bytes written: the compacted frame in place of the server's.
    let s2c_bytes: u64 = log.dir(Direction::S2c).iter().map(|f| f.bytes).sum();
    assert_eq!(log.trailer.bytes.s2c, s2c_bytes - s2c.bytes + p2c.bytes);
    assert_eq!(
        log.trailer.frames_relayed.s2c,
        log.dir(Direction::S2c).len() as u64
    );
    assert_eq!(log.trailer.frames_logged, log.frames.len() as u64);
    assert!(log.trailer.errors.is_empty());
    assert_eq!(
        (s2c.tool.as_deref(), p2c.tool.as_deref()),
        (Some("echo"), Some("echo"))
    );
    assert!(s2c.tokens > 500, "canary: over the limit");
    let compacted_text = parse_str(p2c.raw.as_deref().unwrap());
    assert!(Tokenizer::O200kBase.count(text_of(&compacted_text, 0)) <= 500);
    let asked = log
        .dir(Direction::C2p)
        .into_iter()
        .find(|f| f.tool.as_deref() == Some("get_result"))
        .and_then(|f| f.json())
        .expect("the get_result call");
    assert!(text_of(&compacted_text, 0)
        .contains(asked["params"]["arguments"]["handle"].as_str().unwrap()));
    let whole = log
        .dir(Direction::S2c)
        .into_iter()
        .find(|f| f.left_whole.is_some())
        .expect("a result left whole");
    assert_eq!(whole.tool.as_deref(), Some("gzip-file-as-resource"));
    assert_eq!(
        whole.left_whole,
        Some(LeftWhole {
            reason: LeftWholeReason::NoText,
            limit: 500,
            structured_tokens: None,
            kept_cap: None,
        })
    );
    let report = ctxopt::measure::report::collect(&[path]).unwrap();
    let rows: Vec<_> = report
        .compaction
        .iter()
        .map(|r| (r.tool.as_str(), r.results, r.left_whole, r.saved_tokens))
        .collect();
    assert_eq!(
        rows,
        [
            ("echo", 1, 0, s2c.tokens - p2c.tokens),
            ("gzip-file-as-resource", 0, 1, 0)
        ]
    );
}

/// `CTXOPT_COMPACT_RESULTS` means what `--compact-results` means; a value it cannot take
/// stops the proxy before it starts the server, saying why.
#[test]
fn the_environment_variable_turns_compaction_on_like_the_option() {
    let run = |value: &str| {
        let cmd = ProxyCmd::fixture(&["text-result:tools/call:20000:100", "respond"])
            .option(&["--inject", "none"]);
        let mut child = cmd
            .command()
            .env("CTXOPT_COMPACT_RESULTS", value)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        // A value the proxy cannot take ends it before it reads: a broken pipe then.
        let _ = std::io::Write::write_all(&mut stdin, &call(1, "dump", json!({})));
        drop(stdin);
        child.wait_with_output().unwrap()
    };
    let on = run("2000");
    assert!(on.status.success());
    let got = parse(on.stdout.strip_suffix(b"\n").unwrap());
    let text = text_of(&got, 0);
    assert!(Tokenizer::O200kBase.count(text) <= 2000);
    assert!(text.contains("of 20,000 lines left out"), "{text}");

    let bad = run("12");
    assert_eq!(bad.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("CTXOPT_COMPACT_RESULTS=\"12\": expected at least 200 tokens"),
        "{stderr}"
    );
    assert!(bad.stdout.is_empty());
}

/// The store held by another process (here: this test's own SQLite connection in an
/// exclusive transaction) from before the proxy starts until the client has received every
/// frame: the relay does not wait for it. The result over the limit is relayed whole, said
/// so in the log (`store_busy`), and the `ping` behind it follows; the tool result's records
/// are stored once the lock is gone.
#[test]
fn a_locked_store_never_delays_a_result_nor_the_frames_behind_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    drop(ctxopt::store::Store::open_path(&store).unwrap());
    let holder = rusqlite::Connection::open(&store).unwrap();
    holder.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let cmd = proxy(
        &["text-result:tools/call:20000:50", "method-result:ping:{}"],
        &store,
        dir.path(),
    );
    let mut s = Session::start(&cmd);
    s.send(&call(1, "dump", json!({})));
    s.send(&request(2, "ping", json!({})));
    let result = s.recv();
    let ping = s.recv();
    // Only now, with both frames at the client, does the lock go.
    holder.execute_batch("COMMIT").unwrap();
    assert_eq!(parse(&ping)["id"], 2, "the ping follows the result");
    assert!(
        result.len() > 1_000_000,
        "canary: the result is large ({})",
        result.len()
    );
    let (_, _, stderr) = s.close_with_stderr();
    let log = read_log(cmd.log_path());
    let s2c = answer(&log, "1");
    assert_eq!(
        result.strip_suffix(b"\n").unwrap(),
        s2c.raw.as_deref().unwrap().as_bytes(),
        "relayed whole"
    );
    assert_eq!(
        s2c.left_whole.as_ref().map(|l| l.reason),
        Some(LeftWholeReason::StoreBusy),
        "{stderr}"
    );
    assert!(log.dir(Direction::P2c).is_empty());
    assert!(
        stderr.contains("dump result relayed whole: the store is busy"),
        "{stderr}"
    );
    // The tap waited for the lock off the relay, and stored the result's records after it.
    let stored: i64 = rusqlite::Connection::open(&store)
        .unwrap()
        .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))
        .unwrap();
    assert!(
        stored > 0,
        "the result was stored once the lock went: {stderr}"
    );
}

/// A store file deleted while the proxy runs: what the proxy writes after goes nowhere, and
/// it says so on stderr and in the log's trailer.
#[test]
fn a_store_deleted_while_the_proxy_runs_is_said_on_stderr_and_in_the_trailer() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("s.db");
    let cmd = proxy(&["text-result:tools/call:3:20"], &store, dir.path());
    let mut s = Session::start(&cmd);
    s.send(&call(1, "dump", json!({})));
    s.recv();
    // The first result's records are in the store (the canary), then the file goes.
    let started = std::time::Instant::now();
    while rusqlite::Connection::open(&store)
        .and_then(|c| c.query_row("SELECT COUNT(*) FROM records", [], |r| r.get::<_, i64>(0)))
        .unwrap_or(0)
        == 0
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "never stored"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", store.display()));
    }
    s.send(&call(2, "dump", json!({})));
    s.recv();
    let (_, _, stderr) = s.close_with_stderr();
    assert!(
        stderr.contains("the store file was deleted while this process ran"),
        "{stderr}"
    );
    let log = read_log(cmd.log_path());
    assert!(
        log.trailer
            .errors
            .iter()
            .any(|e| e.contains("was deleted while this process ran")),
        "{:?}",
        log.trailer.errors
    );
}
