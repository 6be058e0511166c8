//! The payload a client sends a hook on stdin: Claude Code's (`hook_event_name`,
//! `session_id`, `transcript_path`, `cwd`, `prompt`, `source`, `trigger`, …) and Gemini CLI's
//! (the same names, plus `timestamp`). Unknown fields are ignored; a payload without an event
//! name or a working directory is refused.

use serde::Deserialize;

use super::HookError;

/// The events the hooks act on; any other is [`Event::Other`] (imported from, never answered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Event {
    /// Claude Code: the user submitted a prompt.
    UserPromptSubmit,
    /// Gemini CLI: the user submitted a prompt, before the agent plans.
    BeforeAgent,
    /// Both: a session started (`source`: startup, resume, clear, compact).
    SessionStart,
    /// Claude Code: the conversation is about to be compacted.
    PreCompact,
    /// Gemini CLI: the conversation is about to be compressed.
    PreCompress,
    /// Any other event (`Stop`, `PreToolUse`, …).
    Other(String),
}

impl Event {
    fn from_name(name: &str) -> Event {
        match name {
            "UserPromptSubmit" => Event::UserPromptSubmit,
            "BeforeAgent" => Event::BeforeAgent,
            "SessionStart" => Event::SessionStart,
            "PreCompact" => Event::PreCompact,
            "PreCompress" => Event::PreCompress,
            other => Event::Other(other.to_string()),
        }
    }

    /// The event's name as the client spells it.
    pub(crate) fn name(&self) -> &str {
        match self {
            Event::UserPromptSubmit => "UserPromptSubmit",
            Event::BeforeAgent => "BeforeAgent",
            Event::SessionStart => "SessionStart",
            Event::PreCompact => "PreCompact",
            Event::PreCompress => "PreCompress",
            Event::Other(name) => name,
        }
    }
}

#[derive(Deserialize)]
struct Raw {
    hook_event_name: Option<String>,
    session_id: Option<String>,
    transcript_path: Option<String>,
    cwd: Option<String>,
    prompt: Option<String>,
    source: Option<String>,
    trigger: Option<String>,
}

/// A parsed hook payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Payload {
    /// The event.
    pub(crate) event: Event,
    /// The client's session id (empty when absent).
    pub(crate) session_id: String,
    /// The session's transcript, when the client gave one.
    pub(crate) transcript_path: Option<String>,
    /// The workspace: the session's working directory.
    pub(crate) cwd: String,
    /// The prompt (`UserPromptSubmit`, `BeforeAgent`).
    pub(crate) prompt: Option<String>,
    /// Why the session started (`SessionStart`: `startup`, `resume`, `clear`, `compact`;
    /// Gemini CLI calls it `trigger` in some versions) or what triggered a compaction.
    pub(crate) source: Option<String>,
}

/// Parses the bytes a hook read on stdin.
pub(crate) fn parse_payload(bytes: &[u8]) -> Result<Payload, HookError> {
    let raw: Raw = serde_json::from_slice(bytes)
        .map_err(|e| HookError::Payload(format!("not a JSON object: {e}")))?;
    let event = raw
        .hook_event_name
        .ok_or_else(|| HookError::Payload("no hook_event_name".into()))?;
    let cwd = raw
        .cwd
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| HookError::Payload("no cwd".into()))?;
    Ok(Payload {
        event: Event::from_name(&event),
        session_id: raw.session_id.unwrap_or_default(),
        transcript_path: raw.transcript_path.filter(|p| !p.trim().is_empty()),
        cwd,
        prompt: raw.prompt.filter(|p| !p.trim().is_empty()),
        source: raw.source.or(raw.trigger),
    })
}
