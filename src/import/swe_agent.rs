//! The importer for mini-swe-agent trajectories (`trajectory_format` `mini-swe-agent-1.1`).
//!
//! A trajectory is one JSON object whose `messages` hold, in order: a `system` prompt; a
//! `user` message carrying the task inside `<pr_description>` followed by the agent's
//! instructions; alternating `assistant` turns (the thought in `content`, the shell command in
//! `tool_calls[].function.arguments.command` and `extra.actions[].command`) and `tool`
//! observations (`<returncode>N</returncode><output>…</output>`, possibly preceded by
//! `<exception>…</exception>` when the command timed out); and a last `exit` message whose
//! content (and `extra.submission`) is the final patch, a unified diff.
//!
//! The mapping onto the records format (documented in `docs/records.md`):
//! - `task`: the PR description, the text inside `<pr_description>` after its
//!   "Consider the following PR description:" line;
//! - the system prompt and the rest of the first user message (the instructions template)
//!   become `system` messages `msg-0` and `msg-1`;
//! - each assistant turn becomes an `assistant` message `msg-N` (`N` is the position in
//!   `messages`), its thought as the text;
//! - each tool observation becomes a tool output `out-N`: `tool` is the command that
//!   produced it (matched by `tool_call_id`), `output` the text inside `<output>` (the
//!   `<exception>` text first, when there is one), `exitCode` the `<returncode>`;
//! - each Python traceback inside an observation becomes an error `err-N-K`: the exception
//!   line (`TypeError: …`) as the message, the traceback as the stack;
//! - the final patch becomes one diff `patch-K` per file (`diff --git a/… b/…` section),
//!   path taken from the `b/` side;
//! - `extra.timestamp` (Unix seconds) becomes each record's RFC 3339 `timestamp`; the
//!   patch takes the last timestamp seen before it.

use serde_json::Value;

use crate::optimizer::records::{
    Common, DiffRecord, ErrorRecord, Message, Records, Role, ToolOutput,
};

/// The trajectory format this importer reads.
pub const FORMAT: &str = "mini-swe-agent-1.1";

/// Why a trajectory could not be imported.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The text is not JSON.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not a trajectory of the supported format; the message names the place.
    #[error("{path}: {message}")]
    Format {
        /// Where (`messages[1].content`).
        path: String,
        /// What is wrong there.
        message: String,
    },
}

fn format_error(path: impl Into<String>, message: impl Into<String>) -> ImportError {
    ImportError::Format {
        path: path.into(),
        message: message.into(),
    }
}

