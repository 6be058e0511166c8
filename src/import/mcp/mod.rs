//! Ingestion: a `tools/call` request and its response in, session records out. A pure
//! function of the two frames and their provenance; the caller stores the records.
//!
//! What each result becomes (documented in `docs/injected-tools.md`, "What is ingested"):
//! - a JSON-RPC error → an error record (`<tool>: JSON-RPC error <code>: <message>`, the
//!   error's `data` as the stack);
//! - a result with `isError: true` → an error record (`<tool>: <content text>`);
//! - a file read (see [`file_reads`]) → one file snapshot per file, and an
//!   error record per file that failed to read;
//! - anything else → a tool output (content as text, binary content as references), plus a
//!   failed test result for every failing test the optimizer's extractor finds in it.
//!
//! Calls to the injected tools give nothing, so the proxy never ingests its own answers.

use serde_json::Value;

pub(crate) mod content;
pub(crate) mod stored_text;

use crate::import::file_reads::mcp_tool::{self as file_reads, FileOutcome};
use crate::optimizer::extract::failing_tests::failing_tests;
use crate::records::SessionRecord;
use crate::records::{Common, ErrorRecord, FileRecord, TestResult, TestStatus, ToolOutput};
use crate::store::{NewRecord, Provenance};

/// A `tools/call` request and its response, as raw frame text, with where they were logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FramePair<'a> {
    /// The request frame's JSON text.
    pub request: &'a str,
    /// The response frame's JSON text.
    pub response: &'a str,
    /// The frame log both were written to.
    pub log_path: Option<&'a str>,
    /// The response frame's `seq` in that log.
    pub seq: Option<u64>,
    /// The response frame's time (RFC 3339), used as the records' timestamp.
    pub timestamp: Option<&'a str>,
}

/// Why a frame pair gave no records.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum IngestError {
    /// A frame is not a JSON object.
    #[error("{which} frame is not a JSON-RPC object")]
    NotJson {
        /// `request` or `response`.
        which: &'static str,
    },
    /// The request is not a `tools/call` with a tool name.
    #[error("not a tools/call request")]
    NotToolCall,
    /// The response's id is not the request's.
    #[error("the response id {response} does not answer request id {request}")]
    IdMismatch {
        /// The request's id as JSON.
        request: String,
        /// The response's id as JSON.
        response: String,
    },
    /// The response has neither `result` nor `error`.
    #[error("the response has neither result nor error")]
    NoOutcome,
    /// The call went to an injected tool: never ingested.
    #[error("call to the injected tool {0}")]
    InjectedTool(String),
}

/// The records a frame pair gives. `is_injected` says whether a tool name is one of the
/// proxy's injected tools (as the client sees them).
pub fn ingest(
    pair: &FramePair<'_>,
    is_injected: &dyn Fn(&str) -> bool,
) -> Result<Vec<NewRecord>, IngestError> {
    let request = parse(pair.request, "request")?;
    let response = parse(pair.response, "response")?;
    if request.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Err(IngestError::NotToolCall);
    }
    let params = request.get("params").unwrap_or(&Value::Null);
    let tool = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or(IngestError::NotToolCall)?;
    if is_injected(tool) {
        return Err(IngestError::InjectedTool(tool.to_string()));
    }
    let (req_id, resp_id) = (request.get("id"), response.get("id"));
    if req_id != resp_id {
        let show = |v: Option<&Value>| v.map_or("(none)".into(), Value::to_string);
        return Err(IngestError::IdMismatch {
            request: show(req_id),
            response: show(resp_id),
        });
    }
    let arguments = params
        .get("arguments")
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let made = Made {
        pair,
        tool,
        arguments: &arguments,
    };
    if let Some(error) = response.get("error") {
        return Ok(vec![made.jsonrpc_error(error)]);
    }
    let result = response.get("result").ok_or(IngestError::NoOutcome)?;
    let blocks: &[Value] = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice);
    let text = result_text(result, blocks);
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        let message = if text.is_empty() {
            "(no message)"
        } else {
            &text
        };
        return Ok(vec![made.error(format!("{tool}: {message}"), None, 0)]);
    }
    if let Some(reads) = file_reads::file_reads(tool, &arguments, blocks) {
        return Ok(reads
            .into_iter()
            .enumerate()
            .map(|(part, read)| made.file_read(read, part as u32))
            .collect());
    }
    let failing = failing_tests(&text);
    let mut out = vec![made.record(
        SessionRecord::ToolOutput(ToolOutput {
            common: made.common(),
            tool: tool.to_string(),
            args: Some(arguments.clone()),
            output: text,
            exit_code: None,
            cwd: None,
        }),
        0,
    )];
    for (i, name) in failing.into_iter().enumerate() {
        out.push(made.record(
            SessionRecord::TestResult(TestResult {
                common: made.common(),
                name,
                status: TestStatus::Failed,
                output: None,
            }),
            i as u32 + 1,
        ));
    }
    Ok(out)
}

