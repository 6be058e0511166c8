//! The importer for Claude Code transcripts: `~/.claude/projects/<encoded cwd>/<session>.jsonl`
//! (and the `subagents/agent-*.jsonl` files beside them), one JSON entry a line, versions
//! 1.0.95 to 2.1.x. A JSON array of the same entries (as logging hooks save a transcript) is
//! read too.
//!
//! What becomes what (documented in `docs/import.md`):
//! - `user` entries: a prompt (string content or `text` blocks) → a `user` message; the
//!   first prompt that is not a command wrapper or hook feedback is the records' `task`; an
//!   `isCompactSummary` entry → a `system` message with id `summary-…` (the summary Claude
//!   Code wrote when it compacted the conversation); `isMeta` entries are skipped;
//! - `assistant` entries: `text` blocks → `assistant` messages (in a compaction agent's file,
//!   `agentId` `acompact-…`, the answer is the compaction summary: id `summary-…`);
//!   `tool_use` blocks are held until their `tool_result` arrives (in a later line);
//! - a `tool_result`, with the call it answers: `Bash` → a tool output (`tool` = the command,
//!   `exitCode` 0, or N from `Exit code N` on a failure) plus a test result per test its
//!   output names, or, when the command reads a file, that file (a command that may write a
//!   path forgets what was seen of it); a whole-file `Read` → a file; a `Read` of a region (`offset`/`limit`) →
//!   a file holding every line seen so far of it, with `[ctxopt: lines A-B not seen]` gaps
//!   (see [`FileViews`]); `Write` → a file; `Edit`/`MultiEdit` → a diff (from
//!   `toolUseResult.structuredPatch`, else from the old and new strings) and the file's
//!   current view with the change applied (its hunks placed by their line numbers on a
//!   view of regions), or, when the view does not hold the old text, no view; `TodoWrite` → the plan, a tool output `plan-…` listing the
//!   items with their status; `TaskCreate`/`TaskUpdate`/`TaskList` (Claude Code 2.1's task
//!   list) → after each that changes the list, the whole list as the plan (see
//!   [`tasks::TaskPlan`]); `Grep`/`Glob` → a tool output `hits-…`, its path (and line)
//!   hits relative to the working directory; any other tool → a tool output (`tool` = its name, `args` =
//!   its input); `is_error: true` → an error record as well (`<tool>: <first line>`), except
//!   for a call the client did not run because another call of its turn failed
//!   (`Sibling tool call errored`: nothing, counted);
//! - a `system` `compact_boundary` entry → its line in [`ImportSummary::boundaries`];
//! - sidechain entries (`isSidechain`, a subagent's turns) get ids starting with `side-`;
//! - everything else (`progress`, other `system` entries, `summary` titles, `file-history-snapshot`,
//!   `queue-operation`, `attachment`, thinking blocks, images, unknown fields) is skipped
//!   and counted in the [`ImportSummary`]; a line that is not a JSON object is an error
//!   naming the line, and the rest still imports.
//!
//! [`ClaudeImporter`] keeps the calls still waiting for their result, so a transcript can be
//! imported a few lines at a time (the hooks resume from the last offset read).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::codex::patch_hunks;
use super::file_reads::seek::Order;
use super::file_reads::shell::{file_reads, FileRead, FileViews, PlacedHunk};
use super::plans::listed_plan;
use super::replacements::{replaced, Times};
use super::test_runs::test_outcomes;
use super::typed::{self, shaped};
use super::{
    call_output, content_text, first_line, record_id, rfc3339, ImportSummary, INJECTED_MARKER,
};
use format::{Block, Content, Hunk, Replacement, ToolUseResult, Turn};
use tasks::TaskPlan;

use crate::records::SessionRecord;
use crate::records::{
    Common, DiffRecord, ErrorRecord, FileRecord, Message, Records, Role, TestResult, ToolOutput,
};

