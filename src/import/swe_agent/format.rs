//! The serde types of a mini-swe-agent trajectory (`trajectory_format` `mini-swe-agent-1.1`):
//! only the fields the importer reads; every other field is ignored.

use serde::Deserialize;

use crate::import::typed::text_or_empty;

/// A `*.traj.json` file.
#[derive(Debug, Deserialize)]
pub(super) struct Trajectory {
    /// The conversation, in order.
    pub(super) messages: Vec<TrajMessage>,
}

/// One message of the conversation, by its `role`.
#[derive(Debug, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub(super) enum TrajMessage {
    /// The system prompt.
    System(Plain),
    /// The task (the first) or a later user message.
    User(Plain),
    /// The agent's turn: a thought and the shell commands it runs.
    Assistant(AssistantTurn),
    /// The observation answering one command.
    Tool(ToolObservation),
    /// The end of the run; carries the final patch.
    Exit(ExitMessage),
}

/// A message that is only text.
#[derive(Debug, Deserialize)]
pub(super) struct Plain {
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) content: String,
    #[serde(default)]
    pub(super) extra: Extra,
}

/// An assistant turn.
#[derive(Debug, Deserialize)]
pub(super) struct AssistantTurn {
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) content: String,
    #[serde(default)]
    pub(super) tool_calls: Vec<ToolCall>,
    #[serde(default)]
    pub(super) extra: Extra,
}

/// A tool observation.
#[derive(Debug, Deserialize)]
pub(super) struct ToolObservation {
    #[serde(default, deserialize_with = "text_or_empty")]
    pub(super) content: String,
    #[serde(default)]
    pub(super) tool_call_id: Option<String>,
    #[serde(default)]
    pub(super) extra: Extra,
}

/// The last message.
#[derive(Debug, Deserialize)]
pub(super) struct ExitMessage {
    #[serde(default)]
    pub(super) content: Option<String>,
    #[serde(default)]
    pub(super) extra: Extra,
}

/// The `extra` object: when, what the agent ran, what it submitted.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Extra {
    /// Unix seconds.
    #[serde(default)]
    pub(super) timestamp: Option<f64>,
    /// The commands of an assistant turn, as the agent parsed them.
    #[serde(default)]
    pub(super) actions: Option<Vec<Action>>,
    /// The final patch (exit message).
    #[serde(default)]
    pub(super) submission: Option<String>,
}

/// One command of an assistant turn (`extra.actions[]`).
#[derive(Debug, Deserialize)]
pub(super) struct Action {
    #[serde(default)]
    pub(super) command: Option<String>,
    #[serde(default)]
    pub(super) tool_call_id: Option<String>,
}

/// One tool call of an assistant turn (`tool_calls[]`); its arguments are a JSON text
/// holding `command`.
#[derive(Debug, Deserialize)]
pub(super) struct ToolCall {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) function: Option<Function>,
}

/// A tool call's function.
#[derive(Debug, Deserialize)]
pub(super) struct Function {
    #[serde(default)]
    pub(super) arguments: Option<String>,
}

/// The arguments of a bash tool call.
#[derive(Debug, Deserialize)]
pub(super) struct BashArguments {
    pub(super) command: String,
}

impl TrajMessage {
    /// The message's `extra` object.
    pub(super) fn extra(&self) -> &Extra {
        match self {
            TrajMessage::System(m) | TrajMessage::User(m) => &m.extra,
            TrajMessage::Assistant(m) => &m.extra,
            TrajMessage::Tool(m) => &m.extra,
            TrajMessage::Exit(m) => &m.extra,
        }
    }
}
