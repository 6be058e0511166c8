//! `ctxopt verify`: re-sends a recorded session's client requests to a live server and
//! compares each answer with the recorded one, to tell whether the server drifted.
//!
//! The client's messages the server received (`c2s`) are sent again in recorded order,
//! under their recorded ids, each request waiting for its answer (when the recording has
//! one). Requests the live server makes meanwhile are answered with the recorded client's
//! answer to the most similar recorded server request. Each answer is compared with the
//! server's recorded one (as the server sent it: before any rewriting by the proxy), with
//! the volatile fields and the id left out:
//! - `tools/list` answers make up the catalog, compared tool by tool ([`super::catalog`]);
//! - an answer that was a result and is now an error (or the other way round, or another
//!   error code) is an `error` change; one whose shape differs (members, value types,
//!   content block types) a `shape` change; both are drift;
//! - one with the same shape but other values a `content` change, drift only when asked
//!   (`--content`: live data such as a clock or a file differs by nature);
//! - a changed negotiated protocol revision is drift; the server's name and version are
//!   reported.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::catalog::{self, CatalogDiff};
use super::json_diff::{differences, matches};
use super::recording::{Recorded, Recording, Side};
use super::volatile::Volatile;
use super::EvidenceError;
use crate::framelog::json_scan;
use crate::framelog::{Direction, FrameKind};
use crate::measure::live_server::LiveServer;
use crate::protocol;
use crate::tokenizer::Tokenizer;

/// How to verify.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    /// The fields left out of every comparison.
    pub volatile: Volatile,
    /// How long to wait for each answer.
    pub timeout: Duration,
    /// Count changed values (same shape) as drift.
    pub content_is_drift: bool,
    /// The tokenizer the token figures use.
    pub tokenizer: Tokenizer,
}

/// How an answer changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// A result became an error, an error a result, or the error code changed.
    Error,
    /// The members, value types or content block types changed.
    Shape,
    /// Same shape, other values.
    Content,
}

/// One answer that changed.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The recorded request's `seq`.
    pub seq: u64,
    /// Its method.
    pub method: String,
    /// The tool, for `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// How it changed.
    pub kind: ChangeKind,
    /// Whether it counts as drift.
    pub drift: bool,
    /// Where it changed (the first 10 differences).
    pub differences: Vec<String>,
}

/// Tokens of the answers then and now, per method or tool.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Tokens {
    /// The recorded answers.
    pub then: u64,
    /// The live answers.
    pub now: u64,
}

/// Then and now of one value.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ThenNow {
    /// Recorded.
    pub then: Option<Value>,
    /// Live.
    pub now: Option<Value>,
}

/// What `ctxopt verify` found (a public interface: `--format json`).
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    /// The server's identity (`serverInfo`) then and now.
    pub server: ThenNow,
    /// The negotiated protocol revision then and now.
    pub protocol: ThenNow,
    /// The tokenizer of every token figure.
    pub tokenizer: String,
    /// Requests sent to the live server.
    pub requests_sent: u64,
    /// Answers compared with recorded ones.
    pub answers_compared: u64,
    /// The tool catalog then and now.
    pub catalog: CatalogDiff,
    /// Answers that changed, in recorded order.
    pub changes: Vec<Change>,
    /// Tokens of the answers then and now, per method (`tools/call` per tool: `tools/call
    /// NAME`).
    pub tokens: BTreeMap<String, Tokens>,
    /// Whether anything drifted.
    pub drift: bool,
    /// Wall-clock milliseconds of the whole run (server start to stop).
    pub elapsed_ms: u64,
}

/// Verifies `recording` against the server that `argv` starts.
pub fn verify(
    recording: &Recording,
    argv: &[String],
    options: &VerifyOptions,
) -> Result<VerifyReport, EvidenceError> {
    let started = Instant::now();
    let mut server = LiveServer::start(argv)?;
    let result = Session::new(recording, &mut server, options).run();
    server.stop();
    let mut report = result?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

struct Session<'a> {
    recording: &'a Recording,
    server: &'a mut LiveServer,
    options: &'a VerifyOptions,
    /// Recorded server requests whose recorded client answer was used.
    used: Vec<bool>,
    tools_then: Vec<Value>,
    tools_now: Vec<Value>,
    report: VerifyReport,
}

impl<'a> Session<'a> {
    fn new(
        recording: &'a Recording,
        server: &'a mut LiveServer,
        options: &'a VerifyOptions,
    ) -> Self {
        Session {
            used: vec![false; recording.messages.len()],
            recording,
            server,
            options,
            tools_then: Vec::new(),
            tools_now: Vec::new(),
            report: VerifyReport {
                server: ThenNow::default(),
                protocol: ThenNow::default(),
                tokenizer: options.tokenizer.name().to_owned(),
                requests_sent: 0,
                answers_compared: 0,
                catalog: CatalogDiff::default(),
                changes: Vec::new(),
                tokens: BTreeMap::new(),
                drift: false,
                elapsed_ms: 0,
            },
        }
    }