/// Top-level fields of `user`/`assistant` entries this importer knows (read or deliberately
/// ignored); any other is counted as `field:<name>`.
const KNOWN_FIELDS: &[&str] = &[
    "type",
    "message",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "timestamp",
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "isVisibleInTranscriptOnly",
    "userType",
    "cwd",
    "sessionId",
    "version",
    "gitBranch",
    "slug",
    "agentId",
    "requestId",
    "toolUseResult",
    "sourceToolAssistantUUID",
    "sourceToolUseID",
    "permissionMode",
    "thinkingMetadata",
    "todos",
    "promptId",
    "isApiErrorMessage",
    "error",
    "leafUuid",
    "entrypoint",
    "origin",
    "imagePasteIds",
];

/// Appends a record of `entry` to `out` as its next part.
fn push(entry: &mut Entry, record: SessionRecord, out: &mut Vec<LineRecord>) {
    out.push(LineRecord {
        line: entry.line,
        part: entry.parts,
        record,
    });
    entry.parts += 1;
}

/// A record made from a transcript, with the line it came from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LineRecord {
    /// 1-based line of the transcript (entry number for a JSON array).
    pub(crate) line: usize,
    /// The record's number among those made from that line (0, 1, …).
    pub(crate) part: u32,
    /// The record.
    pub(crate) record: SessionRecord,
}

/// A tool call waiting for its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct PendingCall {
    name: String,
    input: Value,
    /// The working directory of the entry that made the call: where a command ran (the
    /// result's entry already shows where a `cd` in it left the shell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
}

/// A resumable Claude Code transcript reader: feed it lines in order, from any number of
/// calls; it keeps the tool calls still waiting for their results and the task seen so far.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ClaudeImporter {
    pending: BTreeMap<String, PendingCall>,
    /// The session's first real prompt, once seen.
    pub(crate) task: Option<String>,
    /// The latest real prompt seen.
    pub(crate) last_prompt: Option<String>,
    /// The lines of each file seen so far (whole and ranged `Read`s, `Write`s), forgotten
    /// on an edit of the file.
    #[serde(default)]
    views: FileViews,
    /// The session's project folder: the working directory of its first entry. Paths are
    /// made relative to it, not to the entry's own (a `cd` in a command moves that), so one
    /// file has one name for the whole session.
    #[serde(default)]
    root: Option<String>,
    /// The task list `TaskCreate`/`TaskUpdate`/`TaskList` calls keep (Claude Code 2.1's plan).
    #[serde(default)]
    tasks: TaskPlan,
}

/// A `tool_result` block, with what the client recorded of the result beside it.
struct Answer<'a> {
    /// The id of the call it answers.
    call_id: &'a str,
    /// The text the model saw.
    text: String,
    is_error: bool,
    result: Option<&'a ToolUseResult>,
}

/// One entry being read: where it is and what it shares with its records.
struct Entry<'a> {
    line: usize,
    uuid: Option<&'a str>,
    timestamp: Option<String>,
    sidechain: bool,
    /// The session's project folder (see [`ClaudeImporter::root`]).
    root: Option<String>,
    /// The entry's own working directory (Claude Code's shell keeps a `cd` from one command
    /// to the next, and each entry records where it stands).
    cwd: Option<String>,
    parts: u32,
}

impl Entry<'_> {
    fn common(&self, kind: &str) -> Common {
        self.common_at(kind, self.parts)
    }

    /// The shared fields of the entry's record number `part`.
    fn common_at(&self, kind: &str, part: u32) -> Common {
        let kind = if self.sidechain {
            format!("side-{kind}")
        } else {
            kind.to_string()
        };
        Common {
            id: Some(record_id(&kind, self.line, self.uuid, part as usize)),
            timestamp: self.timestamp.clone(),
            priority: None,
        }
    }

    /// `path` relative to the session's project folder when it lies inside it (on Windows
    /// too: `C:\src\app` and `C:\src\app\lib\a.ts` give `lib\a.ts`).
    fn path(&self, path: &str) -> String {
        self.root
            .as_deref()
            .and_then(|root| path.strip_prefix(root.trim_end_matches(['/', '\\'])))
            .and_then(|rest| rest.strip_prefix(['/', '\\']))
            .filter(|rest| !rest.is_empty())
            .unwrap_or(path)
            .to_string()
    }
}

