//! Real interactive sessions for the interactive benchmark: a Claude Code transcript, a
//! Codex CLI rollout or a Gemini CLI saved chat, read into its units (a JSONL file's lines,
//! a chat's messages) and its tool calls in order with the edits each makes; cut after a
//! share of its tool calls; and labelled from its own future.
//!
//! **Labels** of a cut at tool call k (see `docs/benchmarks.md`):
//! - *files*: the files the session edits in its next [`HORIZON`] tool calls (Claude Code
//!   `Edit`/`MultiEdit`/`Write`/`NotebookEdit`, Codex `apply_patch`, Gemini CLI
//!   `replace`/`write_file`) whose path the transcript up to the cut already holds;
//! - *code*: the first of those edits whose old text has a line (trimmed, at least
//!   [`CODE_LINE_CHARS`] characters) that the transcript up to the cut holds: those lines.
//!
//! Paths are compared relative to the session's working directory when they lie under it.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::real::Half;
use crate::import::{codex, SourceFormat};

/// The shares of each session's tool calls it is cut after.
pub(crate) const CUT_SHARES: [f64; 3] = [0.3, 0.5, 0.7];
/// How many tool calls after a cut its labels look at.
pub(crate) const HORIZON: usize = 30;
/// The least length of a line of an edit's old text that counts as code.
pub(crate) const CODE_LINE_CHARS: usize = 16;
/// How many times the transcript up to a cut may hold a line of its code label for the line
/// to be *distinctive*: shown about once (a Claude Code transcript writes a read file twice,
/// in the tool result and in `toolUseResult`; a Codex CLI rollout a command's output in the
/// call's output and in its end event), not a line such as `} catch (error) {` that recurs
/// all over a codebase and any stretch of code may show.
pub(crate) const DISTINCTIVE_AT_MOST: usize = 2;

/// The client that wrote a session file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SessionClient {
    /// A Claude Code transcript (`~/.claude/projects/<project>/<session>.jsonl`).
    ClaudeCode,
    /// A Codex CLI rollout (`~/.codex/sessions/…/rollout-*.jsonl`).
    Codex,
    /// A Gemini CLI saved chat (`~/.gemini/tmp/<hash>/chats/session-*.json`).
    GeminiCli,
}

impl SessionClient {
    /// All, in report order.
    pub(crate) const ALL: [SessionClient; 3] = [
        SessionClient::ClaudeCode,
        SessionClient::Codex,
        SessionClient::GeminiCli,
    ];

    /// The name in tables.
    pub(crate) fn name(self) -> &'static str {
        self.format().name()
    }

    /// The import format of its files.
    pub(crate) fn format(self) -> SourceFormat {
        match self {
            SessionClient::ClaudeCode => SourceFormat::ClaudeCode,
            SessionClient::Codex => SourceFormat::Codex,
            SessionClient::GeminiCli => SourceFormat::GeminiCli,
        }
    }
}

/// The half of the sessions of `repository` (`owner/name`): tuning when the first byte of
/// its sha256 is even (the rule `SPLIT.md` beside the corpus states).
pub(crate) fn repository_half(repository: &str) -> Half {
    if Sha256::digest(repository.as_bytes())[0] % 2 == 0 {
        Half::Tuning
    } else {
        Half::HeldOut
    }
}

/// The repository a session file comes from: `owner/name` from a file named
/// `<owner>__<name>__…`, else the folder it is in (a project folder of `~/.claude/projects`),
/// else its own name.
pub(crate) fn repository_of(relative_path: &str) -> String {
    let (folder, file) = relative_path
        .rsplit_once('/')
        .map_or(("", relative_path), |(d, f)| (d, f));
    let mut parts = file.splitn(3, "__");
    match (parts.next(), parts.next(), parts.next()) {
        (Some(owner), Some(name), Some(_)) if !owner.is_empty() && !name.is_empty() => {
            format!("{owner}/{name}")
        }
        _ if !folder.is_empty() => folder.to_string(),
        _ => file.to_string(),
    }
}

/// An edit a tool call makes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    /// The file, as the call names it.
    pub(crate) path: String,
    /// The text it replaces (empty for a whole-file write).
    pub(crate) old: String,
}

/// A tool call: the units it spans and its edits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    /// The unit that makes the call.
    pub(crate) start: usize,
    /// The unit that holds its result (the call's own unit when no result was found).
    pub(crate) end: usize,
    /// The edits it makes.
    pub(crate) edits: Vec<Edit>,
}