fn parse(text: &str, which: &'static str) -> Result<Value, IngestError> {
    match serde_json::from_str::<Value>(text) {
        Ok(v @ Value::Object(_)) => Ok(v),
        _ => Err(IngestError::NotJson { which }),
    }
}

/// A result's text: its content blocks, or its structured content when it has no blocks.
fn result_text(result: &Value, blocks: &[Value]) -> String {
    if !blocks.is_empty() {
        return content::render(blocks);
    }
    match result.get("structuredContent") {
        Some(v) if !v.is_null() => stored_text::cap(&v.to_string()).into_owned(),
        _ => String::new(),
    }
}

/// What every record of one call shares.
struct Made<'a> {
    pair: &'a FramePair<'a>,
    tool: &'a str,
    arguments: &'a Value,
}

impl Made<'_> {
    fn common(&self) -> Common {
        Common {
            timestamp: self.pair.timestamp.map(str::to_string),
            ..Common::default()
        }
    }

    fn record(&self, record: SessionRecord, part: u32) -> NewRecord {
        NewRecord {
            record,
            provenance: Provenance {
                log_path: self.pair.log_path.map(str::to_string),
                seq: self.pair.seq,
                part,
                tool: Some(self.tool.to_string()),
                arguments: Some(self.arguments.clone()),
            },
        }
    }

    fn error(&self, message: String, stack: Option<String>, part: u32) -> NewRecord {
        self.record(
            SessionRecord::Error(ErrorRecord {
                common: self.common(),
                message,
                stack,
            }),
            part,
        )
    }

    fn jsonrpc_error(&self, error: &Value) -> NewRecord {
        let code = error.get("code").map_or("?".into(), Value::to_string);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("(no message)");
        let stack = error.get("data").filter(|d| !d.is_null()).map(|d| match d {
            Value::String(s) => stored_text::cap(s).into_owned(),
            other => stored_text::cap(&other.to_string()).into_owned(),
        });
        self.error(
            format!("{}: JSON-RPC error {code}: {message}", self.tool),
            stack,
            0,
        )
    }

    fn file_read(&self, read: FileOutcome, part: u32) -> NewRecord {
        match read {
            FileOutcome::Snapshot { path, content } => self.record(
                SessionRecord::File(FileRecord {
                    common: self.common(),
                    path,
                    content,
                }),
                part,
            ),
            FileOutcome::Failed { path, message } => {
                self.error(format!("{}: {path}: {message}", self.tool), None, part)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::records::Kind;

    fn pair<'a>(request: &'a str, response: &'a str) -> FramePair<'a> {
        FramePair {
            request,
            response,
            log_path: Some("run.jsonl"),
            seq: Some(7),
            timestamp: Some("2026-01-02T03:04:05.000006Z"),
        }
    }

    fn call(tool: &str, args: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": tool, "arguments": args}})
        .to_string()
    }

    fn result(result: Value) -> String {
        json!({"jsonrpc": "2.0", "id": 4, "result": result}).to_string()
    }

    fn none(_: &str) -> bool {
        false
    }

    fn run(request: &str, response: &str) -> Vec<NewRecord> {
        ingest(&pair(request, response), &none).unwrap()
    }

    #[test]
    fn a_file_read_is_a_snapshot_with_provenance() {
        let out = run(
            &call("read_text_file", json!({"path": "/p/a.rs"})),
            &result(json!({"content": [{"type": "text", "text": "fn a() {}"}],
                            "structuredContent": {"content": "fn a() {}"}})),
        );
        assert_eq!(out.len(), 1);
        let SessionRecord::File(f) = &out[0].record else {
            panic!("{:?}", out[0]);
        };
        assert_eq!(
            (f.path.as_str(), f.content.as_str()),
            ("/p/a.rs", "fn a() {}")
        );
        assert_eq!(
            f.common.timestamp.as_deref(),
            Some("2026-01-02T03:04:05.000006Z")
        );
        let p = &out[0].provenance;
        assert_eq!(p.log_path.as_deref(), Some("run.jsonl"));
        assert_eq!((p.seq, p.part), (Some(7), 0));
        assert_eq!(p.tool.as_deref(), Some("read_text_file"));
        assert_eq!(p.arguments, Some(json!({"path": "/p/a.rs"})));
    }

    #[test]
    fn is_error_results_and_jsonrpc_errors_are_errors() {
        let out = run(
            &call("read_text_file", json!({"path": "/p/missing"})),
            &result(json!({"content": [{"type": "text",
                "text": "Error: ENOENT: no such file or directory, open '/p/missing'"}],
                "isError": true})),
        );
        let SessionRecord::Error(e) = &out[0].record else {
            panic!("{:?}", out[0]);
        };
        assert_eq!(
            e.message,
            "read_text_file: Error: ENOENT: no such file or directory, open '/p/missing'"
        );
        let out = run(
            &call("search", json!({})),
            &json!({"jsonrpc": "2.0", "id": 4,
                    "error": {"code": -32602, "message": "Invalid params", "data": {"field": "q"}}})
            .to_string(),
        );
        let SessionRecord::Error(e) = &out[0].record else {
            panic!("{:?}", out[0]);
        };
        assert_eq!(e.message, "search: JSON-RPC error -32602: Invalid params");
        assert_eq!(e.stack.as_deref(), Some(r#"{"field":"q"}"#));
    }

    #[test]
    fn images_are_references_not_base64() {
        let data = "iVBORw0KGgoA".repeat(100);
        let out = run(
            &call("screenshot", json!({})),
            &result(json!({"content": [
                {"type": "text", "text": "done"},
                {"type": "image", "data": data, "mimeType": "image/png"}]})),
        );
        let SessionRecord::ToolOutput(t) = &out[0].record else {
            panic!("{:?}", out[0]);
        };
        assert_eq!(t.output, "done\n[image image/png 900 bytes]");
        assert!(!out[0].record.to_json().contains("iVBOR"));
    }

    #[test]
    fn injected_calls_give_nothing() {
        let injected = |name: &str| name == "build_context";
        let err = ingest(
            &pair(
                &call("build_context", json!({"task": "x"})),
                &result(json!({"content": [{"type": "text", "text": "ctx"}]})),
            ),
            &injected,
        )
        .unwrap_err();
        assert_eq!(err, IngestError::InjectedTool("build_context".into()));
    }

    #[test]
    fn failing_tests_in_a_run_become_test_results() {
        let out = run(
            &call("run_command", json!({"command": "cargo test"})),
            &result(json!({"content": [{"type": "text", "text":
                "running 2 tests\ntest billing::rounds ... FAILED\ntest billing::adds ... ok\n"}]})),
        );
        let kinds: Vec<_> = out.iter().map(|r| r.record.kind()).collect();
        assert_eq!(kinds, [Kind::ToolOutput, Kind::TestResult]);
        let SessionRecord::TestResult(t) = &out[1].record else {
            unreachable!()
        };
        assert_eq!(
            (t.name.as_str(), t.status),
            ("billing::rounds", TestStatus::Failed)
        );
        assert_eq!(out[1].provenance.part, 1);
    }

    #[test]
    fn structured_only_results_and_mismatches() {
        let out = run(
            &call("add", json!({"a": 1})),
            &result(json!({"structuredContent": {"result": 42}})),
        );
        let SessionRecord::ToolOutput(t) = &out[0].record else {
            unreachable!()
        };
        assert_eq!(t.output, r#"{"result":42}"#);
        let other_id = json!({"jsonrpc": "2.0", "id": 5, "result": {}}).to_string();
        assert!(matches!(
            ingest(&pair(&call("add", json!({})), &other_id), &none),
            Err(IngestError::IdMismatch { .. })
        ));
        let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}).to_string();
        assert_eq!(
            ingest(&pair(&list, &result(json!({}))), &none),
            Err(IngestError::NotToolCall)
        );
        assert_eq!(
            ingest(&pair("not json", &result(json!({}))), &none),
            Err(IngestError::NotJson { which: "request" })
        );
    }

    /// One fixture of representative exchanges, one snapshot of the records they give (in
    /// the records format, with provenance).
    #[test]
    fn representative_exchanges_snapshot() {
        let exchanges = [
            (
                call("read_multiple_files", json!({"paths": ["/p/a.txt", "/p/gone.txt"]})),
                result(json!({"content": [{"type": "text",
                    "text": "/p/a.txt:\nalpha\n\n---\n/p/gone.txt: Error - ENOENT: no such file or directory, open '/p/gone.txt'"}]})),
            ),
            (
                call("get_file_contents", json!({"owner": "o", "repo": "r", "path": "README.md"})),
                result(json!({"content": [
                    {"type": "text", "text": "successfully downloaded text file (SHA: 1a2b)"},
                    {"type": "resource", "resource": {"uri": "repo://o/r/contents/README.md",
                        "mimeType": "text/markdown", "text": "# r\n"}}]})),
            ),
            (
                call("read_media_file", json!({"path": "/p/logo.png"})),
                result(json!({"content": [{"type": "image", "data": "iVBORw0KGgoA", "mimeType": "image/png"}]})),
            ),
            (
                call("run_tests", json!({"cmd": "pytest"})),
                result(json!({"content": [{"type": "text",
                    "text": "FAILED tests/test_bill.py::test_round - AssertionError\n1 failed, 3 passed"}]})),
            ),
            (
                call("search", json!({"q": ""})),
                json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "q is empty"}}).to_string(),
            ),
        ];
        let made: Vec<Value> = exchanges
            .iter()
            .flat_map(|(req, resp)| run(req, resp))
            .map(|r| {
                json!({
                    "kind": r.record.kind().name(),
                    "record": serde_json::from_str::<Value>(&r.record.to_json()).unwrap(),
                    "part": r.provenance.part,
                    "tool": r.provenance.tool,
                })
            })
            .collect();
        // Through text: insta cannot serialize arbitrary-precision numbers itself.
        insta::assert_snapshot!(serde_json::to_string_pretty(&made).unwrap());
    }

    #[test]
    fn a_huge_output_is_stored_capped_and_its_tail_still_read() {
        use crate::import::mcp::stored_text::STORED_TEXT_LIMIT;
        let body = "building module\n".repeat(STORED_TEXT_LIMIT / 16 + 65_536);
        let text = format!("{body}FAILED tests/test_bill.py::test_round - AssertionError\n");
        let out = run(
            &call("run_tests", json!({"cmd": "pytest"})),
            &result(json!({"content": [{"type": "text", "text": text}]})),
        );
        let SessionRecord::ToolOutput(o) = &out[0].record else {
            panic!("{:?}", out[0].record.kind());
        };
        assert!(
            o.output.len() < STORED_TEXT_LIMIT + 200,
            "{}",
            o.output.len()
        );
        assert!(o.output.contains("bytes left out of the store here"));
        assert!(o.output.ends_with("test_round - AssertionError\n"));
        assert_eq!(out.len(), 2, "the failing test in the kept tail is found");
    }
}