    fn run(mut self) -> Result<VerifyReport, EvidenceError> {
        let messages = &self.recording.messages;
        for (i, m) in messages.iter().enumerate() {
            if m.dir != Direction::C2s || m.value.is_none() {
                continue;
            }
            match m.kind {
                FrameKind::Request => {
                    self.server.send(&m.bytes)?;
                    self.report.requests_sent += 1;
                    let answer = messages
                        .iter()
                        .position(|a| a.dir == Direction::S2c && a.answers == Some(i));
                    if let Some(a) = answer {
                        let live = self.await_answer(m)?;
                        self.compare(m, &messages[a], &live);
                    }
                }
                FrameKind::Notification => self.server.send(&m.bytes)?,
                _ => {}
            }
        }
        let catalog = catalog::diff(&self.tools_then, &self.tools_now, self.options.tokenizer);
        let protocol_changed = self.report.protocol.then != self.report.protocol.now;
        self.report.drift =
            catalog.changed() || protocol_changed || self.report.changes.iter().any(|c| c.drift);
        self.report.catalog = catalog;
        Ok(self.report)
    }

    /// Reads the live server until the answer to `request` comes, answering its requests.
    fn await_answer(&mut self, request: &Recorded) -> Result<Value, EvidenceError> {
        let id: Value = request
            .value
            .as_ref()
            .and_then(|v| v.get("id"))
            .cloned()
            .unwrap_or(Value::Null);
        let deadline = Instant::now() + self.options.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(line) = self.server.recv(left)? else {
                return Err(EvidenceError::Io(format!(
                    "no answer to the {} of line {} (seq {}) within {:?}",
                    request.method.as_deref().unwrap_or("request"),
                    request.line,
                    request.seq,
                    self.options.timeout
                )));
            };
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if message.get("method").is_some() {
                if let Some(their_id) = message.get("id") {
                    let reply = self.answer_server_request(&message, their_id);
                    self.server.send(reply.as_bytes())?;
                }
                continue;
            }
            if message.get("id") == Some(&id) {
                return Ok(message);
            }
        }
    }

    /// The recorded client's answer to the recorded server request most like `message`,
    /// under the live request's id.
    fn answer_server_request(&mut self, message: &Value, id: &Value) -> String {
        let method = message.get("method").and_then(Value::as_str);
        let masked = self
            .options
            .volatile
            .mask(&json!({"params": message.get("params")}));
        let messages = &self.recording.messages;
        let candidates: Vec<usize> = (0..messages.len())
            .filter(|&s| {
                let m = &messages[s];
                m.side == Side::Server
                    && m.kind == FrameKind::Request
                    && m.method.as_deref() == method
                    && !self.used[s]
            })
            .collect();
        let same = candidates.iter().copied().find(|&s| {
            let recorded = self
                .options
                .volatile
                .mask(&json!({"params": messages[s].value.as_ref().and_then(|v| v.get("params"))}));
            matches(&recorded, &masked)
        });
        let answer = same
            .or(candidates.first().copied())
            .and_then(|s| {
                self.used[s] = true;
                messages
                    .iter()
                    .find(|c| c.side == Side::Client && c.answers == Some(s))
            })
            .and_then(Recorded::text);
        match answer {
            Some(text) => {
                let span = json_scan::member(text, json_scan::root(text), "id");
                match span {
                    Some(span) => format!("{}{}{}", &text[..span.start], id, &text[span.end..]),
                    None => text.to_owned(),
                }
            }
            None => protocol::error_frame(
                id,
                protocol::METHOD_NOT_FOUND,
                "not in the recorded session (ctxopt verify)",
                None,
            ),
        }
    }

    fn compare(&mut self, request: &Recorded, recorded: &Recorded, live: &Value) {
        let Some(then) = recorded.value.as_ref() else {
            return;
        };
        self.report.answers_compared += 1;
        let method = request.method.clone().unwrap_or_default();
        let tool = (method == "tools/call")
            .then(|| {
                request
                    .value
                    .as_ref()
                    .and_then(|v| v.pointer("/params/name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .flatten();
        let key = match &tool {
            Some(t) => format!("tools/call {t}"),
            None => method.clone(),
        };
        let count = |v: &Value| self.options.tokenizer.count(&v.to_string()) as u64;
        let part = |v: &Value| {
            v.get("result")
                .or_else(|| v.get("error"))
                .cloned()
                .unwrap_or(Value::Null)
        };
        let tokens = self.report.tokens.entry(key).or_default();
        tokens.then += count(&part(then));
        tokens.now += count(&part(live));

        if method == "initialize" || method == "server/discover" {
            let info = |v: &Value| v.get("result").and_then(protocol::server_info).cloned();
            self.report.server = ThenNow {
                then: info(then),
                now: info(live),
            };
            let revision = |v: &Value| {
                v.pointer("/result/protocolVersion").cloned().or_else(|| {
                    request
                        .value
                        .as_ref()
                        .and_then(|r| {
                            r.pointer(&format!(
                                "/params/_meta/{}",
                                protocol::PROTOCOL_VERSION_KEY.replace('/', "~1")
                            ))
                        })
                        .cloned()
                })
            };
            self.report.protocol = ThenNow {
                then: revision(then),
                now: revision(live),
            };
        }
        if method == "tools/list" {
            let tools = |v: &Value| {
                v.pointer("/result/tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
            };
            merge_tools(&mut self.tools_then, tools(then));
            merge_tools(&mut self.tools_now, tools(live));
            return;
        }
        let strip = |v: &Value| {
            self.options
                .volatile
                .mask(&json!({"result": v.get("result"), "error": v.get("error")}))
        };
        let (then, now) = (strip(then), strip(live));
        let error_code = |v: &Value| v.pointer("/error/code").cloned();
        let kind = if then["error"].is_null() != now["error"].is_null()
            || error_code(&then) != error_code(&now)
        {
            ChangeKind::Error
        } else if shape(&then) != shape(&now) {
            ChangeKind::Shape
        } else if !matches(&then, &now) {
            ChangeKind::Content
        } else {
            return;
        };
        let drift = kind != ChangeKind::Content || self.options.content_is_drift;
        self.report.changes.push(Change {
            seq: request.seq,
            method,
            tool,
            kind,
            drift,
            differences: differences(&then, &now, 10)
                .iter()
                .map(ToString::to_string)
                .collect(),
        });
    }
}

/// Adds `page` to `tools`, a later definition of a name replacing the earlier one.
fn merge_tools(tools: &mut Vec<Value>, page: Vec<Value>) {
    for tool in page {
        let name = tool.get("name").cloned();
        match tools.iter_mut().find(|t| t.get("name") == name.as_ref()) {
            Some(slot) => *slot = tool,
            None => tools.push(tool),
        }
    }
}

/// The shape of a value: its members and value types, an array as the set of its
/// elements' shapes, and the values of `type` members (content block kinds) kept.
fn shape(value: &Value) -> Value {
    match value {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("boolean"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        Value::Array(items) => {
            let mut shapes: Vec<Value> = items.iter().map(shape).collect();
            shapes.sort_by_key(ToString::to_string);
            shapes.dedup();
            Value::Array(shapes)
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let s = match (k.as_str(), v) {
                        ("type", Value::String(_)) => v.clone(),
                        _ => shape(v),
                    };
                    (k.clone(), s)
                })
                .collect(),
        ),
    }
}

/// The report as text.
pub fn render_table(report: &VerifyReport) -> String {
    let mut out = String::new();
    let show = |v: &Option<Value>| {
        v.as_ref().map_or("-".to_owned(), |v| match v {
            Value::Object(_) => format!(
                "{} {}",
                v.get("name").and_then(Value::as_str).unwrap_or("?"),
                v.get("version").and_then(Value::as_str).unwrap_or("?")
            ),
            other => other
                .as_str()
                .map_or_else(|| other.to_string(), str::to_owned),
        })
    };
    out.push_str(&format!(
        "server   then {}, now {}\nprotocol then {}, now {}\n",
        show(&report.server.then),
        show(&report.server.now),
        show(&report.protocol.then),
        show(&report.protocol.now)
    ));
    out.push_str(&format!(
        "{} requests re-sent, {} answers compared ({} ms)\n",
        report.requests_sent, report.answers_compared, report.elapsed_ms
    ));
    if report.catalog.changed() {
        for line in report.catalog.lines() {
            out.push_str(&line);
            out.push('\n');
        }
    } else {
        out.push_str(&format!(
            "tool catalog unchanged: digest {}, {} tokens\n",
            &report.catalog.digest_now[..12.min(report.catalog.digest_now.len())],
            report.catalog.tokens_now
        ));
    }
    for c in &report.changes {
        out.push_str(&format!(
            "{} seq {} {}{}: {:?} change{}\n",
            if c.drift { "DRIFT" } else { "note " },
            c.seq,
            c.method,
            c.tool.as_ref().map_or(String::new(), |t| format!(" {t}")),
            c.kind,
            if c.drift {
                ""
            } else {
                " (values only; --content counts it as drift)"
            }
        ));
        for d in &c.differences {
            out.push_str(&format!("      {d}\n"));
        }
    }
    out.push_str(&format!(
        "answer tokens ({}): then / now\n",
        report.tokenizer
    ));
    for (key, t) in &report.tokens {
        out.push_str(&format!("  {key:<40} {:>8} {:>8}\n", t.then, t.now));
    }
    out.push_str(if report.drift {
        "drift: yes\n"
    } else {
        "drift: no\n"
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_keeps_members_types_and_block_kinds_not_values() {
        let a = json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
        let b = json!({"content": [{"type": "text", "text": "c"}]});
        let c = json!({"content": [{"type": "image", "data": "c"}]});
        let d = json!({"content": [{"type": "text", "text": 1}]});
        assert_eq!(shape(&a), shape(&b));
        assert_ne!(shape(&a), shape(&c));
        assert_ne!(shape(&a), shape(&d));
    }
}
