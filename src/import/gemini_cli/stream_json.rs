//! Gemini CLI's headless transcript, `gemini -p PROMPT --output-format stream-json`: one
//! JSON event a line, each `{type, timestamp, …}`:
//!
//! - `init` (`session_id`, `model`): skipped and counted;
//! - `message` (`role` `user` or `assistant`, `content`, `delta: true` for a chunk of a
//!   streamed answer): a message; consecutive assistant chunks are one message;
//! - `tool_use` (`tool_name`, `tool_id`, `parameters`) and its `tool_result` (`tool_id`,
//!   `status`, `output`, or `error: {type, message}`): the same records as the call in a
//!   saved chat (`read_file` a file, `replace` a diff, `run_shell_command` a tool output…);
//! - `error` (`severity`, `message`): an error record;
//! - `result` (the run's status and statistics): skipped and counted.
//!
//! Other event types are skipped and counted, a line that is not a JSON object is an error
//! naming it, and the rest imports.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::format::{FunctionResponse, Response, ResultPart, ToolCall};
use super::{message_record, tool_call};
use crate::import::typed::{flag, text_or_empty, text_or_none};
use crate::import::{first_line, gather, parts, rfc3339, ImportSummary, INJECTED_MARKER};
use crate::records::{ErrorRecord, Records, Role, SessionRecord};

/// One event of the stream, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Event {
    Init {},
    Message {
        #[serde(default, deserialize_with = "text_or_empty")]
        role: String,
        #[serde(default, deserialize_with = "text_or_empty")]
        content: String,
        #[serde(default, deserialize_with = "flag")]
        delta: bool,
    },
    ToolUse {
        #[serde(default, deserialize_with = "text_or_none")]
        tool_name: Option<String>,
        #[serde(default, deserialize_with = "text_or_empty")]
        tool_id: String,
        #[serde(default)]
        parameters: Value,
    },
    ToolResult {
        #[serde(default, deserialize_with = "text_or_empty")]
        tool_id: String,
        #[serde(default, deserialize_with = "text_or_none")]
        status: Option<String>,
        /// Text, or (in some versions) any JSON value.
        #[serde(default)]
        output: Value,
        #[serde(default)]
        error: Option<Value>,
    },
    Error {
        #[serde(default, deserialize_with = "text_or_empty")]
        severity: String,
        #[serde(default, deserialize_with = "text_or_empty")]
        message: String,
    },
    Result {},
}

/// Whether `first_line` opens a stream-json transcript: an `init` event.
pub(super) fn is_stream(first_line: &str) -> bool {
    serde_json::from_str::<Value>(first_line)
        .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("init"))
}

/// The records of a stream-json transcript.
pub(super) fn import_stream(text: &str) -> (Records, ImportSummary) {
    let mut summary = ImportSummary::default();
    let mut out: Vec<SessionRecord> = Vec::new();
    let mut views = super::FileViews::default();
    let mut task: Option<String> = None;
    let mut calls: BTreeMap<String, (String, Value)> = BTreeMap::new();
    // The assistant answer being streamed: its first line, timestamp and text so far.
    let mut answer: Option<(usize, Option<String>, String)> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        summary.lines += 1;
        let n = i + 1;
        let value: Value = match serde_json::from_str(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                summary.error(n, "expected a JSON object");
                continue;
            }
            Err(e) => {
                summary.error(n, format!("not JSON: {e}"));
                continue;
            }
        };
        let timestamp = rfc3339(value.get("timestamp"));
        let Ok(event) = Event::deserialize(&value) else {
            let kind = value
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("(none)");
            summary.skip(format!("type:{kind}"));
            continue;
        };
        let chunk =
            matches!(&event, Event::Message { role, delta: true, .. } if role == "assistant");
        if !chunk {
            flush(&mut answer, &mut out);
        }
        let mut common = parts(n, None, timestamp.clone());
        match event {
            Event::Init {} => summary.skip("init"),
            Event::Result {} => summary.skip("result"),
            Event::Message { content, .. } if content.contains(INJECTED_MARKER) => {
                summary.skip("ctxopt-context")
            }
            Event::Message { role, content, .. } if role == "user" => {
                if !content.trim().is_empty() {
                    task.get_or_insert_with(|| content.trim().to_string());
                    out.push(message_record(common("msg"), Role::User, content));
                }
            }
            Event::Message { content, .. } if chunk => {
                answer
                    .get_or_insert_with(|| (n, timestamp, String::new()))
                    .2
                    .push_str(&content);
            }
            Event::Message { role, content, .. } if role == "assistant" => {
                if !content.trim().is_empty() {
                    out.push(message_record(common("msg"), Role::Assistant, content));
                }
            }
            Event::Message { role, .. } => summary.skip(format!("message:{role}")),
            Event::ToolUse {
                tool_name,
                tool_id,
                parameters,
            } => {
                let name = tool_name.unwrap_or_else(|| "tool".to_string());
                calls.insert(tool_id, (name, parameters));
            }
            Event::ToolResult {
                tool_id,
                status,
                output,
                error,
            } => {
                let Some((name, args)) = calls.remove(&tool_id) else {
                    summary.skip("tool_result without its call");
                    continue;
                };
                let call = ToolCall {
                    name: Some(name),
                    args,
                    status,
                    result: vec![ResultPart {
                        function_response: Some(FunctionResponse {
                            response: Some(Response {
                                output: text_of(&output),
                                error: error.map(|e| error_text(&e)),
                            }),
                        }),
                    }],
                    result_display: None,
                };
                tool_call(&call, &mut common, &mut views, &mut out);
            }
            Event::Error { severity, message } => out.push(SessionRecord::Error(ErrorRecord {
                common: common("err"),
                message: format!("{severity}: {}", first_line(&message, 300)),
                stack: message.trim().contains('\n').then_some(message),
            })),
        }
    }
    flush(&mut answer, &mut out);
    let pending = calls.len();
    for _ in 0..pending {
        summary.skip("tool_use without its result");
    }
    let records = gather(task, out, &mut summary);
    (records, summary)
}

/// Ends the assistant answer being streamed, if any, as one message.
fn flush(answer: &mut Option<(usize, Option<String>, String)>, out: &mut Vec<SessionRecord>) {
    if let Some((line, timestamp, text)) = answer.take() {
        if !text.trim().is_empty() {
            let mut common = parts(line, None, timestamp);
            out.push(message_record(common("msg"), Role::Assistant, text));
        }
    }
}

/// A tool's output as text: a string as is, any other value as JSON, none when absent.
fn text_of(output: &Value) -> Option<String> {
    match output {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// The text of a `tool_result`'s `error`: its `message`, else the error as JSON.
fn error_text(error: &Value) -> String {
    match error.get("message").and_then(Value::as_str) {
        Some(message) => message.to_string(),
        None => text_of(error).unwrap_or_default(),
    }
}
