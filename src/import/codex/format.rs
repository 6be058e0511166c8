//! The serde types of a Codex CLI rollout line, `{timestamp, type, payload}`: only the
//! fields the importer reads; every other field is ignored.

use serde::Deserialize;
use serde_json::Value;

use crate::import::typed::text_or_empty;

/// One line of a rollout.
#[derive(Debug, Deserialize)]
pub(super) struct Line {
    /// `session_meta`, `turn_context`, `response_item`, `event_msg`, `compacted`, …
    #[serde(rename = "type")]
    pub(super) kind: String,
    /// What the line carries; its shape depends on `kind`.
    pub(super) payload: Value,
    /// When it was written (RFC 3339).
    #[serde(default)]
    pub(super) timestamp: Option<Value>,
}

/// The payload of a `compacted` line.
#[derive(Debug, Deserialize)]
pub(super) struct Compacted {
    /// The summary the client kept in place of the conversation.
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) message: String,
}

/// The payload of a `response_item` line the importer reads, by its `type` (the others are
/// skipped by name before this is read).
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(super) enum ResponseItem {
    /// A message of a role, in parts.
    Message {
        #[serde(default, deserialize_with = "text_or_empty")]
        role: String,
        #[serde(default)]
        content: Vec<Value>,
    },
    /// A call; `arguments` is a JSON text.
    FunctionCall(Call),
    /// A call whose input is given as is (`apply_patch`).
    CustomToolCall(Call),
    /// The output of a call, by `call_id`.
    FunctionCallOutput(CallOutput),
    /// The output of a custom tool call.
    CustomToolCallOutput(CallOutput),
}

/// A call of a tool.
#[derive(Debug, Deserialize)]
pub(super) struct Call {
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) call_id: String,
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) name: String,
    /// `function_call`: the arguments as a JSON text.
    #[serde(default)]
    pub(super) arguments: Option<Value>,
    /// `custom_tool_call`: the input as given.
    #[serde(default)]
    pub(super) input: Option<Value>,
}

/// The output of a call.
#[derive(Debug, Deserialize)]
pub(super) struct CallOutput {
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) call_id: String,
    /// A string (often JSON text) or any JSON value.
    #[serde(default)]
    pub(super) output: Option<Value>,
}

/// The `response_item` payload types read as [`ResponseItem`]s.
pub(super) const READ_ITEMS: [&str; 5] = [
    "message",
    "function_call",
    "custom_tool_call",
    "function_call_output",
    "custom_tool_call_output",
];

impl Call {
    /// The call's arguments: `arguments` parsed (kept as a string when it is not JSON), else
    /// `input`, else null.
    pub(super) fn args(&self) -> Value {
        match self.arguments.as_ref().and_then(Value::as_str) {
            Some(a) => serde_json::from_str(a).unwrap_or_else(|_| Value::String(a.into())),
            None => self.input.clone().unwrap_or(Value::Null),
        }
    }
}
