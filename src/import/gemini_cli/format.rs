//! The serde types of a Gemini CLI chat message (a saved chat's `messages[]`, or one line
//! of the JSON Lines chat): only the fields the importer reads; every other field is
//! ignored, and a field of an unexpected type reads as absent, as the importer always did.

use serde::Deserialize;
use serde_json::Value;

use crate::import::typed::{lenient, list_or_empty, text_or_none};

/// A saved chat (one JSON object): its messages, each read on its own so that one bad
/// message is counted and the rest imports.
#[derive(Debug, Deserialize)]
pub(super) struct Chat {
    pub(super) messages: Vec<Value>,
}

/// One message of a chat.
#[derive(Debug, Deserialize)]
pub(super) struct ChatMessage {
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) timestamp: Option<Value>,
    /// `user`, `gemini`, `info`, `error`, …
    #[serde(default, rename = "type", deserialize_with = "text_or_none")]
    pub(super) kind: Option<String>,
    /// A string, or a list of `{text}` parts.
    #[serde(default)]
    pub(super) content: Option<Value>,
    /// The model's thoughts (skipped and counted).
    #[serde(default)]
    pub(super) thoughts: Option<Value>,
    #[serde(default, rename = "toolCalls", deserialize_with = "list_or_empty")]
    pub(super) tool_calls: Vec<ToolCall>,
}

/// A tool call of a `gemini` message.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ToolCall {
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) name: Option<String>,
    /// The call's arguments (any JSON; null when absent).
    #[serde(default)]
    pub(super) args: Value,
    /// `success`, `error`, …
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) status: Option<String>,
    /// `[{functionResponse: {response: {output | error}}}]`; the first part is read.
    #[serde(default, deserialize_with = "list_or_empty")]
    pub(super) result: Vec<ResultPart>,
    #[serde(default, rename = "resultDisplay", deserialize_with = "lenient")]
    pub(super) result_display: Option<ResultDisplay>,
}

/// A part of a tool call's result.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ResultPart {
    #[serde(default, rename = "functionResponse", deserialize_with = "lenient")]
    pub(super) function_response: Option<FunctionResponse>,
}

/// The function response of a result part.
#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionResponse {
    #[serde(default, deserialize_with = "lenient")]
    pub(super) response: Option<Response>,
}

/// What the tool answered.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Response {
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) output: Option<String>,
    #[serde(default, deserialize_with = "text_or_none")]
    pub(super) error: Option<String>,
}

/// What the client showed of a result: a `replace` call's diff.
#[derive(Debug, Default, Deserialize)]
pub(super) struct ResultDisplay {
    #[serde(default, rename = "fileDiff", deserialize_with = "text_or_none")]
    pub(super) file_diff: Option<String>,
}

impl ToolCall {
    /// The response of the call's first result part.
    pub(super) fn response(&self) -> Option<&Response> {
        self.result
            .first()?
            .function_response
            .as_ref()?
            .response
            .as_ref()
    }

    /// The string argument `key`.
    pub(super) fn arg(&self, key: &str) -> Option<&str> {
        self.args.get(key).and_then(Value::as_str)
    }
}