/// A session's units: a JSONL file's lines, or a saved chat's messages.
#[derive(Debug, Clone)]
enum Units {
    Lines(Vec<String>),
    Chat { root: Value, messages: Vec<Value> },
}

/// A session file, read.
#[derive(Debug, Clone)]
pub(crate) struct Session {
    /// Its path relative to the corpus folder.
    pub(crate) name: String,
    /// Its repository (see [`repository_of`]).
    pub(crate) repository: String,
    /// Its half.
    pub(crate) half: Half,
    /// Its client.
    pub(crate) client: SessionClient,
    /// The client's session id (empty when the file has none).
    pub(crate) session_id: String,
    /// The session's working directory, when the file records one.
    pub(crate) cwd: Option<String>,
    units: Units,
    /// Its tool calls, in order.
    pub(crate) calls: Vec<Call>,
}

/// Why a file is not a session the benchmark reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotASession {
    /// Not a format of a client above (or an unknown shape of one).
    #[error("not a Claude Code transcript, Codex CLI rollout or Gemini CLI chat")]
    Unknown,
}

/// One cut of a session, with its labels.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionCut {
    /// The share of tool calls before the cut.
    pub(crate) share: f64,
    /// The tool calls before the cut.
    pub(crate) calls: usize,
    /// The transcript up to the cut (a chat re-serialized with its first messages).
    pub(crate) text: String,
    /// The labelled files (as [`Session::display_path`] writes them).
    pub(crate) files: Vec<String>,
    /// The code label: lines of the next edit's old text that the transcript holds.
    pub(crate) code: Vec<String>,
}

impl SessionCut {
    /// The code label's distinctive lines (see [`DISTINCTIVE_AT_MOST`]).
    pub(crate) fn distinctive_code(&self) -> Vec<&str> {
        self.code
            .iter()
            .map(String::as_str)
            .filter(|l| self.text.matches(&json_escaped(l)).count() <= DISTINCTIVE_AT_MOST)
            .collect()
    }
}

/// A compaction the client itself made, recorded in its session file: Claude Code's
/// `compact_boundary` line and the summary the client gave the model after it (the next line
/// marked `isCompactSummary`); Codex CLI's `compacted` item, which holds the summary itself
/// ([`codex_summary`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RealCompaction {
    /// The line of the boundary (1-based).
    pub(crate) line: usize,
    /// The transcript up to the boundary (Claude Code: what the client's `PreCompact` saw),
    /// labelled with the files edited within the next [`HORIZON`] tool calls after the
    /// summary.
    pub(crate) cut: SessionCut,
    /// The client's own summary.
    pub(crate) summary: String,
    /// Claude Code: the transcript's lines from the boundary to the summary, as the client
    /// writes them (after its `SessionStart` hooks ran). None for Codex CLI, which writes the
    /// summary on the boundary's own line and runs no hook.
    pub(crate) written: Option<String>,
}

/// Where a JSONL session records a compaction: the boundary's line index, the index of the
/// line that holds the summary (the labels look at the calls after it), and the summary.
struct Boundary {
    at: usize,
    summary_at: usize,
    summary: String,
}

impl Session {
    /// Every compaction the client recorded in the transcript (Claude Code, Codex CLI; none
    /// for a Gemini CLI chat), each with the summary it gave and labels from what came after
    /// it.
    pub(crate) fn real_compactions(&self) -> Vec<RealCompaction> {
        let Units::Lines(lines) = &self.units else {
            return Vec::new();
        };
        let values: Vec<Option<Value>> =
            lines.iter().map(|l| serde_json::from_str(l).ok()).collect();
        let boundaries = match self.client {
            SessionClient::ClaudeCode => claude_boundaries(&values),
            SessionClient::Codex => codex_boundaries(&values),
            SessionClient::GeminiCli => Vec::new(),
        };
        let mut out = Vec::new();
        for Boundary {
            at: b,
            summary_at: at,
            summary,
        } in boundaries
        {
            let before = self.calls.iter().filter(|c| c.start < b).count();
            let after: Vec<Call> = self
                .calls
                .iter()
                .filter(|c| c.start > at)
                .take(HORIZON)
                .cloned()
                .collect();
            if before == 0 || after.is_empty() {
                continue;
            }
            let text = self.text_until(b);
            let (files, code) = self.labels(&text, &after);
            out.push(RealCompaction {
                line: b + 1,
                cut: SessionCut {
                    share: before as f64 / self.calls.len() as f64,
                    calls: before,
                    text,
                    files,
                    code,
                },
                summary,
                written: (self.client == SessionClient::ClaudeCode)
                    .then(|| lines[b..=at].iter().map(|l| format!("{l}\n")).collect()),
            });
        }
        out
    }