/// Converts the text of a `*.traj.json` file into records.
pub fn import_trajectory(text: &str) -> Result<Records, ImportError> {
    let root: Value = serde_json::from_str(text)?;
    let format = root.get("trajectory_format").and_then(Value::as_str);
    if format != Some(FORMAT) {
        return Err(format_error(
            "trajectory_format",
            format!("expected \"{FORMAT}\", found {format:?}"),
        ));
    }
    let messages = root
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| format_error("messages", "expected an array"))?;

    let mut records = Records::default();
    let mut last_timestamp: Option<String> = None;
    let mut pending_commands: Vec<(String, String)> = Vec::new();
    let mut patches = 0usize;
    let mut seen_task = false;

    for (index, message) in messages.iter().enumerate() {
        let place = format!("messages[{index}]");
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .ok_or_else(|| format_error(format!("{place}.role"), "expected a string"))?;
        let content = message
            .get("content")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let timestamp = message
            .pointer("/extra/timestamp")
            .and_then(Value::as_f64)
            .and_then(rfc3339);
        if timestamp.is_some() {
            last_timestamp.clone_from(&timestamp);
        }
        let common = |prefix: &str| Common {
            id: Some(format!("{prefix}-{index}")),
            timestamp: timestamp.clone(),
            priority: None,
        };
        match role {
            "system" => records.messages.push(Message {
                common: common("msg"),
                role: Role::System,
                text: content.to_string(),
            }),
            "user" if !seen_task => {
                let (task, instructions) = split_task(content).ok_or_else(|| {
                    format_error(
                        format!("{place}.content"),
                        "expected a <pr_description> block",
                    )
                })?;
                seen_task = true;
                records.task = Some(task);
                if !instructions.trim().is_empty() {
                    records.messages.push(Message {
                        common: common("msg"),
                        role: Role::System,
                        text: instructions,
                    });
                }
            }
            "user" => records.messages.push(Message {
                common: common("msg"),
                role: Role::User,
                text: content.to_string(),
            }),
            "assistant" => {
                pending_commands = assistant_commands(message);
                if !content.trim().is_empty() {
                    records.messages.push(Message {
                        common: common("msg"),
                        role: Role::Assistant,
                        text: content.to_string(),
                    });
                }
            }
            "tool" => {
                let call_id = message.get("tool_call_id").and_then(Value::as_str);
                // The call this observation answers; without an id, the turn's first call.
                let command = match call_id {
                    Some(call) => pending_commands.iter().find(|(id, _)| id == call),
                    None => pending_commands.first(),
                }
                .map_or_else(|| "bash".to_string(), |(_, command)| command.clone());
                let observation = parse_observation(content);
                for (k, (message, stack)) in python_tracebacks(&observation.output)
                    .into_iter()
                    .enumerate()
                {
                    records.errors.push(ErrorRecord {
                        common: Common {
                            id: Some(format!("err-{index}-{k}")),
                            timestamp: timestamp.clone(),
                            priority: None,
                        },
                        message,
                        stack: Some(stack),
                    });
                }
                records.tool_outputs.push(ToolOutput {
                    common: common("out"),
                    tool: command,
                    args: None,
                    output: observation.output,
                    exit_code: observation.exit_code,
                });
            }
            "exit" => {
                let submission = message
                    .pointer("/extra/submission")
                    .and_then(Value::as_str)
                    .unwrap_or(content);
                for (path, diff) in split_patch(submission) {
                    records.diffs.push(DiffRecord {
                        common: Common {
                            id: Some(format!("patch-{patches}")),
                            timestamp: last_timestamp.clone(),
                            priority: None,
                        },
                        path,
                        diff,
                    });
                    patches += 1;
                }
            }
            other => {
                return Err(format_error(
                    format!("{place}.role"),
                    format!("unexpected role \"{other}\""),
                ))
            }
        }
    }
    if !seen_task {
        return Err(format_error("messages", "no user message with the task"));
    }
    Ok(records)
}

/// Unix seconds as an RFC 3339 time in UTC, to the millisecond.
fn rfc3339(seconds: f64) -> Option<String> {
    let millis = (seconds * 1000.0).round() as i64;
    chrono::DateTime::from_timestamp_millis(millis)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// Splits the first user message into the PR description and the instructions around it.
fn split_task(content: &str) -> Option<(String, String)> {
    const OPEN: &str = "<pr_description>";
    const CLOSE: &str = "</pr_description>";
    const LEAD: &str = "Consider the following PR description:";
    let start = content.find(OPEN)?;
    let end = content[start..].find(CLOSE)? + start;
    let inner = &content[start + OPEN.len()..end];
    let inner = inner.trim_start();
    let inner = inner.strip_prefix(LEAD).unwrap_or(inner);
    let task = inner.trim().to_string();
    if task.is_empty() {
        return None;
    }
    let instructions = format!("{}{}", &content[..start], &content[end + CLOSE.len()..])
        .trim()
        .to_string();
    Some((task, instructions))
}

/// The (tool call id, command) of every bash call of an assistant turn: from
/// `extra.actions`, or else from `tool_calls[].function.arguments`.
fn assistant_commands(message: &Value) -> Vec<(String, String)> {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
    if let Some(actions) = message.pointer("/extra/actions").and_then(Value::as_array) {
        return actions
            .iter()
            .filter_map(|a| {
                let command = a.get("command").and_then(Value::as_str)?;
                Some((text(a.get("tool_call_id")), command.to_string()))
            })
            .collect();
    }
    let calls = message.get("tool_calls").and_then(Value::as_array);
    calls
        .into_iter()
        .flatten()
        .filter_map(|call| {
            let arguments = call
                .pointer("/function/arguments")
                .and_then(Value::as_str)?;
            let arguments: Value = serde_json::from_str(arguments).ok()?;
            let command = arguments.get("command").and_then(Value::as_str)?;
            Some((text(call.get("id")), command.to_string()))
        })
        .collect()
}

/// A tool observation, taken apart.
struct Observation {
    output: String,
    exit_code: Option<i64>,
}

/// Reads `<exception>…</exception><returncode>N</returncode><output>…</output>`.
fn parse_observation(content: &str) -> Observation {
    let exception = between(content, "<exception>", "</exception>");
    let exit_code = between(content, "<returncode>", "</returncode>")
        .and_then(|code| code.trim().parse::<i64>().ok());
    let output = between(content, "<output>", "</output>")
        .map(|o| o.strip_prefix('\n').unwrap_or(o))
        .map(str::to_string)
        .unwrap_or_else(|| content.to_string());
    let output = match exception {
        Some(exception) if output.trim().is_empty() => exception.to_string(),
        Some(exception) => format!("{exception}\n{output}"),
        None => output,
    };
    Observation { output, exit_code }
}

/// The text between the first `open` and the last `close` after it.
fn between<'a>(text: &'a str, open: &str, close: &str) -> Option<&'a str> {
    let start = text.find(open)? + open.len();
    let end = text[start..].rfind(close)? + start;
    Some(&text[start..end])
}

