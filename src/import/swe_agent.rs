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
//! - the output of a command that reads a file (`cat`, `sed -n`, `head`, `nl`, see
//!   [`file_reads`]) becomes a file record `file-N` instead, with the
//!   file's path and every line of it the session has seen so far (earlier reads merged);
//! - the final patch (the `exit` message) is never a record: it is the answer, returned
//!   beside the records by [`import_with`] as [`Imported::final_patch`], one
//!   [`PatchFile`] per `diff --git a/… b/…` section, path taken from the `b/` side;
//! - `extra.timestamp` (Unix seconds) becomes each record's RFC 3339 `timestamp`.
//!
//! A **step** is one assistant turn with the observations that answer it. [`Cut`] keeps the
//! first steps only, as if the session were stopped mid-work: `--cut 0.6` keeps
//! ⌊0.6 × steps⌋ (at least one), `--until-step N` the first `N`.

use serde_json::Value;

mod format;

use super::file_reads::shell::{self as file_reads, FileViews};
use super::typed;
use crate::records::{Common, ErrorRecord, FileRecord, Message, Records, Role, ToolOutput};
use format::{AssistantTurn, BashArguments, Plain, TrajMessage, Trajectory};

/// The trajectory format this importer reads.
pub(crate) const FORMAT: &str = "mini-swe-agent-1.1";

pub use super::{ImportError, ImportOptions};

/// Where to stop reading a trajectory.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cut {
    /// Keep this share of the steps, in (0, 1]: ⌊share × steps⌋, at least one.
    Share(f64),
    /// Keep the first N steps (N ≥ 1; more than there are keeps all).
    UntilStep(usize),
}

/// One file of the final patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchFile {
    /// The path, from the `b/` side of `diff --git a/… b/…`.
    pub path: String,
    /// The file's section of the unified diff.
    pub diff: String,
}

/// A trajectory imported: the records, and what the records never hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The session's records, up to the cut.
    pub records: Records,
    /// The final patch, per file (empty when the trajectory has none).
    pub final_patch: Vec<PatchFile>,
    /// The steps (assistant turns) of the whole trajectory.
    pub steps: usize,
    /// The steps the records hold.
    pub kept_steps: usize,
    /// The trajectory's messages.
    pub messages: usize,
}

fn format_error(path: impl Into<String>, message: impl Into<String>) -> ImportError {
    ImportError::Format {
        path: path.into(),
        message: message.into(),
    }
}

/// Converts the text of a `*.traj.json` file into records (every step; the final patch
/// left out).
pub fn import_trajectory(text: &str) -> Result<Records, ImportError> {
    import_with(text, &ImportOptions::default()).map(|i| i.records)
}