/// Reads a whole transcript (JSON Lines, or a JSON array of entries) into records.
pub(crate) fn import_transcript(text: &str) -> (Records, ImportSummary) {
    let mut importer = ClaudeImporter::default();
    let mut summary = ImportSummary::default();
    let mut out = Vec::new();
    if text.trim_start().starts_with('[') {
        match serde_json::from_str::<Vec<Value>>(text) {
            Ok(entries) => {
                for (i, entry) in entries.iter().enumerate() {
                    summary.lines += 1;
                    importer.feed_value(i + 1, entry, &mut out, &mut summary);
                }
            }
            Err(e) => summary.error(e.line(), format!("not a JSON array of entries: {e}")),
        }
    } else {
        for (i, line) in text.lines().enumerate() {
            importer.feed_line(i + 1, line, &mut out, &mut summary);
        }
    }
    let mut records = Records {
        task: importer.task.clone(),
        ..Records::default()
    };
    for r in out {
        r.record.push_into(&mut records);
    }
    summary.count_records(&records);
    (records, summary)
}

impl ClaudeImporter {
    /// Reads one line of the transcript (`line` is its 1-based number). Blank lines are
    /// ignored; a line that is not a JSON object is reported in `summary`.
    pub(crate) fn feed_line(
        &mut self,
        line: usize,
        text: &str,
        out: &mut Vec<LineRecord>,
        summary: &mut ImportSummary,
    ) {
        if text.trim().is_empty() {
            return;
        }
        summary.lines += 1;
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.feed_value(line, &value, out, summary),
            Err(e) => summary.error(line, format!("not JSON: {e}")),
        }
    }

    /// Reads one parsed entry.
    pub(crate) fn feed_value(
        &mut self,
        line: usize,
        value: &Value,
        out: &mut Vec<LineRecord>,
        summary: &mut ImportSummary,
    ) {
        let Some(obj) = value.as_object() else {
            summary.error(line, "expected a JSON object");
            return;
        };
        let kind = obj.get("type").and_then(Value::as_str).unwrap_or("(none)");
        match kind {
            "user" | "assistant" => {}
            "system" => {
                match obj.get("subtype").and_then(Value::as_str).unwrap_or("-") {
                    "compact_boundary" => summary.boundaries.push(line),
                    subtype => summary.skip(format!("system:{subtype}")),
                }
                return;
            }
            "attachment" => {
                let sub = value
                    .pointer("/attachment/type")
                    .and_then(Value::as_str)
                    .unwrap_or("-");
                if value.to_string().contains(INJECTED_MARKER) {
                    summary.skip("ctxopt-context");
                } else {
                    summary.skip(format!("attachment:{sub}"));
                }
                return;
            }
            other => {
                summary.skip(format!("type:{other}"));
                return;
            }
        }
        for key in obj.keys() {
            if !KNOWN_FIELDS.contains(&key.as_str()) {
                summary.skip(format!("field:{key}"));
            }
        }
        let mut turn: Turn = match typed::from_ref(value) {
            Ok(turn) => turn,
            Err(e) => {
                summary.error(line, e.to_string());
                return;
            }
        };
        let content = turn.message.take().and_then(|m| m.content);
        if self.root.is_none() {
            self.root.clone_from(&turn.cwd);
        }
        let mut entry = Entry {
            line,
            uuid: turn.uuid.as_deref(),
            timestamp: rfc3339(turn.timestamp.as_ref()),
            sidechain: turn.is_sidechain,
            root: self.root.clone(),
            cwd: turn.cwd.clone(),
            parts: 0,
        };
        if turn.is_meta {
            summary.skip("meta");
            return;
        }
        let compaction_agent = turn
            .agent_id
            .as_deref()
            .is_some_and(|a| a.starts_with("acompact"));
        let summary_entry = turn.is_compact_summary || (compaction_agent && kind == "assistant");
        let blocks: Vec<Value> = match content {
            Some(Content::Text(s)) => vec![serde_json::json!({"type": "text", "text": s})],
            Some(Content::Blocks(blocks)) => blocks,
            None => {
                summary.error(line, format!("{kind} entry without message.content"));
                return;
            }
        };
        for raw in &blocks {
            match (kind, Block::deserialize(raw).unwrap_or(Block::Other)) {
                (_, Block::Text { text }) => {
                    if text.trim().is_empty() {
                        continue;
                    }
                    if text.contains(INJECTED_MARKER) {
                        summary.skip("ctxopt-context");
                        continue;
                    }
                    let (mut role, id_kind) = match (kind, summary_entry) {
                        (_, true) => (Role::System, "summary"),
                        ("user", _) => (Role::User, "msg"),
                        _ => (Role::Assistant, "msg"),
                    };
                    // An app's instructions written before the user's words are its text.
                    let (preamble, text) = match role {
                        Role::User => app_instructions(&text),
                        _ => ("", text.as_str()),
                    };
                    if !preamble.is_empty() {
                        let message = Message {
                            common: entry.common(id_kind),
                            role: Role::Tool,
                            text: preamble.to_string(),
                        };
                        push(&mut entry, SessionRecord::Message(message), out);
                    }
                    if text.trim().is_empty() {
                        continue;
                    }
                    let text = text.to_string();
                    let prompt = (role == Role::User).then(|| prompt_text(&text)).flatten();
                    // What the client wrote in the user's place (a reminder, a local command's
                    // output, a notice) is the client's text, not the user's words.
                    if role == Role::User && prompt.is_none() {
                        role = Role::Tool;
                    }
                    if let Some(prompt) = prompt {
                        // A subagent's file starts with the prompt its parent gave it.
                        if self.task.is_none() {
                            self.task = Some(prompt.clone());
                        }
                        if !entry.sidechain {
                            self.last_prompt = Some(prompt);
                        }
                    }
                    let message = Message {
                        common: entry.common(id_kind),
                        role,
                        text,
                    };
                    push(&mut entry, SessionRecord::Message(message), out);
                }
                ("assistant", Block::ToolUse { id, name, input }) => {
                    let name = name.unwrap_or_else(|| "tool".to_string());
                    let cwd = entry.cwd.clone();
                    self.pending.insert(id, PendingCall { name, input, cwd });
                }
                (
                    "user",
                    Block::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    },
                ) => {
                    let answer = Answer {
                        call_id: &tool_use_id,
                        text: content_text(content.as_ref()),
                        is_error,
                        result: turn.tool_use_result.as_ref(),
                    };
                    for record in self.tool_result(&entry, answer, summary) {
                        push(&mut entry, record, out);
                    }
                }
                (_, Block::Thinking {} | Block::RedactedThinking {}) => {
                    summary.skip("block:thinking")
                }
                _ => {
                    let other = raw.get("type").and_then(Value::as_str).unwrap_or("-");
                    summary.skip(format!("block:{other}"));
                }
            }
        }
    }

    /// The records one `tool_result` block makes, with the call it answers.
    fn tool_result(
        &mut self,
        entry: &Entry,
        answer: Answer,
        summary: &mut ImportSummary,
    ) -> Vec<SessionRecord> {
        let Answer {
            call_id,
            text,
            is_error,
            result,
        } = answer;
        let text = if is_error { failure_once(text) } else { text };
        let call = self.pending.remove(call_id).unwrap_or_else(|| {
            summary.skip("tool_result without its call");
            PendingCall {
                name: "tool".to_string(),
                input: Value::Null,
                cwd: None,
            }
        });
        if text.contains(INJECTED_MARKER) {
            summary.skip("ctxopt-context");
            return Vec::new();
        }
        if is_error && unwrap_tool_use_error(&text) == SIBLING_NOT_RUN {
            // The call never ran: another call of the same turn failed first.
            summary.skip("call not run (a sibling call failed)");
            return Vec::new();
        }
        let input = |k: &str| call.input.get(k).and_then(Value::as_str);
        let mut records = Vec::new();
        let mut part = entry.parts;
        let mut common = |kind: &str| {
            part += 1;
            entry.common_at(kind, part - 1)
        };
        if is_error {
            let message = unwrap_tool_use_error(&text);
            let stack = text.trim().contains('\n').then(|| text.clone());
            let message = match (call.name.as_str(), bash_output(&text, None, true)) {
                ("Bash", (output, Some(code))) => format!(
                    "{}: exit code {code}: {}",
                    first_line(input("command").unwrap_or("bash"), 120),
                    first_line(&output, 300)
                ),
                _ => format!("{}: {}", call.name, first_line(message, 300)),
            };
            records.push(SessionRecord::Error(ErrorRecord {
                common: common("err"),
                message,
                stack,
            }));
        }
        match call.name.as_str() {
            "Bash" => {
                let command = input("command").unwrap_or("bash").to_string();
                let (output, exit_code) = bash_output(&text, result, is_error);
                // A command that reads a file is the file's content, as in every importer.
                let reads = if is_error {
                    Vec::new()
                } else {
                    file_reads(&command, &output, exit_code)
                };
                if !reads.is_empty() {
                    for mut read in reads {
                        if let Some(cwd) = &call.cwd {
                            read.ran_in(cwd);
                        }
                        read.path = entry.path(&read.full_path());
                        read.dir = None;
                        let (path, content) = self.views.add(&read);
                        records.push(SessionRecord::File(FileRecord {
                            common: common("file"),
                            path,
                            content,
                        }));
                    }
                    return records;
                }
                // One that may write a file leaves no view of it.
                self.views.forget_written(&command);
                for (name, status) in test_outcomes(&output) {
                    records.push(SessionRecord::TestResult(TestResult {
                        common: common("test"),
                        name,
                        status,
                        output: None,
                    }));
                }
                records.insert(
                    usize::from(is_error),
                    SessionRecord::ToolOutput(ToolOutput {
                        common: common("out"),
                        tool: command,
                        args: Some(call.input.clone()),
                        output,
                        exit_code,
                        cwd: call.cwd.clone(),
                    }),
                );
            }
            "Read" if !is_error => {
                let path = entry.path(input("file_path").unwrap_or_default());
                match whole_file(&text, result, &call.input) {
                    Some(content) => records.push(self.whole(common("file"), path, content)),
                    None => match file_region(&path, &text, result) {
                        Some(read) => {
                            let (path, content) = self.views.add(&read);
                            records.push(SessionRecord::File(FileRecord {
                                common: common("file"),
                                path,
                                content,
                            }));
                        }
                        None => {
                            records.push(call_output(common("out"), &call.name, &call.input, text))
                        }
                    },
                }
            }
            "Write" if !is_error && input("file_path").is_some() => {
                let path = entry.path(input("file_path").unwrap_or_default());
                let content = input("content").unwrap_or_default().to_string();
                records.push(self.whole(common("file"), path, content));
            }
            "Edit" | "MultiEdit" if !is_error && input("file_path").is_some() => {
                let path = entry.path(input("file_path").unwrap_or_default());
                let hunks = result.and_then(|r| r.structured_patch.as_deref());
                let diff = edit_diff(&path, hunks, &call.input);
                // The current view: the file as read whole with this change applied, else the
                // lines seen of it with the structured patch's hunks placed by their numbers
                // (without numbers, where each is found once).
                let whole = self.views.whole_content(&path);
                let view = match (&whole, placed_hunks(hunks, &diff)) {
                    (Some(content), _) => {
                        apply_edits(content, &call.input).map(|c| (path.clone(), c))
                    }
                    (None, Some(placed)) => self.views.apply_placed(&path, &placed),
                    (None, None) => self.views.apply(&path, &patch_hunks(&diff), Order::Edits),
                };
                records.push(SessionRecord::Diff(DiffRecord {
                    common: common("diff"),
                    diff,
                    path: path.clone(),
                }));
                match view {
                    Some((path, content)) if whole.is_some() => {
                        records.push(self.whole(common("file"), path, content))
                    }
                    Some((path, content)) => records.push(SessionRecord::File(FileRecord {
                        common: common("file"),
                        path,
                        content,
                    })),
                    None => self.views.forget(&path),
                }
            }
            "Grep" | "Glob" if !is_error => {
                // Path (and line) hits, each made relative to the working directory.
                let hits: Vec<String> = text.lines().map(|l| entry.path(l)).collect();
                let hits = hits.join("\n");
                records.push(call_output(common("hits"), &call.name, &call.input, hits));
            }
            "TodoWrite" | "TaskCreate" | "TaskUpdate" | "TaskList" if !is_error => {
                let plan = match call.name.as_str() {
                    "TodoWrite" => listed_plan("TodoWrite", &call.input, "todos", "content"),
                    _ => self
                        .tasks
                        .follow(&call.name, &call.input, &text, result)
                        .then(|| self.tasks.text())
                        .flatten(),
                };
                records.push(match plan {
                    Some(plan) => call_output(common("plan"), &call.name, &call.input, plan),
                    None => call_output(common("out"), &call.name, &call.input, text),
                });
            }
            _ if is_error => {}
            _ => records.push(call_output(common("out"), &call.name, &call.input, text)),
        }
        records
    }
}