    /// Reads the session file `name` (its path relative to the corpus) from its `text`.
    pub(crate) fn parse(name: &str, text: &str) -> Result<Session, NotASession> {
        let repository = repository_of(name);
        let mut session = Session {
            name: name.to_string(),
            half: repository_half(&repository),
            repository,
            client: SessionClient::ClaudeCode,
            session_id: String::new(),
            cwd: None,
            units: Units::Lines(Vec::new()),
            calls: Vec::new(),
        };
        let trimmed = text.trim_start();
        if trimmed.starts_with('{') {
            if let Ok(root) = serde_json::from_str::<Value>(text) {
                return session.read_chat(root);
            }
        }
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        let values: Vec<Option<Value>> =
            lines.iter().map(|l| serde_json::from_str(l).ok()).collect();
        let first = values.iter().flatten().next().ok_or(NotASession::Unknown)?;
        if first.get("projectHash").is_some() {
            // A Gemini CLI chat in JSON Lines (2026): cut as the saved chat it amounts to.
            let (header, messages, _) =
                crate::import::gemini_cli::chat_lines_messages(text).ok_or(NotASession::Unknown)?;
            let mut root = serde_json::json!({ "messages": messages });
            if let Some(id) = header.get("sessionId") {
                root["sessionId"] = id.clone();
            }
            return session.read_chat(root);
        }
        let is_codex = values.iter().flatten().take(5).any(|v| {
            matches!(
                v.get("type").and_then(Value::as_str),
                Some("session_meta" | "response_item" | "turn_context")
            )
        });
        let is_claude = values
            .iter()
            .flatten()
            .any(|v| v.get("sessionId").is_some() && v.get("message").is_some());
        if is_codex {
            session.client = SessionClient::Codex;
            session.read_codex(&values);
        } else if is_claude {
            session.read_claude(&values);
        } else {
            return Err(NotASession::Unknown);
        }
        session.units = Units::Lines(lines);
        Ok(session)
    }

    fn read_claude(&mut self, values: &[Option<Value>]) {
        let mut results: HashMap<&str, usize> = HashMap::new();
        let mut uses: Vec<(usize, &str, Vec<Edit>)> = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else { continue };
            if self.session_id.is_empty() {
                if let Some(id) = v.get("sessionId").and_then(Value::as_str) {
                    self.session_id = id.to_string();
                }
            }
            if self.cwd.is_none() {
                self.cwd = v.get("cwd").and_then(Value::as_str).map(str::to_string);
            }
            let blocks = v
                .pointer("/message/content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten();
            for block in blocks {
                match block.get("type").and_then(Value::as_str) {
                    Some("tool_use") => uses.push((
                        i,
                        block.get("id").and_then(Value::as_str).unwrap_or_default(),
                        claude_edits(block),
                    )),
                    Some("tool_result") => {
                        if let Some(id) = block.get("tool_use_id").and_then(Value::as_str) {
                            results.entry(id).or_insert(i);
                        }
                    }
                    _ => {}
                }
            }
        }
        self.calls = calls(uses, &results);
    }