/// Converts the text of a `*.traj.json` file into records under `options`, and returns the
/// final patch beside them.
pub fn import_with(text: &str, options: &ImportOptions) -> Result<Imported, ImportError> {
    let root: Value = serde_json::from_str(text)?;
    let format = root.get("trajectory_format").and_then(Value::as_str);
    if format != Some(FORMAT) {
        return Err(format_error(
            "trajectory_format",
            format!("expected \"{FORMAT}\", found {format:?}"),
        ));
    }
    let Trajectory { messages } = typed::from_value(root)?;

    let steps = messages
        .iter()
        .filter(|m| matches!(m, TrajMessage::Assistant(_)))
        .count();
    let kept_steps = kept_steps(options.cut, steps)?;

    let mut records = Records::default();
    let mut pending_commands: Vec<(String, String)> = Vec::new();
    let mut seen_task = false;
    let mut step = 0usize;
    let mut views = FileViews::default();
    // The working directory is the one the kept steps' commands `cd` to most, so that a
    // file read before the first `cd` gets the same path as the reads after it.
    for turn in messages
        .iter()
        .filter_map(|m| match m {
            TrajMessage::Assistant(turn) => Some(turn),
            _ => None,
        })
        .take(kept_steps)
    {
        for (_, command) in assistant_commands(turn) {
            views.note_command(&command);
        }
    }

    for (index, message) in messages.iter().enumerate() {
        let timestamp = message.extra().timestamp.and_then(rfc3339);
        let common = |prefix: &str| Common {
            id: Some(format!("{prefix}-{index}")),
            timestamp: timestamp.clone(),
            priority: None,
        };
        match message {
            TrajMessage::System(Plain { content, .. }) => records.messages.push(Message {
                common: common("msg"),
                role: Role::System,
                text: content.clone(),
            }),
            TrajMessage::User(Plain { content, .. }) if !seen_task => {
                let (task, instructions) = split_task(content).ok_or_else(|| {
                    format_error(
                        format!("messages[{index}].content"),
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
            TrajMessage::User(Plain { content, .. }) => records.messages.push(Message {
                common: common("msg"),
                role: Role::User,
                text: content.clone(),
            }),
            TrajMessage::Assistant(_) if step == kept_steps => break,
            TrajMessage::Assistant(turn) => {
                step += 1;
                pending_commands = assistant_commands(turn);
                if !turn.content.trim().is_empty() {
                    records.messages.push(Message {
                        common: common("msg"),
                        role: Role::Assistant,
                        text: turn.content.clone(),
                    });
                }
            }
            TrajMessage::Tool(observed) => {
                // The call this observation answers; without an id, the turn's first call.
                let command = match &observed.tool_call_id {
                    Some(call) => pending_commands.iter().find(|(id, _)| id == call),
                    None => pending_commands.first(),
                }
                .map_or_else(|| "bash".to_string(), |(_, command)| command.clone());
                let observation = parse_observation(&observed.content);
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
                let reads = match &observation.elided {
                    Some((head, tail)) => {
                        file_reads::file_read_elided(&command, head, tail, observation.exit_code)
                            .into_iter()
                            .collect()
                    }
                    None => {
                        file_reads::file_reads(&command, &observation.output, observation.exit_code)
                    }
                };
                if !reads.is_empty() {
                    for read in &reads {
                        let (path, content) = views.add(read);
                        records.files.push(FileRecord {
                            common: common("file"),
                            content,
                            path,
                        });
                    }
                    continue;
                }
                views.forget_written(&command);
                records.tool_outputs.push(ToolOutput {
                    common: common("out"),
                    tool: command,
                    args: None,
                    output: observation.output,
                    exit_code: observation.exit_code,
                    cwd: None,
                });
            }
            // The final patch is read below, also when the cut stops before it.
            TrajMessage::Exit(_) => {}
        }
    }
    if !seen_task {
        return Err(format_error("messages", "no user message with the task"));
    }
    let submission = messages.iter().rev().find_map(|m| match m {
        TrajMessage::Exit(exit) => Some(
            exit.extra
                .submission
                .as_deref()
                .or(exit.content.as_deref())
                .unwrap_or_default(),
        ),
        _ => None,
    });
    let final_patch = split_patch(submission.unwrap_or_default())
        .into_iter()
        .map(|(path, diff)| PatchFile { path, diff })
        .collect();
    Ok(Imported {
        records,
        final_patch,
        steps,
        kept_steps,
        messages: messages.len(),
    })
}

/// How many of `steps` steps a cut keeps.
fn kept_steps(cut: Option<Cut>, steps: usize) -> Result<usize, ImportError> {
    match cut {
        None => Ok(steps),
        Some(Cut::Share(share)) if share > 0.0 && share <= 1.0 => {
            Ok(((share * steps as f64).floor() as usize).max(1).min(steps))
        }
        Some(Cut::Share(share)) => Err(ImportError::Cut(format!(
            "the share of steps must be in (0, 1], found {share}"
        ))),
        Some(Cut::UntilStep(0)) => Err(ImportError::Cut("the step must be at least 1".into())),
        Some(Cut::UntilStep(n)) => Ok(n.min(steps)),
    }
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
fn assistant_commands(turn: &AssistantTurn) -> Vec<(String, String)> {
    if let Some(actions) = &turn.extra.actions {
        return actions
            .iter()
            .filter_map(|a| {
                let command = a.command.clone()?;
                Some((a.tool_call_id.clone().unwrap_or_default(), command))
            })
            .collect();
    }
    turn.tool_calls
        .iter()
        .filter_map(|call| {
            let arguments = call.function.as_ref()?.arguments.as_deref()?;
            let arguments: BashArguments = serde_json::from_str(arguments).ok()?;
            Some((call.id.clone().unwrap_or_default(), arguments.command))
        })
        .collect()
}

/// A tool observation, taken apart.
struct Observation {
    /// The output as the agent saw it; when the agent cut it short, its head and tail with
    /// a line saying how much was left out between them.
    output: String,
    exit_code: Option<i64>,
    /// The head and the tail of an output the agent cut short.
    elided: Option<(String, String)>,
}

/// Reads `<exception>…</exception><returncode>N</returncode><output>…</output>`, or, for an
/// output too long for the agent, `<warning>…</warning><output_head>…</output_head>`
/// `<elided_chars>N characters elided</elided_chars><output_tail>…</output_tail>` (the
/// warning is the agent's advice to itself, not output, and is left out).
fn parse_observation(content: &str) -> Observation {
    let exception = between(content, "<exception>", "</exception>");
    let exit_code = between(content, "<returncode>", "</returncode>")
        .and_then(|code| code.trim().parse::<i64>().ok());
    let strip = |o: &str| o.strip_prefix('\n').unwrap_or(o).to_string();
    let head = between(content, "<output_head>", "</output_head>").map(strip);
    let tail = between(content, "<output_tail>", "</output_tail>").map(strip);
    let (output, elided) = match (between(content, "<output>", "</output>"), head, tail) {
        (Some(output), _, _) => (strip(output), None),
        (None, Some(head), Some(tail)) => {
            let elided = between(content, "<elided_chars>", "</elided_chars>")
                .map_or("some characters elided", str::trim);
            let joint = if head.ends_with('\n') { "" } else { "\n" };
            (
                format!("{head}{joint}[… {elided} …]\n{tail}"),
                Some((head, tail)),
            )
        }
        _ => (content.to_string(), None),
    };
    let output = match exception {
        Some(exception) if output.trim().is_empty() => exception.to_string(),
        Some(exception) => format!("{exception}\n{output}"),
        None => output,
    };
    Observation {
        output,
        exit_code,
        elided,
    }
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

        assert!(
            records.diffs.is_empty(),
            "the final patch is never a record"
        );
        let imported = import_with(&sample(), &ImportOptions::default()).unwrap();
        let paths: Vec<&str> = imported
            .final_patch
            .iter()
            .map(|d| d.path.as_str())
            .collect();
        assert_eq!(paths, ["src/a.py", "src/b.py"]);
        assert!(imported.final_patch[1]
            .diff
            .starts_with("diff --git a/src/b.py"));
        assert!(imported.final_patch[0].diff.ends_with("+y\n"));
        assert_eq!((imported.steps, imported.kept_steps), (2, 2));
    }

    #[test]
    fn a_cut_keeps_the_first_steps_and_still_returns_the_patch() {
        let cut = |cut| import_with(&sample(), &ImportOptions { cut: Some(cut) }).unwrap();
        let one = cut(Cut::UntilStep(1));
        assert_eq!(one.kept_steps, 1);
        let ids: Vec<&str> = one
            .records
            .tool_outputs
            .iter()
            .filter_map(|o| o.common.id.as_deref())
            .collect();
        assert_eq!(ids, ["out-3"]);
        assert_eq!(one.records.messages.len(), 3);
        assert_eq!(one.final_patch.len(), 2);
        assert_eq!(cut(Cut::Share(0.5)).records, one.records);
        assert_eq!(cut(Cut::Share(0.1)).kept_steps, 1, "at least one step");
        assert_eq!(
            cut(Cut::UntilStep(9)).records,
            import_trajectory(&sample()).unwrap()
        );
        for bad in [
            Cut::Share(0.0),
            Cut::Share(1.5),
            Cut::Share(f64::NAN),
            Cut::UntilStep(0),
        ] {
            let err = import_with(&sample(), &ImportOptions { cut: Some(bad) }).unwrap_err();
            assert!(matches!(err, ImportError::Cut(_)), "{bad:?}");
        }
    }

    #[test]
    fn file_reading_commands_become_file_records() {
        let text = trajectory(serde_json::json!([
            {"role": "user", "content": "<pr_description>\nfix it\n</pr_description>"},
            {"role": "assistant", "content": "look",
             "extra": {"actions": [{"command": "cd /testbed && sed -n '2,3p' ./pkg/a.py", "tool_call_id": "c1"}]}},
            {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>\n<output>\nb\nc\n</output>"},
            {"role": "assistant", "content": "more",
             "extra": {"actions": [{"command": "head -1 pkg/a.py", "tool_call_id": "c2"}]}},
            {"role": "tool", "tool_call_id": "c2", "content": "<returncode>0</returncode>\n<output>\na\n</output>"},
            {"role": "assistant", "content": "grep",
             "extra": {"actions": [{"command": "grep -n b pkg/a.py", "tool_call_id": "c3"}]}},
            {"role": "tool", "tool_call_id": "c3", "content": "<returncode>0</returncode>\n<output>\n2:b\n</output>"}
        ]));
        let records = import_trajectory(&text).unwrap();
        let files = crate::records::file_triples(&records);
        assert_eq!(
            files,
            [
                ("file-2", "pkg/a.py", "[ctxopt: lines 1-1 not seen]\nb\nc\n"),
                ("file-4", "pkg/a.py", "a\nb\nc\n"),
            ]
        );
        assert_eq!(records.tool_outputs.len(), 1);
        assert_eq!(records.tool_outputs[0].tool, "grep -n b pkg/a.py");
    }

    #[test]
    fn a_file_read_before_the_first_cd_gets_the_same_path_as_later_reads() {
        let text = trajectory(serde_json::json!([
            {"role": "user", "content": "<pr_description>\nfix it\n</pr_description>"},
            {"role": "assistant", "content": "read",
             "extra": {"actions": [{"command": "sed -n '1,1p' /repo/pkg/a.py", "tool_call_id": "c1"}]}},
            {"role": "tool", "tool_call_id": "c1", "content": "<returncode>0</returncode>\n<output>\none\n</output>"},
            {"role": "assistant", "content": "again",
             "extra": {"actions": [{"command": "cd /repo && sed -n '2,2p' pkg/a.py", "tool_call_id": "c2"}]}},
            {"role": "tool", "tool_call_id": "c2", "content": "<returncode>0</returncode>\n<output>\ntwo\n</output>"},
            {"role": "assistant", "content": "later, beyond a cut",
             "extra": {"actions": [{"command": "cd /elsewhere && ls", "tool_call_id": "c3"}]}},
            {"role": "tool", "tool_call_id": "c3", "content": "<returncode>0</returncode>\n<output>\nx\n</output>"},
            {"role": "assistant", "content": "later, beyond a cut",
             "extra": {"actions": [{"command": "cd /elsewhere && ls", "tool_call_id": "c4"}]}}
        ]));
        let cut = import_with(
            &text,
            &ImportOptions {
                cut: Some(Cut::UntilStep(2)),
            },
        )
        .unwrap();
        assert_eq!(
            crate::import::files_of(&cut.records),
            [("pkg/a.py", "one\n"), ("pkg/a.py", "one\ntwo\n")]
        );
        // The whole run cds elsewhere more often: the steps after the cut decide nothing
        // above, and here `/elsewhere` is the working directory.
        let whole = import_trajectory(&text).unwrap();
        assert_eq!(whole.files[0].path, "/repo/pkg/a.py");
    }

    #[test]
    fn outputs_the_agent_cut_short_keep_their_head_and_tail_without_the_warning() {
        let cut_short = |head: &str, elided: usize, tail: &str| {
            format!(
                "<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n\
                 Please try a different command that produces less output.\n</warning><output_head>\n{head}\
                 </output_head>\n<elided_chars>\n{elided} characters elided\n</elided_chars>\n\
                 <output_tail>\n{tail}</output_tail>"
            )
        };
        let text = trajectory(serde_json::json!([
            {"role": "user", "content": "<pr_description>\nfix it\n</pr_description>"},
            {"role": "assistant", "content": "read",
             "extra": {"actions": [{"command": "cat -n pkg/a.py", "tool_call_id": "c1"}]}},
            {"role": "tool", "tool_call_id": "c1",
             "content": cut_short("     1\tone\n     2\ttw", 900, "o hundred\n   201\tlast\n")},
            {"role": "assistant", "content": "plain",
             "extra": {"actions": [{"command": "cat pkg/b.py", "tool_call_id": "c2"}]}},
            {"role": "tool", "tool_call_id": "c2",
             "content": cut_short("first\nsecond\nthi", 500, "rd from the end\nend\n")},
            {"role": "assistant", "content": "search",
             "extra": {"actions": [{"command": "grep -rn x .", "tool_call_id": "c3"}]}},
            {"role": "tool", "tool_call_id": "c3",
             "content": cut_short("a.py:1:x\nb.py:2:", 70, "x\nz.py:9:x\n")}
        ]));
        let records = import_trajectory(&text).unwrap();
        assert_eq!(
            crate::import::files_of(&records),
            [
                // Numbered: both ends are placed, the cut lines at the seams are not kept.
                ("pkg/a.py", "one\n[ctxopt: lines 2-200 not seen]\nlast\n"),
                // Plain: the tail's place in the file is not known.
                ("pkg/b.py", "first\nsecond\n"),
            ]
        );
        let [search] = &records.tool_outputs[..] else {
            panic!("{:?}", records.tool_outputs)
        };
        assert_eq!(
            search.output,
            "a.py:1:x\nb.py:2:\n[… 70 characters elided …]\nx\nz.py:9:x\n"
        );
        assert!(!search.output.contains("too long"));
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