impl ClaudeImporter {
    /// The file record of `path`'s whole `content` (a whole read, a write), which becomes
    /// all that is known of its lines.
    fn whole(&mut self, common: Common, path: String, content: String) -> SessionRecord {
        self.views.forget(&path);
        self.views.add(&numbered(&path, 1, &content));
        SessionRecord::File(FileRecord {
            common,
            path,
            content,
        })
    }
}

/// What Claude Code answers a call it did not run because another call of the same turn
/// failed first (the calls of a turn run together).
const SIBLING_NOT_RUN: &str = "Sibling tool call errored";

/// A failed call's text without the `<tool_use_error>` wrapper Claude Code puts around the
/// errors it raises itself.
fn unwrap_tool_use_error(text: &str) -> &str {
    text.trim()
        .trim_start_matches("<tool_use_error>")
        .trim_end_matches("</tool_use_error>")
}

/// The tags Claude Code wraps the text it writes as the user's in (reminders, the output of a
/// local or `!` command, a background task's notice, what the IDE shows): such a text is not a
/// prompt. A text that opens with any other tag is the user's (a prompt written as
/// `<objective>…</objective>`); an app's instructions before the user's words are split
/// off ([`app_instructions`]).
const CLIENT_TAGS: [&str; 19] = [
    "system-reminder",
    "local-command-caveat",
    "local-command-stdout",
    "local-command-stderr",
    "bash-input",
    "bash-stdout",
    "bash-stderr",
    "task-notification",
    "background-task-input",
    "background-task-output",
    "command-message",
    "command-name",
    "command-args",
    "user-prompt-submit-hook",
    "ide_opened_file",
    "ide_selection",
    "new-diagnostics",
    "mcp-resource",
    "teammate-message",
];

