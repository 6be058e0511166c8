//! What a client says it called, read from its own output.
//!
//! - Gemini CLI `--output-format json`: one JSON document; `stats.tools.byName` maps each
//!   tool name to `{count, success, fail, durationMs, decisions}`.
//! - Claude Code `--output-format stream-json`: JSON Lines events; every `assistant` event
//!   carries `message.content[]`, whose `tool_use` blocks name the tool called. A
//!   `system`/`init` event names the version (`claude_code_version`).

use std::collections::BTreeMap;

use serde_json::Value;

use crate::measure::MeasureError;

/// The client output formats understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientFormat {
    /// Gemini CLI `--output-format json`.
    GeminiJson,
    /// Claude Code `--output-format stream-json`.
    ClaudeStreamJson,
}

impl ClientFormat {
    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            ClientFormat::GeminiJson => "gemini-json",
            ClientFormat::ClaudeStreamJson => "claude-stream-json",
        }
    }
}

/// The calls a client reports, per tool name exactly as the client spelled it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCalls {
    /// The format read.
    pub format: ClientFormat,
    /// The client's version, when its output says.
    pub version: Option<String>,
    /// Calls per name.
    pub by_name: BTreeMap<String, u64>,
}

/// Guesses the format: one JSON object with `stats` is Gemini CLI's, anything else is
/// read as a stream of events.
pub fn detect(text: &str) -> ClientFormat {
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.get("stats").is_some() => ClientFormat::GeminiJson,
        _ => ClientFormat::ClaudeStreamJson,
    }
}

/// Reads a client's output in `format`.
pub fn parse(text: &str, format: ClientFormat) -> Result<ClientCalls, MeasureError> {
    match format {
        ClientFormat::GeminiJson => parse_gemini(text),
        ClientFormat::ClaudeStreamJson => parse_claude(text),
    }
}

fn bad(format: ClientFormat, why: String) -> MeasureError {
    MeasureError::ClientOutput(format!("{}: {why}", format.name()))
}

fn parse_gemini(text: &str) -> Result<ClientCalls, MeasureError> {
    let format = ClientFormat::GeminiJson;
    let doc: Value = serde_json::from_str(text).map_err(|e| bad(format, e.to_string()))?;
    let by_name = doc
        .pointer("/stats/tools/byName")
        .and_then(Value::as_object)
        .ok_or_else(|| bad(format, "no stats.tools.byName object".into()))?;
    let mut calls = BTreeMap::new();
    for (name, entry) in by_name {
        let count = entry.get("count").and_then(Value::as_u64).ok_or_else(|| {
            bad(
                format,
                format!("stats.tools.byName.{name}.count is missing"),
            )
        })?;
        calls.insert(name.clone(), count);
    }
    Ok(ClientCalls {
        format,
        version: None,
        by_name: calls,
    })
}

fn parse_claude(text: &str) -> Result<ClientCalls, MeasureError> {
    let format = ClientFormat::ClaudeStreamJson;
    let mut calls = BTreeMap::new();
    let mut version = None;
    let mut events = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let event: Value =
            serde_json::from_str(line).map_err(|e| bad(format, format!("line {}: {e}", i + 1)))?;
        events += 1;
        match event.get("type").and_then(Value::as_str) {
            Some("system") => {
                if let Some(v) = event.get("claude_code_version").and_then(Value::as_str) {
                    version = Some(v.to_owned());
                }
            }
            Some("assistant") => {
                let blocks = event.pointer("/message/content").and_then(Value::as_array);
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) == Some("tool_use") {
                        if let Some(name) = block.get("name").and_then(Value::as_str) {
                            *calls.entry(name.to_owned()).or_default() += 1;
                        }
                    }
                }
            }
            _ => {}
        }
    }
    if events == 0 {
        return Err(bad(format, "no events".into()));
    }
    Ok(ClientCalls {
        format,
        version,
        by_name: calls,
    })
}
