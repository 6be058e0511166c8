//! The importer for Gemini CLI saved chats (`~/.gemini/tmp/<project hash>/chats/session-*.json`):
//! one JSON object with `sessionId`, `startTime`, … and `messages[]`, each with `id`,
//! `timestamp`, `type` (`user`, `gemini`, `info`, `error`, …) and `content` (a string, or in
//! newer versions a list of `{text}` parts); `gemini` messages carry `thoughts` and
//! `toolCalls[]` (`name`, `args`, `status`, `result[].functionResponse.response.output|error`,
//! `resultDisplay`). The JSON Lines chat of 2026 (a header line, then one message a line,
//! a repeated `id` being a newer version, `$set` lines) is read too ([`import_chat`]), and so
//! is a headless run's `--output-format stream-json` transcript ([`stream_json`]).
//!
//! What becomes what (documented in `docs/import.md`): `user` → a `user` message (the first
//! is the task); `gemini` content → an `assistant` message; `error` → an error record; each
//! tool call: `read_file` without a range → a file, `write_file` → a file (each the file's
//! current view), `replace` → a diff (`resultDisplay.fileDiff`) and the view with the
//! replacement applied, `write_todos` → the session's plan (a tool output `plan-…`
//! listing the items with their status), `run_shell_command` → a tool output with its command,
//! what it printed and its exit code ([`ShellResult`]; a test result per test its output
//! names), or the file it read, anything else → a tool output; a call
//! whose `status` is `error` → an error record as well. Ids carry the message's position
//! (1-based) and the first characters of its id: `msg-L3-0c78345f`. Thoughts, `info`
//! messages and unknown types are skipped and counted.

use serde_json::Value;

use super::file_reads::shell::{file_reads, FileViews};
use super::plans::listed_plan;
use super::replacements::{replaced, Times};
use super::test_runs::{run_records, Run};
use super::typed;
use super::{
    call_output, content_text, first_line, gather, parts, rfc3339, ImportError, ImportSummary,
    INJECTED_MARKER,
};
use crate::records::SessionRecord;
use format::{Chat, ChatMessage, Response, ToolCall};

use crate::records::{Common, DiffRecord, ErrorRecord, FileRecord, Message, Records, Role};

/// Converts the text of a saved chat into records: one JSON object, or the JSON Lines chat
/// Gemini CLI writes since 2026 (a header line, then one message a line; see `docs/import.md`),
/// or a headless run's `--output-format stream-json` transcript ([`stream_json`]).
pub(crate) fn import_chat(text: &str) -> Result<(Records, ImportSummary), ImportError> {
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    if stream_json::is_stream(first) {
        return Ok(stream_json::import_stream(text));
    }
    let root: Value = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(e) => return chat_lines(text).ok_or(ImportError::Json(e)),
    };
    let Chat { messages } = typed::from_value(root)?;
    Ok(import_messages(&messages, ImportSummary::default()))
}

/// A JSON Lines chat: a header line (`sessionId`, `projectHash`, `startTime`, no `type`),
/// then one message a line — the shape of a saved chat's `messages[]` — where a line
/// repeating an earlier message's `id` is a newer version of it (it replaces it in place),
/// and `{"$set": …}` lines update the header. `None` when the first line is not a JSON
/// object (the text is then no chat at all); a later line that is not one is an error
/// naming it, and the rest imports.
fn chat_lines(text: &str) -> Option<(Records, ImportSummary)> {
    let (_, messages, summary) = chat_lines_messages(text)?;
    let read = summary.lines;
    let (records, mut summary) = import_messages(&messages, summary);
    summary.lines = read;
    Some((records, summary))
}

/// The header and the messages (each in its latest version, in first-seen order) of a JSON
/// Lines chat, with the lines read, skipped and unreadable counted; `None` when the first
/// line is not a JSON object. See [`import_chat`].
pub(crate) fn chat_lines_messages(text: &str) -> Option<(Value, Vec<Value>, ImportSummary)> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let first: Value = serde_json::from_str(lines.next()?).ok()?;
    first.as_object()?;
    let mut header = Value::Null;
    let mut summary = ImportSummary::default();
    let mut messages: Vec<Value> = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        summary.lines += 1;
        let value = match serde_json::from_str::<Value>(line) {
            Ok(v) if v.is_object() => v,
            Ok(_) => {
                summary.error(i + 1, "expected a JSON object");
                continue;
            }
            Err(e) => {
                summary.error(i + 1, format!("not JSON: {e}"));
                continue;
            }
        };
        if value.get("$set").is_some() {
            summary.skip("$set");
            continue;
        }
        if value.get("type").is_none() && value.get("sessionId").is_some() {
            summary.skip("header");
            header = value;
            continue;
        }
        let id = value.get("id").and_then(Value::as_str).map(str::to_string);
        let earlier = id.as_deref().and_then(|id| {
            messages
                .iter()
                .position(|m| m.get("id").and_then(Value::as_str) == Some(id))
        });
        match earlier {
            Some(at) => {
                summary.skip("message update");
                messages[at] = value;
            }
            None => messages.push(value),
        }
    }
    Some((header, messages, summary))
}