/// The tags an app that runs Claude Code wraps its own instructions in, written before the
/// user's words in the same text (Conductor's workspace notes and attachment lists).
const APP_INSTRUCTION_TAGS: [&str; 2] = ["system_instruction", "system-instruction"];

/// `text` split into the app's instructions it opens with (blocks wrapped in one of the
/// [`APP_INSTRUCTION_TAGS`], one after another) and the rest, the user's words; the
/// instructions are empty when it opens with none.
fn app_instructions(text: &str) -> (&str, &str) {
    let mut end = 0;
    loop {
        let rest = &text[end..];
        let at = end + (rest.len() - rest.trim_start().len());
        let block = APP_INSTRUCTION_TAGS.iter().find_map(|tag| {
            let body = text[at..].strip_prefix(&format!("<{tag}>"))?;
            let close = format!("</{tag}>");
            Some(text.len() - body.len() + body.find(&close)? + close.len())
        });
        match block {
            Some(after) => end = after,
            None => break,
        }
    }
    let (preamble, rest) = text.split_at(end);
    (preamble.trim(), rest.trim_start())
}

/// Whether `text` opens with one of the [`CLIENT_TAGS`].
fn client_wrapped(text: &str) -> bool {
    text.strip_prefix('<').is_some_and(|rest| {
        let name = rest
            .split(|c: char| c == '>' || c.is_whitespace())
            .next()
            .unwrap_or_default();
        CLIENT_TAGS.contains(&name)
    })
}