/// Every Python traceback in `output`: (exception line, whole traceback). A traceback runs
/// from `Traceback (most recent call last):` over its indented frame lines to the first
/// unindented line, the exception line. Identical tracebacks in one output count once.
fn python_tracebacks(output: &str) -> Vec<(String, String)> {
    const HEAD: &str = "Traceback (most recent call last):";
    let lines: Vec<&str> = output.lines().collect();
    let mut found: Vec<(String, String)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() != HEAD {
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        while i < lines.len() && (lines[i].starts_with(' ') || lines[i].starts_with('\t')) {
            i += 1;
        }
        if i < lines.len() && !lines[i].trim().is_empty() && lines[i].trim_end() != HEAD {
            let message = lines[i].trim().to_string();
            let stack = lines[start..=i].join("\n");
            if !found.iter().any(|(_, s)| *s == stack) {
                found.push((message, stack));
            }
            i += 1;
        }
    }
    found
}

/// Splits a unified diff into (path, section) per `diff --git a/X b/Y` header.
fn split_patch(patch: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in patch.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let path = rest
                .trim_end()
                .rsplit_once(" b/")
                .map(|(_, b)| b.to_string())
                .unwrap_or_else(|| rest.trim_end().to_string());
            sections.push((path, String::new()));
        }
        if let Some((_, section)) = sections.last_mut() {
            section.push_str(line);
        }
    }
    sections
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trajectory(messages: Value) -> String {
        serde_json::json!({"trajectory_format": FORMAT, "messages": messages}).to_string()
    }

    fn sample() -> String {
        trajectory(serde_json::json!([
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "<pr_description>\nConsider the following PR description:\nKeyError: 'x' in load()\n</pr_description>\n\n<instructions>do it</instructions>"},
            {"role": "assistant", "content": "Let me run it.",
             "tool_calls": [{"id": "c1", "function": {"name": "bash", "arguments": "{\"command\": \"python repro.py\"}"}}],
             "extra": {"actions": [{"command": "python repro.py", "tool_call_id": "c1"}], "timestamp": 1775784986.5}},
            {"role": "tool", "tool_call_id": "c1", "extra": {"timestamp": 1775784987.0},
             "content": "<returncode>1</returncode>\n<output>\nTraceback (most recent call last):\n  File \"repro.py\", line 1, in <module>\n    load()\nKeyError: 'x'\n</output>"},
            {"role": "assistant", "content": "Timeout?",
             "tool_calls": [{"id": "c2", "function": {"name": "bash", "arguments": "{\"command\": \"pytest\"}"}},
                            {"id": "c3", "function": {"name": "bash", "arguments": "{\"command\": \"git diff\"}"}}],
             "extra": {"timestamp": 1775784990.0}},
            {"role": "tool", "tool_call_id": "c2",
             "content": "<exception>timed out after 60 seconds</exception>\n<returncode>-1</returncode>\n<output>\n</output>"},
            {"role": "tool", "tool_call_id": "c3",
             "content": "<returncode>0</returncode>\n<output>\n</output>"},
            {"role": "exit", "content": "",
             "extra": {"submission": "diff --git a/src/a.py b/src/a.py\n--- a/src/a.py\n+++ b/src/a.py\n@@ -1 +1 @@\n-x\n+y\ndiff --git a/src/b.py b/src/b.py\n@@ -2 +2 @@\n-p\n+q\n"}}
        ]))
    }

    #[test]
    fn maps_every_part_of_a_trajectory() {
        let records = import_trajectory(&sample()).unwrap();
        assert_eq!(records.task.as_deref(), Some("KeyError: 'x' in load()"));
        let roles: Vec<Role> = records.messages.iter().map(|m| m.role).collect();
        assert_eq!(
            roles,
            [Role::System, Role::System, Role::Assistant, Role::Assistant]
        );
        assert_eq!(
            records.messages[1].text,
            "<instructions>do it</instructions>"
        );
        assert_eq!(records.messages[2].common.id.as_deref(), Some("msg-2"));
        assert_eq!(
            records.messages[2].common.timestamp.as_deref(),
            Some("2026-04-10T01:36:26.500Z")
        );

        let run = &records.tool_outputs[0];
        assert_eq!(run.common.id.as_deref(), Some("out-3"));
        assert_eq!(run.tool, "python repro.py");
        assert_eq!(run.exit_code, Some(1));
        assert!(run.output.starts_with("Traceback (most recent call last):"));

        let timeout = &records.tool_outputs[1];
        assert_eq!(timeout.tool, "pytest");
        assert_eq!(timeout.exit_code, Some(-1));
        assert_eq!(timeout.output, "timed out after 60 seconds");
        assert_eq!(records.tool_outputs[2].tool, "git diff");
        assert_eq!(records.tool_outputs[2].output, "");

        assert_eq!(records.errors.len(), 1);
        assert_eq!(records.errors[0].common.id.as_deref(), Some("err-3-0"));
        assert_eq!(records.errors[0].message, "KeyError: 'x'");
        assert!(records.errors[0]
            .stack
            .as_deref()
            .unwrap()
            .contains("line 1, in <module>"));

        let paths: Vec<&str> = records.diffs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["src/a.py", "src/b.py"]);
        assert!(records.diffs[1].diff.starts_with("diff --git a/src/b.py"));
        assert!(records.diffs[0].diff.ends_with("+y\n"));
        assert_eq!(
            records.diffs[0].common.timestamp.as_deref(),
            Some("2026-04-10T01:36:30.000Z")
        );
    }

    #[test]
    fn tracebacks_are_found_once_each() {
        let out = "noise\nTraceback (most recent call last):\n  File \"a\", line 1\nValueError: bad\nmore\nTraceback (most recent call last):\n  File \"a\", line 1\nValueError: bad\nTraceback (most recent call last):\n  File \"b\", line 2\n    ^^^\nOSError: disk\n";
        let found = python_tracebacks(out);
        let messages: Vec<&str> = found.iter().map(|(m, _)| m.as_str()).collect();
        assert_eq!(messages, ["ValueError: bad", "OSError: disk"]);
        assert!(python_tracebacks("Traceback (most recent call last):\n").is_empty());
    }

    #[test]
    fn rejects_other_formats_with_the_place() {
        let err = import_trajectory(r#"{"trajectory_format":"other","messages":[]}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "trajectory_format: expected \"mini-swe-agent-1.1\", found Some(\"other\")"
        );
        let err = import_trajectory(&trajectory(serde_json::json!([
            {"role": "user", "content": "no description here"}
        ])))
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "messages[0].content: expected a <pr_description> block"
        );
        assert!(matches!(
            import_trajectory("nope").unwrap_err(),
            ImportError::Json(_)
        ));
    }

    #[test]
    fn imported_records_pass_the_records_parser() {
        let records = import_trajectory(&sample()).unwrap();
        let text = serde_json::to_string(&records).unwrap();
        assert_eq!(
            crate::optimizer::parse::parse_records(&text).unwrap(),
            records
        );
    }
}