/// The records of a chat's messages, counted in `summary` (each message a line).
fn import_messages(messages: &[Value], mut summary: ImportSummary) -> (Records, ImportSummary) {
    let mut out: Vec<SessionRecord> = Vec::new();
    let mut views = FileViews::default();
    let mut task: Option<String> = None;
    for (i, message) in messages.iter().enumerate() {
        summary.lines += 1;
        let n = i + 1;
        if !message.is_object() {
            summary.error(n, format!("messages[{i}]: expected a JSON object"));
            continue;
        }
        let message: ChatMessage = match typed::from_value(message.clone()) {
            Ok(message) => message,
            Err(e) => {
                summary.error(n, format!("messages[{i}]: {e}"));
                continue;
            }
        };
        let mut common = parts(
            n,
            message.id.as_deref(),
            rfc3339(message.timestamp.as_ref()),
        );
        let content = content_text(message.content.as_ref());
        if content.contains(INJECTED_MARKER) {
            summary.skip("ctxopt-context");
        } else if !content.trim().is_empty() {
            match message.kind.as_deref().unwrap_or("(none)") {
                "user" => {
                    task.get_or_insert_with(|| content.trim().to_string());
                    out.push(message_record(common("msg"), Role::User, content));
                }
                "gemini" => out.push(message_record(common("msg"), Role::Assistant, content)),
                "error" => out.push(SessionRecord::Error(ErrorRecord {
                    common: common("err"),
                    message: first_line(&content, 300),
                    stack: content.trim().contains('\n').then_some(content),
                })),
                other => summary.skip(format!("type:{other}")),
            }
        }
        if message.thoughts.is_some() {
            summary.skip("thoughts");
        }
        for call in &message.tool_calls {
            tool_call(call, &mut common, &mut views, &mut out);
        }
    }
    let records = gather(task, out, &mut summary);
    (records, summary)
}

fn message_record(common: Common, role: Role, text: String) -> SessionRecord {
    SessionRecord::Message(Message { common, role, text })
}