/// The prompt a user's text holds: the text itself, or for a slash command
/// (`<command-name>/x</command-name><command-args>A</command-args>`) `/x A`; none for
/// text the client wrapped (reminders, command output: [`CLIENT_TAGS`]) and for a hook's
/// feedback.
fn prompt_text(text: &str) -> Option<String> {
    let t = text.trim();
    let tag = |name: &str| {
        let open = format!("<{name}>");
        let start = t.find(&open)? + open.len();
        let end = t[start..].find(&format!("</{name}>"))? + start;
        Some(t[start..end].trim())
    };
    if let Some(command) = tag("command-name") {
        let args = tag("command-args").unwrap_or_default();
        return Some(format!("{command} {args}").trim().to_string());
    }
    let wrapped =
        client_wrapped(t) || t.starts_with("Stop hook feedback") || t.starts_with("Caveat:");
    (!wrapped).then(|| t.to_string())
}

/// A failed command's result with its output once: Claude Code 2.1.45 to 2.1.50 wrote the
/// output of some failed commands twice (`Exit code 1`, the output, a blank line, the same
/// output again; 24 of the corpus's 285 failed results), and the restore spent half of an
/// open problem's room on the copy.
fn failure_once(text: String) -> String {
    let Some((head, body)) = text.split_once('\n') else {
        return text;
    };
    if !head.starts_with("Exit code ") {
        return text;
    }
    let body = body.trim_end_matches('\n');
    let once = (1..=3).find_map(|blank| {
        let half = body.len().checked_sub(blank)? / 2;
        let (first, rest) = (body.get(..half)?, body.get(half..)?);
        let second = rest.strip_prefix(&"\n".repeat(blank))?;
        (first == second && !first.trim().is_empty()).then_some(first)
    });
    match once {
        Some(output) => format!("{head}\n{output}"),
        None => text,
    }
}

