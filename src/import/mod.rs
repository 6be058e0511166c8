//! Importers: other tools' session formats converted into the optimizer's records format.
//!
//! - [`file_reads`]: shell commands that read a file, so their output becomes a file record.
//! - [`swe_agent`]: mini-swe-agent trajectories (`*.traj.json`, format `mini-swe-agent-1.1`).
//! - [`claude_code`]: Claude Code transcripts (`~/.claude/projects/…/<session>.jsonl`),
//!   line by line and resumable from an offset (the hooks import incrementally).
//! - [`gemini_cli`]: Gemini CLI saved chats (`~/.gemini/tmp/<hash>/chats/session-*.json`).
//! - [`codex`]: Codex CLI rollouts (`~/.codex/sessions/…/rollout-*.jsonl`).
//! - [`plans`]: the session's plan, as every importer writes it.
//! - [`summary`]: what an import produced, skipped and could not read.
//! - [`test_runs`]: test outcomes named in a command's output.
//! - `typed`: each format's serde types are read through it, so a mismatch names its place.
//!
//! Every record an importer makes carries its provenance in its id: the kind, the line (or
//! message index) of the source file and, where the source has one, the first characters of
//! the entry's uuid (`out-L12-1b4951f2`). The mapping is documented in `docs/import.md`.

pub(crate) mod claude_code;
pub(crate) mod codex;
pub(crate) mod file_reads;
pub mod frame_log;
pub(crate) mod gemini_cli;
pub mod mcp;
pub(crate) mod plans;
mod replacements;
pub mod summary;
pub mod swe_agent;
pub(crate) mod test_runs;
mod typed;

use std::fmt;

use serde_json::Value;

use crate::records::SessionRecord;
use crate::records::{Common, Records};
pub use summary::{ImportSummary, LineError};

/// The tool output of a call of `tool` with `args` (null: none) answered by `output`, with no
/// exit code (a plan an importer wrote, or a tool whose answer is text).
pub(crate) fn call_output(
    common: Common,
    tool: &str,
    args: &Value,
    output: String,
) -> SessionRecord {
    SessionRecord::ToolOutput(crate::records::ToolOutput {
        common,
        tool: tool.to_string(),
        args: (!args.is_null()).then(|| args.clone()),
        output,
        exit_code: None,
        cwd: None,
    })
}

/// The marker every context a ctxopt hook injects starts with. Importers skip any text
/// that holds it, so a context injected into a session is never re-imported as new facts.
pub(crate) const INJECTED_MARKER: &str = "<ctxopt-context";

/// The session formats `ctxopt import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceFormat {
    /// Claude Code transcripts (JSON Lines, or a JSON array of the same entries).
    ClaudeCode,
    /// Gemini CLI saved chats (one JSON object).
    GeminiCli,
    /// Codex CLI rollouts (JSON Lines).
    Codex,
    /// mini-swe-agent trajectories (one JSON object).
    SweAgent,
}

impl SourceFormat {
    /// The name `--from` takes.
    pub fn name(self) -> &'static str {
        match self {
            SourceFormat::ClaudeCode => "claude-code",
            SourceFormat::GeminiCli => "gemini-cli",
            SourceFormat::Codex => "codex",
            SourceFormat::SweAgent => "swe-agent",
        }
    }
}

impl fmt::Display for SourceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a whole file could not be imported (a bad line is not one of these: it is reported
/// in the [`ImportSummary`] and the rest imports).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImportError {
    /// The file is one JSON document and it is not JSON.
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The JSON is not a session of the expected format; the message names the place
    /// (`messages`, `messages[1].content`).
    #[error("{path}: {message}")]
    Format {
        /// Where.
        path: String,
        /// What is wrong there.
        message: String,
    },
    /// A mini-swe-agent cut asks for no step, or for a share outside (0, 1].
    #[error("invalid cut: {0}")]
    Cut(String),
}

/// How to import a session file.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ImportOptions {
    /// Stop after part of the steps (mini-swe-agent trajectories only); `None` keeps them
    /// all.
    pub cut: Option<swe_agent::Cut>,
}

/// Converts the text of a session file of `format` into records, with a summary of what
/// was skipped and which lines could not be read. A cut is refused for a format other
/// than `swe-agent`.
pub fn import_text(
    format: SourceFormat,
    text: &str,
    options: &ImportOptions,
) -> Result<(Records, ImportSummary), ImportError> {
    if options.cut.is_some() && format != SourceFormat::SweAgent {
        return Err(ImportError::Cut(format!(
            "only swe-agent trajectories have steps to cut, not {format} sessions"
        )));
    }
    match format {
        SourceFormat::ClaudeCode => Ok(claude_code::import_transcript(text)),
        SourceFormat::GeminiCli => gemini_cli::import_chat(text),
        SourceFormat::Codex => Ok(codex::import_rollout(text)),
        SourceFormat::SweAgent => {
            let imported = swe_agent::import_with(text, options)?;
            let records = imported.records;
            let mut summary = ImportSummary {
                lines: imported.messages,
                ..ImportSummary::default()
            };
            summary.count_records(&records);
            Ok((records, summary))
        }
    }
}

/// The records of a session: its task and every record made, in order, each in its list;
/// the summary counts them.
pub(crate) fn gather(
    task: Option<String>,
    made: Vec<SessionRecord>,
    summary: &mut ImportSummary,
) -> Records {
    let mut records = Records {
        task,
        ..Records::default()
    };
    for r in made {
        r.push_into(&mut records);
    }
    summary.count_records(&records);
    records
}

/// The id of an imported record: `<kind>-L<line>[-<uuid prefix>][-<part>]`.
pub(crate) fn record_id(kind: &str, line: usize, uuid: Option<&str>, part: usize) -> String {
    let mut id = format!("{kind}-L{line}");
    if let Some(uuid) = uuid.filter(|u| !u.is_empty()) {
        id.push('-');
        id.extend(uuid.chars().take(8));
    }
    if part > 0 {
        id.push_str(&format!("-{part}"));
    }
    id
}

/// An RFC 3339 `timestamp` field's text; none when absent or not RFC 3339.
pub(crate) fn rfc3339(value: Option<&serde_json::Value>) -> Option<String> {
    value
        .and_then(serde_json::Value::as_str)
        .filter(|t| chrono::DateTime::parse_from_rfc3339(t).is_ok())
        .map(str::to_string)
}

/// Makes the shared fields of the records of one line (or message), numbering their parts.
pub(crate) fn parts(
    line: usize,
    uuid: Option<&str>,
    timestamp: Option<String>,
) -> impl FnMut(&str) -> Common + '_ {
    let mut part = 0usize;
    move |kind: &str| {
        part += 1;
        Common {
            id: Some(record_id(kind, line, uuid, part - 1)),
            timestamp: timestamp.clone(),
            priority: None,
        }
    }
}

/// The text of a content value: a string, or the `text` of each part of a list, joined by
/// newlines.
pub(crate) fn content_text(content: Option<&serde_json::Value>) -> String {
    match content {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The first line of `text`, trimmed, cut to `max` characters.
pub(crate) fn first_line(text: &str, max: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    match line.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod real_data_tests;

/// The (path, content) of `records`' files, in order: the views an import made.
#[cfg(test)]
pub(crate) fn files_of(records: &crate::records::Records) -> Vec<(&str, &str)> {
    records
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.content.as_str()))
        .collect()
}