    fn read_codex(&mut self, values: &[Option<Value>]) {
        let mut results: HashMap<&str, usize> = HashMap::new();
        let mut uses: Vec<(usize, &str, Vec<Edit>)> = Vec::new();
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else { continue };
            let Some(payload) = v.get("payload") else {
                continue;
            };
            let text = |k: &str| payload.get(k).and_then(Value::as_str).unwrap_or_default();
            match (v.get("type").and_then(Value::as_str), text("type")) {
                (Some("session_meta"), _) => {
                    let id = payload.get("id").or_else(|| payload.get("session_id"));
                    self.session_id = id.and_then(Value::as_str).unwrap_or_default().into();
                    self.cwd = payload
                        .get("cwd")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                }
                (Some("response_item"), "function_call" | "custom_tool_call") => {
                    let args = codex::call_args(payload);
                    let edits = codex::patch_of_call(text("name"), &args)
                        .map(|patch| patch_edits(&patch))
                        .unwrap_or_default();
                    uses.push((i, text("call_id"), edits));
                }
                (Some("response_item"), "function_call_output" | "custom_tool_call_output") => {
                    results.entry(text("call_id")).or_insert(i);
                }
                _ => {}
            }
        }
        self.calls = calls(uses, &results);
    }

    fn read_chat(mut self, root: Value) -> Result<Session, NotASession> {
        let Some(messages) = root.get("messages").and_then(Value::as_array).cloned() else {
            return Err(NotASession::Unknown);
        };
        self.client = SessionClient::GeminiCli;
        self.session_id = root
            .get("sessionId")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        for (i, m) in messages.iter().enumerate() {
            for call in m
                .get("toolCalls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                self.calls.push(Call {
                    start: i,
                    end: i,
                    edits: gemini_edits(call),
                });
            }
        }
        let mut root = root;
        if let Some(obj) = root.as_object_mut() {
            obj.insert("messages".into(), Value::Array(Vec::new()));
        }
        self.units = Units::Chat { root, messages };
        Ok(self)
    }

    /// The transcript's first `units` units, as the client would have written them then.
    pub(crate) fn text_until(&self, units: usize) -> String {
        match &self.units {
            Units::Lines(lines) => {
                let mut out = String::new();
                for line in lines.iter().take(units) {
                    out.push_str(line);
                    out.push('\n');
                }
                out
            }
            Units::Chat { root, messages } => {
                let mut root = root.clone();
                if let Some(obj) = root.as_object_mut() {
                    let kept = messages.iter().take(units).cloned().collect();
                    obj.insert("messages".into(), Value::Array(kept));
                }
                serde_json::to_string_pretty(&root).unwrap_or_default()
            }
        }
    }

    /// `path` relative to the session's working directory when it lies under it.
    pub(crate) fn display_path<'a>(&self, path: &'a str) -> &'a str {
        let Some(cwd) = self.cwd.as_deref().map(|c| c.trim_end_matches(['/', '\\'])) else {
            return path;
        };
        match path.strip_prefix(cwd) {
            Some(rest) if rest.starts_with(['/', '\\']) && !cwd.is_empty() => &rest[1..],
            _ => path,
        }
    }

    /// The session cut after each of [`CUT_SHARES`] of its tool calls (a share that leaves
    /// no call before or after the cut, or cuts where the share before it did, is skipped),
    /// with labels.
    pub(crate) fn cuts(&self) -> Vec<SessionCut> {
        let n = self.calls.len();
        let mut out = Vec::new();
        for share in CUT_SHARES {
            let k = (share * n as f64).round() as usize;
            if k == 0 || k >= n || out.last().is_some_and(|c: &SessionCut| c.calls == k) {
                continue;
            }
            // Up to the last call's result, never into the next call.
            let units = (self.calls[k - 1].end + 1)
                .min(self.calls[k].start)
                .max(self.calls[k - 1].start + 1);
            let text = self.text_until(units);
            let future = &self.calls[k..n.min(k + HORIZON)];
            let (files, code) = self.labels(&text, future);
            out.push(SessionCut {
                share,
                calls: k,
                text,
                files,
                code,
            });
        }
        out
    }

    fn labels(&self, text: &str, future: &[Call]) -> (Vec<String>, Vec<String>) {
        let mut files: Vec<String> = Vec::new();
        let mut code: Vec<String> = Vec::new();
        for edit in future.iter().flat_map(|c| &c.edits) {
            let path = self.display_path(&edit.path);
            if path.is_empty() || !text.contains(&json_escaped(path)) {
                continue;
            }
            if !files.iter().any(|f| f == path) {
                files.push(path.to_string());
            }
            if code.is_empty() {
                for line in edit.old.lines().map(str::trim) {
                    if line.chars().count() >= CODE_LINE_CHARS
                        && text.contains(&json_escaped(line))
                        && !code.iter().any(|c| c == line)
                    {
                        code.push(line.to_string());
                    }
                }
            }
        }
        (files, code)
    }
}