/// A Bash result's output and exit code: stdout and stderr from `toolUseResult` when there,
/// else the result text; exit code N from a failure's `Exit code N` line, else 0 (none when
/// the command was interrupted).
fn bash_output(
    text: &str,
    result: Option<&ToolUseResult>,
    is_error: bool,
) -> (String, Option<i64>) {
    if is_error {
        let (head, rest) = text.split_once('\n').unwrap_or((text, ""));
        if let Some(code) = head
            .trim()
            .strip_prefix("Exit code ")
            .and_then(|c| c.trim().parse::<i64>().ok())
        {
            return (rest.to_string(), Some(code));
        }
        return (text.to_string(), None);
    }
    let field = |pick: fn(&ToolUseResult) -> &Option<String>| {
        result.and_then(|r| pick(r).as_deref()).unwrap_or("")
    };
    let (out, err) = (field(|r| &r.stdout), field(|r| &r.stderr));
    let code = (!result.is_some_and(|r| r.interrupted)).then_some(0);
    match result {
        Some(_) if !out.is_empty() || !err.is_empty() => {
            let output = match (out.is_empty(), err.is_empty()) {
                (false, false) => format!("{out}\n{err}"),
                (false, true) => out.to_string(),
                _ => err.to_string(),
            };
            (output, code)
        }
        _ => (text.to_string(), code),
    }
}

/// The lines of `content` numbered from `first`, as a read of `path`.
fn numbered(path: &str, first: usize, content: &str) -> FileRead {
    FileRead {
        path: path.to_string(),
        dir: None,
        lines: content
            .lines()
            .enumerate()
            .map_while(|(i, l)| Some((first.checked_add(i)?, l.to_string())))
            .collect(),
    }
}

/// The lines a ranged `Read` (`offset`/`limit`) showed of `path`, with their numbers: from
/// `toolUseResult.file` (`content` from `startLine`) when there, else from the result
/// text's `cat -n` prefixes (`    12→text`). `None` when neither gives numbered lines.
fn file_region(path: &str, text: &str, result: Option<&ToolUseResult>) -> Option<FileRead> {
    if let Some(file) = result.and_then(|r| r.file.as_ref()) {
        let start = file.start_line?;
        let content = file.content.as_deref()?;
        let start = usize::try_from(start).ok()?.max(1);
        let read = numbered(path, start, content);
        return (!read.lines.is_empty()).then_some(read);
    }
    let body = text.split("\n\n<system-reminder>").next().unwrap_or(text);
    let mut lines = Vec::new();
    for line in body.lines() {
        let (n, rest) = line.trim_start().split_once('→')?;
        lines.push((n.parse::<usize>().ok()?, rest.to_string()));
    }
    (!lines.is_empty()).then(|| FileRead {
        path: path.to_string(),
        dir: None,
        lines,
    })
}