/// The records one tool call makes.
fn tool_call(
    call: &ToolCall,
    common: &mut impl FnMut(&str) -> Common,
    views: &mut FileViews,
    out: &mut Vec<SessionRecord>,
) {
    let name = call.name.as_deref().unwrap_or("tool");
    let response = call.response();
    let field = |pick: fn(&Response) -> &Option<String>| response.and_then(|r| pick(r).as_deref());
    let error = field(|r| &r.error);
    let failed = call.status.as_deref() == Some("error") || error.is_some();
    let output = field(|r| &r.output).or(error).unwrap_or("").to_string();
    if failed {
        out.push(SessionRecord::Error(ErrorRecord {
            common: common("err"),
            message: format!("{name}: {}", first_line(&output, 300)),
            stack: output.trim().contains('\n').then(|| output.clone()),
        }));
        return;
    }
    let ranged = call.args.get("offset").is_some() || call.args.get("limit").is_some();
    match (name, call.arg("file_path")) {
        ("read_file", Some(path)) if !ranged => out.push(whole_file(common, views, path, output)),
        ("write_file", Some(path)) => {
            let content = call.arg("content").unwrap_or_default().to_string();
            out.push(whole_file(common, views, path, content));
        }
        ("replace", Some(path)) => {
            let shown = call
                .result_display
                .as_ref()
                .and_then(|d| d.file_diff.clone());
            let diff = shown.unwrap_or_else(|| {
                let lines = |k: &str, sign: char| {
                    call.arg(k)
                        .unwrap_or_default()
                        .lines()
                        .map(|l| format!("{sign}{l}\n"))
                        .collect::<String>()
                };
                format!(
                    "--- a/{path}\n+++ b/{path}\n@@ @@\n{}{}",
                    lines("old_string", '-'),
                    lines("new_string", '+')
                )
            });
            out.push(SessionRecord::Diff(DiffRecord {
                common: common("diff"),
                path: path.to_string(),
                diff,
            }));
            // The current view: the file as read or written whole with this change applied;
            // an empty old text creates the file (the tool's own rule).
            let old = call.arg("old_string").unwrap_or_default();
            let new = call.arg("new_string").unwrap_or_default();
            let times = call
                .args
                .get("expected_replacements")
                .and_then(Value::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .map_or(Times::Exactly(1), Times::Exactly);
            let view = match views.whole_content(path) {
                _ if old.is_empty() => Some(new.to_string()),
                Some(content) => replaced(&content, old, new, times),
                None => None,
            };
            match view {
                Some(content) => out.push(whole_file(common, views, path, content)),
                None => views.forget(path),
            }
        }
        // `{"todos": [{"description", "status"}, …]}`, the whole list each time.
        ("write_todos", _) if call.args.get("todos").is_some_and(Value::is_array) => {
            let plan = listed_plan(name, &call.args, "todos", "description").unwrap_or_default();
            out.push(call_output(common("plan"), name, &call.args, plan));
        }
        ("run_shell_command", _) if call.arg("command").is_some() => {
            let command = call.arg("command").unwrap_or_default().to_string();
            let shell = ShellResult::of(&output);
            let reads = file_reads(&command, &shell.output, shell.exit_code);
            // A command that reads a file is the file's content, as in every importer.
            for mut read in reads.iter().cloned() {
                if let Some(dir) = &shell.directory {
                    read.ran_in(dir);
                }
                let (path, content) = views.add(&read);
                out.push(SessionRecord::File(FileRecord {
                    common: common("file"),
                    path,
                    content,
                }));
            }
            if !reads.is_empty() {
                return;
            }
            views.forget_written(&command);
            let run = Run {
                tool: command,
                args: Some(call.args.clone()),
                output: shell.output,
                exit_code: shell.exit_code,
            };
            run_records(run, common, out);
        }
        _ => {
            let tool = name.to_string();
            let args = (!call.args.is_null()).then(|| call.args.clone());
            let run = Run {
                tool,
                args,
                output,
                exit_code: None,
            };
            run_records(run, common, out);
        }
    }
}

/// A file record of `path` read or written whole, which becomes its view.
fn whole_file(
    common: &mut impl FnMut(&str) -> Common,
    views: &mut FileViews,
    path: &str,
    content: String,
) -> SessionRecord {
    views.write(path, &content.lines().collect::<Vec<_>>());
    SessionRecord::File(FileRecord {
        common: common("file"),
        path: path.to_string(),
        content,
    })
}

/// What `run_shell_command` answered, taken out of the text Gemini CLI gives the model:
/// `Command: …`, `Directory: …`, `Output: …` (its lines), `Error: …`, `Exit Code: …`, then
/// `Signal:`, `Background PIDs:`, `Process Group PGID:` lines.
#[derive(Debug, PartialEq)]
struct ShellResult {
    /// What the command printed (`(empty)` is nothing), and the error line when there was
    /// one (not `(none)`).
    output: String,
    /// The `Exit Code:` (`(none)`: a signal ended the command).
    exit_code: Option<i64>,
    /// The `Directory:` the command ran in, relative to the project (`(root)`: none).
    directory: Option<String>,
}

impl ShellResult {
    /// The parts of `text`; a text not in that shape is all output, with the exit code of an
    /// `Exit Code:` line when one is there.
    fn of(text: &str) -> ShellResult {
        Self::parse(text).unwrap_or_else(|| ShellResult {
            output: text.to_string(),
            exit_code: text
                .lines()
                .find_map(|l| l.trim().strip_prefix("Exit Code:"))
                .and_then(exit_code),
            directory: None,
        })
    }

    fn parse(text: &str) -> Option<ShellResult> {
        let rest = text.strip_prefix("Command: ")?;
        let (_, rest) = rest.split_once("\nDirectory: ")?;
        let (directory, rest) = rest.split_once("\nOutput: ")?;
        // The fields after the output are its last lines: found from the end, so an output
        // line that looks like one does not end it.
        let (body, code) = rest.rsplit_once("\nExit Code: ")?;
        let (output, error) = body.rsplit_once("\nError: ")?;
        let code = code.lines().next().unwrap_or_default();
        let mut output = match output {
            "(empty)" => String::new(),
            output => output.to_string(),
        };
        if error.trim() != "(none)" {
            if !output.is_empty() {
                output.push('\n');
            }
            output.push_str(&format!("Error: {error}"));
        }
        Some(ShellResult {
            output,
            exit_code: exit_code(code),
            directory: (directory != "(root)").then(|| directory.to_string()),
        })
    }
}

/// An `Exit Code:` value; `(none)`, which Gemini CLI prints when a signal ended the
/// command (its tool's own description), is none.
fn exit_code(value: &str) -> Option<i64> {
    value.trim().parse().ok()
}

mod format;
mod stream_json;
#[cfg(test)]
mod tests;