/// The text of a Claude Code message line: its content string, or its text blocks joined.
fn message_text(v: &Value) -> String {
    match v.pointer("/message/content") {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Claude Code's compactions: each `compact_boundary` line with the next line marked
/// `isCompactSummary` after it (one without is skipped).
fn claude_boundaries(values: &[Option<Value>]) -> Vec<Boundary> {
    let mut out = Vec::new();
    for (b, v) in values.iter().enumerate() {
        let is_boundary = v
            .as_ref()
            .is_some_and(|v| v.get("subtype").and_then(Value::as_str) == Some("compact_boundary"));
        if !is_boundary {
            continue;
        }
        let summary = values.iter().enumerate().skip(b + 1).find_map(|(i, v)| {
            let v = v.as_ref()?;
            let marked = v.get("isCompactSummary").and_then(Value::as_bool) == Some(true);
            marked.then(|| (i, message_text(v)))
        });
        if let Some((summary_at, summary)) = summary {
            out.push(Boundary {
                at: b,
                summary_at,
                summary,
            });
        }
    }
    out
}

/// Codex CLI's compactions: each `compacted` item, boundary and summary on one line.
fn codex_boundaries(values: &[Option<Value>]) -> Vec<Boundary> {
    values
        .iter()
        .enumerate()
        .filter_map(|(b, v)| {
            let v = v.as_ref()?;
            (v.get("type").and_then(Value::as_str) == Some("compacted")).then(|| Boundary {
                at: b,
                summary_at: b,
                summary: codex_summary(v.get("payload").unwrap_or(&Value::Null)),
            })
        })
        .collect()
}

/// What a Codex CLI `compacted` item's payload puts in the model's window in place of the
/// conversation, as text: its `message` (a local compaction's summary), and the text of the
/// messages of its `replacement_history` (the history the client resumes from: the user's
/// messages it kept, a local summary again, which is not repeated). Left out: developer
/// messages, `<environment_context>` and the project's instructions (the client sends them
/// with every context; a Claude Code summary is scored without its system prompt either),
/// and a remote compaction's summary, an encrypted `compaction` item with no readable text.
fn codex_summary(payload: &Value) -> String {
    let message = payload
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut parts: Vec<&str> = Vec::new();
    if !message.trim().is_empty() {
        parts.push(message);
    }
    let kept = payload
        .get("replacement_history")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|item| {
            item.get("type").and_then(Value::as_str) == Some("message")
                && item.get("role").and_then(Value::as_str) != Some("developer")
        })
        .flat_map(|item| {
            item.get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|part| part.get("text").and_then(Value::as_str));
    for text in kept {
        let resent = text.trim_start().starts_with("<environment_context>")
            || codex::is_project_instructions(text);
        if !resent && !text.trim().is_empty() && !message.contains(text.trim()) {
            parts.push(text);
        }
    }
    parts.join("\n\n")
}

/// The calls made at (unit, call id, edits), each ending at the unit of its result.
fn calls(uses: Vec<(usize, &str, Vec<Edit>)>, results: &HashMap<&str, usize>) -> Vec<Call> {
    uses.into_iter()
        .map(|(start, id, edits)| Call {
            start,
            end: results.get(id).copied().unwrap_or(start).max(start),
            edits,
        })
        .collect()
}

/// `s` as it appears inside a JSON string.
fn json_escaped(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    quoted[1..quoted.len().saturating_sub(1).max(1)].to_string()
}

/// The edits of a Claude Code `tool_use` block.
fn claude_edits(block: &Value) -> Vec<Edit> {
    let input = block.get("input").unwrap_or(&Value::Null);
    let s = |k: &str| input.get(k).and_then(Value::as_str).unwrap_or_default();
    let path = s("file_path");
    match block
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
    {
        "Edit" => vec![Edit {
            path: path.into(),
            old: s("old_string").into(),
        }],
        "MultiEdit" => vec![Edit {
            path: path.into(),
            old: input
                .get("edits")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|e| e.get("old_string").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
        }],
        "Write" => vec![Edit {
            path: path.into(),
            old: String::new(),
        }],
        "NotebookEdit" => vec![Edit {
            path: s("notebook_path").into(),
            old: String::new(),
        }],
        _ => Vec::new(),
    }
}

/// The edits of a Gemini CLI tool call.
fn gemini_edits(call: &Value) -> Vec<Edit> {
    let args = call.get("args").unwrap_or(&Value::Null);
    let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or_default();
    match call.get("name").and_then(Value::as_str).unwrap_or_default() {
        "replace" | "edit" => vec![Edit {
            path: s("file_path").into(),
            old: s("old_string").into(),
        }],
        "write_file" => vec![Edit {
            path: s("file_path").into(),
            old: String::new(),
        }],
        _ => Vec::new(),
    }
}

/// The edits of a Codex patch: per file, its context and removed lines as the old text.
fn patch_edits(patch: &str) -> Vec<Edit> {
    codex::patch_sections(patch)
        .into_iter()
        .map(|(path, section)| Edit {
            old: codex::patch_hunks(&section)
                .into_iter()
                .flat_map(|h| h.old)
                .collect::<Vec<_>>()
                .join("\n"),
            path,
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn claude_line(v: Value) -> String {
        let mut v = v;
        v["sessionId"] = "s1".into();
        v["cwd"] = "/w".into();
        v.to_string()
    }

    /// A Claude Code transcript: read a.rs, list and test, edit a.rs, write b.rs (never
    /// seen before), edit a.rs again.
    pub(crate) fn claude_fixture() -> String {
        let use_ = |id: &str, name: &str, input: Value| {
            claude_line(
                serde_json::json!({"type": "assistant", "message": {"role": "assistant",
                "content": [{"type": "tool_use", "id": id, "name": name, "input": input}]}}),
            )
        };
        let result = |id: &str, text: &str| {
            claude_line(
                serde_json::json!({"type": "user", "message": {"role": "user",
                "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]}}),
            )
        };
        [
            claude_line(serde_json::json!({"type": "user", "message": {"role": "user",
                "content": "fix the parser in a.rs"}})),
            use_("t1", "Read", serde_json::json!({"file_path": "/w/src/a.rs"})),
            result("t1", "     1\tfn parse_header(input: &str) -> Header {\n     2\t    todo!()\n"),
            use_("t2", "Bash", serde_json::json!({"command": "ls src"})),
            result("t2", "src/c.rs"),
            use_("t3", "Bash", serde_json::json!({"command": "cargo test"})),
            result("t3", "error: parse_header panicked"),
            use_("t4", "Edit", serde_json::json!({"file_path": "/w/src/a.rs",
                "old_string": "fn parse_header(input: &str) -> Header {\n    todo!()",
                "new_string": "fn parse_header(input: &str) -> Header {\n    Header::read(input)"})),
            result("t4", "ok"),
            use_("t5", "Write", serde_json::json!({"file_path": "/w/src/b.rs", "content": "x"})),
            result("t5", "ok"),
            use_("t6", "Edit", serde_json::json!({"file_path": "/w/src/a.rs",
                "old_string": "fn parse_header(input: &str) -> Header {\n    Header::read(input)",
                "new_string": "fn parse_header(input: &str) -> Header {\n    Header::read(input.trim())"})),
            result("t6", "ok"),
        ]
        .join("\n")
            + "\n"
    }

    #[test]
    fn a_code_line_the_transcript_holds_more_than_twice_is_not_distinctive() {
        let cut = SessionCut {
            share: 0.5,
            calls: 3,
            text: [
                r#"{"content":"fn parse_header(input: &str) -> Header {\n} catch (error) {"}"#,
                r#"{"toolUseResult":"fn parse_header(input: &str) -> Header {"}"#,
                r#"{"content":"} catch (error) {\n} catch (error) {"}"#,
            ]
            .join("\n"),
            files: Vec::new(),
            code: vec![
                "fn parse_header(input: &str) -> Header {".into(),
                "} catch (error) {".into(),
            ],
        };
        assert_eq!(
            cut.distinctive_code(),
            ["fn parse_header(input: &str) -> Header {"]
        );
    }

    #[test]
    fn a_claude_transcript_is_cut_after_a_call_result_and_labelled_from_its_future() {
        let s = Session::parse("o__r__s.jsonl", &claude_fixture()).unwrap();
        assert_eq!(s.client, SessionClient::ClaudeCode);
        assert_eq!(
            (s.repository.as_str(), s.session_id.as_str()),
            ("o/r", "s1")
        );
        assert_eq!(s.calls.len(), 6);
        assert_eq!((s.calls[0].start, s.calls[0].end), (1, 2));
        let cuts = s.cuts();
        // 30 % of 6 = 2 calls, 50 % = 3, 70 % = 4.
        assert_eq!(cuts.iter().map(|c| c.calls).collect::<Vec<_>>(), [2, 3, 4]);
        let first = &cuts[0];
        let last = first.text.lines().last().unwrap();
        assert!(
            last.contains("\"t2\"") && last.contains("src/c.rs"),
            "{last}"
        );
        assert!(!first.text.contains("cargo test"));
        // a.rs was read before the cut; b.rs never was.
        assert_eq!(first.files, ["src/a.rs"]);
        assert_eq!(first.code, ["fn parse_header(input: &str) -> Header {"]);
        // After the first edit, its new text is code the session has written.
        assert_eq!(cuts[2].files, ["src/a.rs"]);
        assert_eq!(
            cuts[2].code,
            [
                "fn parse_header(input: &str) -> Header {",
                "Header::read(input)"
            ]
        );
    }

    #[test]
    fn codex_patches_and_gemini_replacements_are_edits() {
        let rollout = [
            serde_json::json!({"type": "session_meta", "payload": {"id": "c1", "cwd": "/w"}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call",
                "name": "shell", "call_id": "a", "arguments":
                serde_json::json!({"command": ["bash", "-lc", "cat src/lib.rs"]}).to_string()}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "function_call_output",
                "call_id": "a", "output": "pub fn answer() -> u32 { 41 }"}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "custom_tool_call",
                "name": "apply_patch", "call_id": "b", "input":
                "*** Begin Patch\n*** Update File: src/lib.rs\n@@\n-pub fn answer() -> u32 { 41 }\n+pub fn answer() -> u32 { 42 }\n*** End Patch\n"}}),
            serde_json::json!({"type": "response_item", "payload": {"type": "custom_tool_call_output",
                "call_id": "b", "output": "Done"}}),
        ]
        .map(|v| v.to_string())
        .join("\n");
        let s = Session::parse("x__y__rollout.jsonl", &rollout).unwrap();
        assert_eq!(s.client, SessionClient::Codex);
        assert_eq!(s.calls.len(), 2);
        let cut = &s.cuts()[0];
        assert_eq!(cut.files, ["src/lib.rs"]);
        assert_eq!(cut.code, ["pub fn answer() -> u32 { 41 }"]);

        let chat = serde_json::json!({"sessionId": "g1", "messages": [
            {"type": "user", "content": "rename the flag"},
            {"type": "gemini", "content": "", "toolCalls": [{"name": "read_file",
                "args": {"absolute_path": "/p/flags.py"},
                "result": [{"functionResponse": {"response": {"output": "VERBOSE_FLAG = '--verbose'"}}}]}]},
            {"type": "gemini", "content": "", "toolCalls": [{"name": "replace",
                "args": {"file_path": "/p/flags.py", "old_string": "VERBOSE_FLAG = '--verbose'",
                "new_string": "LOUD_FLAG = '--loud'"}}]},
        ]})
        .to_string();
        let s = Session::parse("g.json", &chat).unwrap();
        assert_eq!(
            (s.client, s.repository.as_str()),
            (SessionClient::GeminiCli, "g.json")
        );
        let cut = &s.cuts()[0];
        assert_eq!(cut.files, ["/p/flags.py"]);
        assert_eq!(cut.code, ["VERBOSE_FLAG = '--verbose'"]);
        assert!(!cut.text.contains("LOUD_FLAG"));
    }

    /// An excerpt of a real Codex CLI rollout (agentv, 0.142; its lines in this order): the
    /// session's meta line, a read of `examples/features/composite/README.md` and its output,
    /// with `compacted`, the rollout's second `compacted` item (a remote compaction: empty
    /// `message`, the kept history with an encrypted summary), then a patch of that README and
    /// its output.
    pub(crate) fn codex_excerpt(compacted: bool) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(
            "fixtures/real-world/agent-transcripts/codex-cli/\
             EntityProcess__agentv__019f03e0-321f-7eb2-83cc-b54ecd71be23.jsonl",
        );
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let output_of = |n: usize| {
            let call: Value = serde_json::from_str(lines[n - 1]).unwrap();
            let id = call["payload"]["call_id"].as_str().unwrap().to_string();
            lines[n..]
                .iter()
                .find(|l| l.contains("_output\"") && l.contains(&id))
                .unwrap()
                .to_string()
        };
        let mut out = vec![lines[0].to_string(), lines[308].to_string(), output_of(309)];
        if compacted {
            assert!(lines[572].contains("\"type\":\"compacted\""));
            out.push(lines[572].to_string());
        }
        out.extend([lines[427].to_string(), output_of(428)]);
        out.join("\n") + "\n"
    }

    #[test]
    fn a_codex_compacted_item_is_a_real_compaction_with_its_summary_and_labels() {
        let name = "codex-cli/EntityProcess__agentv__excerpt.jsonl";
        let s = Session::parse(name, &codex_excerpt(true)).unwrap();
        assert_eq!((s.client, s.calls.len()), (SessionClient::Codex, 2));
        let real = s.real_compactions();
        assert_eq!(real.len(), 1);
        let r = &real[0];
        assert_eq!((r.line, r.cut.calls, r.written.as_deref()), (4, 1, None));
        assert_eq!(r.cut.text.lines().count(), 3);
        // The kept user messages, in order; not the instructions the client sends with every
        // context, nor the encrypted summary.
        assert!(
            r.summary
                .starts_with("investigate whether this issue is stale"),
            "{}",
            r.summary
        );
        assert!(r.summary.contains("please push to PR from worktree"));
        for resent in [
            "# AGENTS.md instructions",
            "<permissions instructions>",
            "REDACTED",
        ] {
            assert!(!r.summary.contains(resent), "{resent}");
        }
        assert_eq!(r.cut.files, ["examples/features/composite/README.md"]);
        assert!(
            r.cut
                .code
                .contains(&"- Combining multiple graders in a single test case".to_string()),
            "{:?}",
            r.cut.code
        );
        // The canary: the same rollout without its `compacted` item records no compaction.
        let plain = Session::parse(name, &codex_excerpt(false)).unwrap();
        assert_eq!(plain.calls.len(), 2);
        assert!(plain.real_compactions().is_empty());
    }

    #[test]
    fn a_local_codex_summary_is_read_once_beside_the_messages_it_kept() {
        let payload = serde_json::json!({
            "message": "Summary: src/lib.rs parses headers.",
            "replacement_history": [
                {"type": "message", "role": "developer",
                 "content": [{"type": "input_text", "text": "<permissions instructions>"}]},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "fix the parser"}]},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "<environment_context>cwd</environment_context>"}]},
                {"type": "message", "role": "user",
                 "content": [{"type": "input_text", "text": "Summary: src/lib.rs parses headers."}]},
                {"type": "compaction", "encrypted_content": "x"},
            ],
        });
        assert_eq!(
            codex_summary(&payload),
            "Summary: src/lib.rs parses headers.\n\nfix the parser"
        );
        // Before `replacement_history` (2025), the message alone.
        assert_eq!(
            codex_summary(&serde_json::json!({"message": "the summary"})),
            "the summary"
        );
    }

    #[test]
    fn the_repository_decides_the_half() {
        assert_eq!(
            repository_of("claude-code/marot__spotter__short.jsonl"),
            "marot/spotter"
        );
        assert_eq!(repository_of("-home-me-proj/abc.jsonl"), "-home-me-proj");
        assert_eq!(repository_of("abc.jsonl"), "abc.jsonl");
        // sha256("marot/spotter") starts with 0xf5, sha256("d-kimuson/claude-code-viewer")
        // with 0x50.
        assert_eq!(repository_half("marot/spotter"), Half::HeldOut);
        assert_eq!(
            repository_half("d-kimuson/claude-code-viewer"),
            Half::Tuning
        );
        let lines = "{\"sessionId\":\"a\",\"projectHash\":\"h\"}\n{\"id\":\"m\",\"type\":\"gemini\",\"content\":\"\",\"toolCalls\":[{\"name\":\"read_file\",\"args\":{}}]}\n";
        let s = Session::parse("x.jsonl", lines).unwrap();
        assert_eq!(
            (s.client, s.session_id.as_str(), s.calls.len()),
            (SessionClient::GeminiCli, "a", 1)
        );
        assert_eq!(
            Session::parse("x.jsonl", "hello\n").unwrap_err(),
            NotASession::Unknown
        );
    }

    #[test]
    fn split_md_lists_every_session_in_the_half_of_its_repository() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/real-world/agent-transcripts");
        let split = std::fs::read_to_string(root.join("SPLIT.md")).unwrap();
        let mut listed = Vec::new();
        let mut half = None;
        for line in split.lines() {
            match line {
                "## tuning" => half = Some(Half::Tuning),
                "## held-out" => half = Some(Half::HeldOut),
                _ => {
                    if let (Some(h), Some(file)) = (half, line.strip_prefix("- ")) {
                        assert_eq!(repository_half(&repository_of(file)), h, "{file}");
                        listed.push(file.to_string());
                    }
                }
            }
        }
        let mut present = Vec::new();
        for client in ["claude-code", "codex-cli", "gemini-cli"] {
            let source = std::fs::read_to_string(root.join(client).join("SOURCE.md")).unwrap();
            for entry in std::fs::read_dir(root.join(client)).unwrap() {
                let name = entry.unwrap().file_name().to_string_lossy().into_owned();
                if name.ends_with(".json") || name.ends_with(".jsonl") {
                    // The repository in the name is the one of its SOURCE.md row.
                    let repository = repository_of(&name);
                    assert!(
                        source.contains(&format!("| `{name}` | {repository} |")),
                        "{client}/{name}: no SOURCE.md row for {repository}"
                    );
                    present.push(format!("{client}/{name}"));
                }
            }
        }
        listed.sort();
        present.sort();
        assert_eq!(listed, present);
    }
}