/// The content of a whole-file read: from `toolUseResult.file` when it covers every line,
/// else from the result text (its `cat -n` line prefixes removed) when the call asked for
/// no range. `None` for a partial view.
fn whole_file(text: &str, result: Option<&ToolUseResult>, input: &Value) -> Option<String> {
    if let Some(file) = result.and_then(|r| r.file.as_ref()) {
        let whole = file.start_line.unwrap_or(1) <= 1 && file.num_lines >= file.total_lines;
        return whole.then(|| file.content.clone()).flatten();
    }
    if input.get("offset").is_some() || input.get("limit").is_some() {
        return None;
    }
    let body = text.split("\n\n<system-reminder>").next().unwrap_or(text);
    let lines: Vec<&str> = body
        .lines()
        .map(|l| {
            l.trim_start()
                .split_once('→')
                .filter(|(n, _)| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty())
                .map_or(l, |(_, rest)| rest)
        })
        .collect();
    Some(lines.join("\n"))
}

/// The unified diff of an edit: from `toolUseResult.structuredPatch` (its hunks), else one
/// hunk per replaced string (`old_string` → `new_string`, or each of `edits`), whose position
/// the transcript does not record (`@@ @@`).
/// `content` with the replacements of an `Edit`/`MultiEdit` input applied in order, each
/// `old_string` found exactly once (every time with `replace_all`); `None` when one is not
/// found as it should be (the view is then not the file any more).
fn apply_edits(content: &str, input: &Value) -> Option<String> {
    let edits: Vec<&Value> = match input.get("edits").and_then(Value::as_array) {
        Some(edits) => edits.iter().collect(),
        None => vec![input],
    };
    let mut content = content.to_string();
    for edit in edits {
        let Replacement {
            old_string,
            new_string,
        } = shaped(edit)?;
        let times = match edit.get("replace_all").and_then(Value::as_bool) {
            Some(true) => Times::All,
            _ => Times::Once,
        };
        content = replaced(&content, &old_string, &new_string, times)?;
    }
    Some(content)
}

/// The hunks of an edit's structured patch with the number of each one's first old line,
/// its old lines and its new lines (from `diff`, which [`edit_diff`] wrote from them);
/// `None` when there is none, or one has no number.
fn placed_hunks<'a>(hunks: Option<&[Hunk]>, diff: &'a str) -> Option<Vec<PlacedHunk<'a>>> {
    let hunks = hunks.filter(|h| !h.is_empty())?;
    let lines = patch_hunks(diff);
    if lines.len() != hunks.len() {
        return None;
    }
    hunks
        .iter()
        .zip(lines)
        .map(|(h, l)| Some((usize::try_from(h.old_start?).ok()?, l.old, l.new)))
        .collect()
}

fn edit_diff(path: &str, hunks: Option<&[Hunk]>, input: &Value) -> String {
    let mut diff = format!("--- a/{path}\n+++ b/{path}\n");
    if let Some(hunks) = hunks.filter(|h| !h.is_empty()) {
        for h in hunks {
            let n = |v: Option<u64>| v.unwrap_or(0);
            diff.push_str(&format!(
                "@@ -{},{} +{},{} @@\n",
                n(h.old_start),
                n(h.old_lines),
                n(h.new_start),
                n(h.new_lines)
            ));
            for line in &h.lines {
                diff.push_str(line.as_str().unwrap_or(""));
                diff.push('\n');
            }
        }
        return diff;
    }
    let edits: Vec<Replacement> = match input.get("edits").and_then(Value::as_array) {
        Some(edits) => edits
            .iter()
            .map(|e| shaped(e).unwrap_or_default())
            .collect(),
        None => vec![shaped(input).unwrap_or_default()],
    };
    for edit in edits {
        diff.push_str("@@ @@\n");
        for line in edit.old_string.lines() {
            diff.push_str(&format!("-{line}\n"));
        }
        for line in edit.new_string.lines() {
            diff.push_str(&format!("+{line}\n"));
        }
    }
    diff
}

mod format;
mod tasks;
#[cfg(test)]
mod tests;
