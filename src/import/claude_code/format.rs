//! The serde types of a Claude Code transcript entry: only the fields the importer reads;
//! every other field is ignored (and counted by the importer), and a field of an
//! unexpected type reads as absent, as the importer always did.

use serde::Deserialize;
use serde_json::Value;

use crate::import::typed::{count, flag, lenient, text_or_empty, text_or_none};

/// A `user` or `assistant` entry.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Turn {
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) uuid: Option<String>,
    #[serde(default)]
    pub(super) timestamp: Option<Value>,
    /// A subagent's turn.
    #[serde(default, deserialize_with = "flag")]
    pub(super) is_sidechain: bool,
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) cwd: Option<String>,
    /// Text the client added for the model, not said by anyone.
    #[serde(default, deserialize_with = "flag")]
    pub(super) is_meta: bool,
    /// The summary the client wrote when it compacted the conversation.
    #[serde(default, deserialize_with = "flag")]
    pub(super) is_compact_summary: bool,
    /// `acompact-…` in a compaction agent's file.
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) agent_id: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub(super) message: Option<TurnMessage>,
    /// What the client recorded of a tool's result beside the text the model saw.
    #[serde(default, deserialize_with = "lenient")]
    pub(super) tool_use_result: Option<ToolUseResult>,
}

/// The API message of a turn.
#[derive(Debug, Deserialize)]
pub(super) struct TurnMessage {
    #[serde(default, deserialize_with = "lenient")]
    pub(super) content: Option<Content>,
}

/// A message's content: a string (a prompt), or content blocks.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(super) enum Content {
    Text(String),
    Blocks(Vec<Value>),
}

/// A content block, by its `type`.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum Block {
    Text {
        #[serde(default, deserialize_with = "text_or_empty")]
        text: String,
    },
    ToolUse {
        #[serde(default, deserialize_with = "text_or_empty")]
        id: String,
        #[serde(default, deserialize_with = "text_or_none")]
        name: Option<String>,
        #[serde(default)]
        input: Value,
    },
    ToolResult {
        #[serde(default, deserialize_with = "text_or_empty")]
        tool_use_id: String,
        /// A string, or a list of `{text}` parts.
        #[serde(default)]
        content: Option<Value>,
        #[serde(default, deserialize_with = "flag")]
        is_error: bool,
    },
    Thinking {},
    RedactedThinking {},
    /// Images, documents and kinds newer than this importer.
    #[serde(other)]
    Other,
}

/// A turn's `toolUseResult`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ToolUseResult {
    /// `Bash`: what the command printed.
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) stdout: Option<String>,
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) stderr: Option<String>,
    /// `Bash`: the user stopped the command.
    #[serde(default, deserialize_with = "flag")]
    pub(super) interrupted: bool,
    /// `Read`: the lines shown.
    #[serde(default, deserialize_with = "lenient")]
    pub(super) file: Option<FileShown>,
    /// `Edit`/`MultiEdit`: the hunks applied.
    #[serde(default, deserialize_with = "lenient")]
    pub(super) structured_patch: Option<Vec<Hunk>>,
    /// `TaskCreate`: the task made (`{"id", "subject"}`).
    #[serde(default)]
    pub(super) task: Option<Value>,
    /// `TaskList`: every task (`[{"id", "subject", "status"}, …]`).
    #[serde(default)]
    pub(super) tasks: Option<Value>,
}

/// The lines a `Read` showed.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct FileShown {
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) content: Option<String>,
    #[serde(default, deserialize_with = "count")]
    pub(super) start_line: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(super) num_lines: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(super) total_lines: Option<u64>,
}

/// One hunk of an applied edit.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Hunk {
    #[serde(default, deserialize_with = "count")]
    pub(super) old_start: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(super) old_lines: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(super) new_start: Option<u64>,
    #[serde(default, deserialize_with = "count")]
    pub(super) new_lines: Option<u64>,
    /// The hunk's lines with their `-`, `+` or ` ` prefix.
    #[serde(default)]
    pub(super) lines: Vec<Value>,
}

/// A replacement of an `Edit` call (or one of a `MultiEdit`'s `edits`).
#[derive(Debug, Default, Deserialize)]
pub(super) struct Replacement {
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) old_string: String,
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) new_string: String,
}
