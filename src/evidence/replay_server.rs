//! `ctxopt replay`: a stdio MCP server that answers from a recorded session.
//!
//! Each server message of the recording is *anchored* to a client message: an answer to its
//! own request (or, when the server asked the client something while working on it, to the
//! last of the client's answers it waited for); a notification, a server request or anything
//! else to the last client message before it (or to the start). When a client message
//! arrives and matches a recorded one, the server messages anchored to it are sent, in
//! recorded order: answers under the new request's id, progress notifications under its
//! progress token. Requests match by method and params with the volatile fields left out
//! ([`Volatile`]); the first recorded request not yet used wins; a request asked more often
//! than recorded gets the last recorded answer again. An unmatched request gets a JSON-RPC
//! error naming the closest recorded request and how it differs. `--strict` also requires
//! the client's messages in recorded order, and none left out.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::io::{BufRead, Write};

use serde_json::{json, Value};

use super::json_diff::{differences, has_placeholder, matches, sorted};
use super::recording::{Recorded, Recording, Side};
use super::volatile::Volatile;
use super::EvidenceError;
use crate::framelog::json_scan;
use crate::framelog::FrameKind;
use crate::protocol;

/// The JSON-RPC error code of a request no recorded request matches (server-defined range).
pub const NO_MATCH: i64 = -32001;
/// The JSON-RPC error code of a request out of recorded order under `--strict`.
pub const OUT_OF_ORDER: i64 = -32002;

/// How to replay.
#[derive(Debug, Clone, Default)]
pub struct ReplayOptions {
    /// Fail on order differences and on recorded client messages never sent.
    pub strict: bool,
    /// The fields left out when requests are compared.
    pub volatile: Volatile,
}

/// What a replay did, printed when the client leaves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Requests answered from the recording (first use).
    pub answered: u64,
    /// Requests answered again with a recorded answer already used.
    pub answered_again: u64,
    /// Requests no recorded request matched.
    pub unmatched: u64,
    /// Client messages out of recorded order (`--strict`).
    pub out_of_order: u64,
    /// Client notifications and answers the recording does not have.
    pub unexpected: u64,
    /// Recorded client messages the client never sent.
    pub never_sent: u64,
    /// Whether `--strict` was on.
    pub strict: bool,
}

impl Summary {
    /// Whether the replay differed from the recording in a way `--strict` fails on.
    pub fn failed(&self) -> bool {
        self.strict && self.unmatched + self.out_of_order + self.unexpected + self.never_sent > 0
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} requests answered from the recording, {} answered again, {} unmatched; {} unexpected client messages; {} recorded client messages never sent",
            self.answered, self.answered_again, self.unmatched, self.unexpected, self.never_sent
        )?;
        if self.strict {
            write!(f, "; {} out of order", self.out_of_order)?;
        }
        Ok(())
    }
}

/// How a recorded server message is sent.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// An answer to the recorded request at this index: sent under the new id.
    Answer(usize),
    /// A progress notification for the recorded request at this index: sent under its new token.
    Progress(usize),
    /// A request of the server's: the client's answer comes back under its recorded id.
    Request,
    /// Anything else: sent as recorded.
    Verbatim,
}

/// A replaying server over one recording.
pub struct ReplayServer {
    recording: Recording,
    options: ReplayOptions,
    /// Per message: the server messages anchored to it (client messages only).
    then: Vec<Vec<usize>>,
    /// Server messages sent before any client message.
    start: Vec<usize>,
    roles: Vec<Role>,
    /// Client requests and notifications by (method, canonical masked message).
    exact: HashMap<(String, String), Vec<usize>>,
    /// Client requests and notifications holding redaction placeholders, compared one by one.
    redacted: Vec<usize>,
    /// The recorded answer of each recorded client request.
    answer_of: HashMap<usize, usize>,
    /// The recorded client answer to each recorded server request.
    client_answer_of: HashMap<usize, usize>,
    /// Client messages in recorded order (parseable ones).
    client_order: Vec<usize>,
    consumed: Vec<bool>,
    next_expected: usize,
    new_id: HashMap<usize, String>,
    new_token: HashMap<usize, String>,
    /// Server requests sent and not answered yet, by id text.
    outstanding: HashMap<String, VecDeque<usize>>,
    summary: Summary,
}

/// One message to send, and whether it answers an incoming request (batched answers go
/// back in one array).
struct Out {
    bytes: Vec<u8>,
    answer: bool,
}

impl ReplayServer {
    /// Prepares `recording` for replay.
    pub fn new(recording: Recording, options: ReplayOptions) -> ReplayServer {
        let n = recording.messages.len();
        let messages = &recording.messages;
        let mut then = vec![Vec::new(); n];
        let mut start = Vec::new();
        let mut roles = vec![Role::Verbatim; n];
        let mut answer_of = HashMap::new();
        let mut client_answer_of = HashMap::new();
        let mut exact: HashMap<(String, String), Vec<usize>> = HashMap::new();
        let mut redacted = Vec::new();
        let mut client_order = Vec::new();
        let mut last_client: Option<usize> = None;
        let mut tokens: HashMap<String, usize> = HashMap::new();
        for (i, m) in messages.iter().enumerate() {
            match m.side {
                Side::Client => {
                    if m.value.is_none() {
                        continue;
                    }
                    client_order.push(i);
                    last_client = Some(i);
                    match m.kind {
                        FrameKind::Request | FrameKind::Notification => {
                            let value = m.value.as_ref().expect("checked");
                            if let Some(token) = value.pointer("/params/_meta/progressToken") {
                                tokens.insert(token.to_string(), i);
                            }
                            let masked = options.volatile.mask(&comparable(value));
                            if has_placeholder(&masked) {
                                redacted.push(i);
                            } else {
                                exact
                                    .entry(key(m.method.as_deref(), &masked))
                                    .or_default()
                                    .push(i);
                            }
                        }
                        FrameKind::Response | FrameKind::Error => {
                            if let Some(r) = m.answers {
                                client_answer_of.insert(r, i);
                            }
                        }
                        _ => {}
                    }
                }
                Side::Server => {
                    let mut anchor = last_client;
                    match (m.kind, m.answers) {
                        (FrameKind::Response | FrameKind::Error, Some(r)) => {
                            roles[i] = Role::Answer(r);
                            answer_of.insert(r, i);
                            // The request itself, or the last answer of the client's to a
                            // server request made while the server worked on it.
                            anchor = messages[r + 1..i]
                                .iter()
                                .enumerate()
                                .filter(|(_, cm)| {
                                    cm.side == Side::Client
                                        && matches!(cm.kind, FrameKind::Response | FrameKind::Error)
                                        && cm.answers.is_some_and(|s| s > r)
                                })
                                .map(|(k, _)| r + 1 + k)
                                .next_back()
                                .or(Some(r));
                        }
                        (FrameKind::Request, _) => roles[i] = Role::Request,
                        (FrameKind::Notification, _) => {
                            if let Some(token) = m
                                .value
                                .as_ref()
                                .and_then(|v| v.pointer("/params/progressToken"))
                            {
                                if let Some(&r) = tokens.get(&token.to_string()) {
                                    roles[i] = Role::Progress(r);
                                }
                            }
                        }
                        _ => {}
                    }
                    match anchor {
                        Some(a) => then[a].push(i),
                        None => start.push(i),
                    }
                }
            }
        }
        ReplayServer {
            consumed: vec![false; n],
            recording,
            options,
            then,
            start,
            roles,
            exact,
            redacted,
            answer_of,
            client_answer_of,
            client_order,
            next_expected: 0,
            new_id: HashMap::new(),
            new_token: HashMap::new(),
            outstanding: HashMap::new(),
            summary: Summary::default(),
        }
    }

    /// Serves `input` (one JSON-RPC message or batch per line) until it ends, writing to
    /// `output`; returns what happened.
    pub fn serve(
        mut self,
        input: impl BufRead,
        mut output: impl Write,
    ) -> Result<Summary, EvidenceError> {
        let io = |e: std::io::Error| EvidenceError::Io(format!("stdio: {e}"));
        let start = std::mem::take(&mut self.start);
        let mut first = Vec::new();
        for i in start {
            first.push(self.emit(i));
        }
        write_all(&mut output, first).map_err(io)?;
        for line in input.split(b'\n') {
            let line = line.map_err(io)?;
            let text = String::from_utf8_lossy(&line);
            let text = text.trim_end_matches('\r');
            if text.trim().is_empty() {
                continue;
            }
            let outs = self.handle(text);
            write_all(&mut output, outs).map_err(io)?;
        }
        self.summary.never_sent = self
            .client_order
            .iter()
            .filter(|&&i| !self.consumed[i])
            .count() as u64;
        self.summary.strict = self.options.strict;
        Ok(self.summary)
    }

    /// Handles one incoming line and returns what to send.
    fn handle(&mut self, text: &str) -> Vec<Out> {
        let Ok(value) = serde_json::from_str::<Value>(text) else {
            return vec![out_error(
                &Value::Null,
                protocol::PARSE_ERROR,
                "Parse error",
                None,
            )];
        };
        let Value::Array(elements) = &value else {
            return self.message(text, &value);
        };
        let spans = json_scan::elements(text, json_scan::root(text));
        let mut sent = Vec::new();
        let mut answers = Vec::new();
        for (element, span) in elements.iter().zip(spans) {
            for out in self.message(&text[span], element) {
                if out.answer {
                    answers.push(out.bytes);
                } else {
                    sent.push(out);
                }
            }
        }
        if !answers.is_empty() {
            let mut batch = b"[".to_vec();
            batch.extend(answers.join(&b","[..]));
            batch.push(b']');
            sent.push(Out {
                bytes: batch,
                answer: false,
            });
        }
        sent
    }

    /// Handles one incoming message (`text` is its JSON text).
    fn message(&mut self, text: &str, value: &Value) -> Vec<Out> {
        let method = value.get("method").and_then(Value::as_str);
        let id_text =
            json_scan::member(text, json_scan::root(text), "id").map(|span| text[span].to_owned());
        match (method, id_text) {
            (Some(method), id) => {
                let is_request = id.is_some();
                let masked = self.options.volatile.mask(&comparable(value));
                let candidates = self.candidates(method, &masked, is_request);
                let expected = self.expected();
                let strict = self.options.strict;
                let fresh = candidates.iter().copied().find(|&c| !self.consumed[c]);
                let chosen = match (strict, fresh) {
                    (true, Some(c)) if Some(c) != expected => {
                        self.summary.out_of_order += 1;
                        let why = format!(
                            "ctxopt replay --strict: {method} is recorded at seq {} but the recording expects {} next",
                            self.recording.messages[c].seq,
                            self.describe(expected)
                        );
                        eprintln!("ctxopt replay: {why}");
                        return id.map_or_else(Vec::new, |id| {
                            vec![out_error(&raw_value(&id), OUT_OF_ORDER, &why, None)]
                        });
                    }
                    (_, Some(c)) => c,
                    (false, None) if is_request && !candidates.is_empty() => {
                        let again = *candidates.last().expect("non-empty");
                        self.summary.answered_again += 1;
                        return self.answer_again(again, id.as_deref().expect("a request"));
                    }
                    _ => {
                        return match id {
                            Some(id) => {
                                self.summary.unmatched += 1;
                                vec![self.no_match(method, value, &id)]
                            }
                            None => {
                                self.summary.unexpected += 1;
                                eprintln!("ctxopt replay: the recording has no notification like this {method}; ignored");
                                Vec::new()
                            }
                        };
                    }
                };
                if let Some(id) = id {
                    self.summary.answered += 1;
                    self.new_id.insert(chosen, id);
                    if let Some(token) = value.pointer("/params/_meta/progressToken") {
                        self.new_token.insert(chosen, token.to_string());
                    }
                }
                self.arrive(chosen)
            }
            (None, id) => {
                // The client's answer to a server request we sent.
                let request = id
                    .as_deref()
                    .and_then(|id| self.outstanding.get_mut(id))
                    .and_then(VecDeque::pop_front);
                let recorded = request.and_then(|r| self.client_answer_of.get(&r).copied());
                match recorded {
                    Some(c) if !self.options.strict || self.expected() == Some(c) => self.arrive(c),
                    Some(_) => {
                        self.summary.out_of_order += 1;
                        eprintln!("ctxopt replay --strict: an answer to a server request came out of recorded order");
                        Vec::new()
                    }
                    None => {
                        self.summary.unexpected += 1;
                        eprintln!("ctxopt replay: an answer (id {}) to no request the recording made; ignored", id.as_deref().unwrap_or("none"));
                        Vec::new()
                    }
                }
            }
        }
    }

    /// Recorded client messages that `masked` matches, in recorded order.
    fn candidates(&self, method: &str, masked: &Value, is_request: bool) -> Vec<usize> {
        let mut found: Vec<usize> = self
            .exact
            .get(&key(Some(method), masked))
            .cloned()
            .unwrap_or_default();
        for &r in &self.redacted {
            let m = &self.recording.messages[r];
            if m.method.as_deref() == Some(method) {
                let recorded = self
                    .options
                    .volatile
                    .mask(&comparable(m.value.as_ref().expect("parsed")));
                if matches(&recorded, masked) {
                    found.push(r);
                }
            }
        }
        found.retain(|&c| (self.recording.messages[c].kind == FrameKind::Request) == is_request);
        found.sort_unstable();
        found
    }

    /// The next client message the recording expects (`--strict`).
    fn expected(&mut self) -> Option<usize> {
        while self.next_expected < self.client_order.len()
            && self.consumed[self.client_order[self.next_expected]]
        {
            self.next_expected += 1;
        }
        self.client_order.get(self.next_expected).copied()
    }

    fn describe(&self, index: Option<usize>) -> String {
        match index.map(|i| &self.recording.messages[i]) {
            Some(m) => format!(
                "{} {} (seq {}, line {})",
                m.kind_name(),
                m.method.as_deref().unwrap_or(""),
                m.seq,
                m.line
            ),
            None => "nothing more".into(),
        }
    }

    /// Marks a recorded client message as received and sends what is anchored to it.
    fn arrive(&mut self, index: usize) -> Vec<Out> {
        self.consumed[index] = true;
        let anchored = std::mem::take(&mut self.then[index]);
        anchored.into_iter().map(|s| self.emit(s)).collect()
    }

    /// The recorded server message `index`, made ready to send.
    fn emit(&mut self, index: usize) -> Out {
        let m = &self.recording.messages[index];
        match self.roles[index] {
            Role::Answer(r) => Out {
                bytes: match self.new_id.get(&r) {
                    Some(id) => splice(m, &["id"], id),
                    None => m.bytes.clone(),
                },
                answer: true,
            },
            Role::Progress(r) => Out {
                bytes: match self.new_token.get(&r) {
                    Some(token) => splice(m, &["params", "progressToken"], token),
                    None => m.bytes.clone(),
                },
                answer: false,
            },
            Role::Request => {
                if let Some(id) = &m.id {
                    self.outstanding
                        .entry(id.clone())
                        .or_default()
                        .push_back(index);
                }
                Out {
                    bytes: m.bytes.clone(),
                    answer: false,
                }
            }
            Role::Verbatim => Out {
                bytes: m.bytes.clone(),
                answer: false,
            },
        }
    }

    /// The recorded answer of `request` again, under `id` (nothing else is sent again).
    fn answer_again(&self, request: usize, id: &str) -> Vec<Out> {
        match self.answer_of.get(&request) {
            Some(&a) => vec![Out {
                bytes: splice(&self.recording.messages[a], &["id"], id),
                answer: true,
            }],
            None => Vec::new(),
        }
    }

    /// The error for a request nothing matches: the closest recorded request and how it differs.
    fn no_match(&self, method: &str, value: &Value, id: &str) -> Out {
        let masked = self.options.volatile.mask(&comparable(value));
        let closest = self
            .client_order
            .iter()
            .copied()
            .filter(|&i| self.recording.messages[i].kind == FrameKind::Request)
            .map(|i| {
                let m = &self.recording.messages[i];
                let recorded = self
                    .options
                    .volatile
                    .mask(&comparable(m.value.as_ref().expect("parsed")));
                let diffs = differences(&recorded, &masked, 64);
                let score = (
                    m.method.as_deref() != Some(method),
                    diffs.len(),
                    self.consumed[i],
                    i,
                );
                (score, i, diffs)
            })
            .min_by_key(|(score, _, _)| *score);
        let (message, data) = match closest {
            Some((_, i, diffs)) => {
                let m = &self.recording.messages[i];
                let shown: Vec<String> = diffs.iter().take(5).map(ToString::to_string).collect();
                (
                    format!(
                        "ctxopt replay: no recorded request matches this {method}; the closest is {} at seq {} (line {}): {}",
                        m.method.as_deref().unwrap_or(""),
                        m.seq,
                        m.line,
                        shown.join("; ")
                    ),
                    Some(json!({"closest": {"seq": m.seq, "line": m.line, "message": m.value},
                                "differences": diffs.iter().map(ToString::to_string).collect::<Vec<_>>()})),
                )
            }
            None => (
                format!(
                    "ctxopt replay: the recording holds no request; nothing matches this {method}"
                ),
                None,
            ),
        };
        eprintln!("{message}");
        out_error(&raw_value(id), NO_MATCH, &message, data)
    }
}

impl Recorded {
    fn kind_name(&self) -> &'static str {
        match self.kind {
            FrameKind::Request => "request",
            FrameKind::Response => "response",
            FrameKind::Error => "error",
            FrameKind::Notification => "notification",
            FrameKind::Batch => "batch",
            FrameKind::Unparseable => "unparseable frame",
        }
    }
}

/// What two requests are compared on: method and params.
fn comparable(message: &Value) -> Value {
    json!({"method": message.get("method"), "params": message.get("params")})
}

/// The lookup key of a masked message: its method and its text with members sorted.
fn key(method: Option<&str>, masked: &Value) -> (String, String) {
    (
        method.unwrap_or_default().to_owned(),
        sorted(masked).to_string(),
    )
}

/// The recorded message with the value at `path` replaced by the JSON text `with`, every
/// other byte as recorded.
fn splice(m: &Recorded, path: &[&str], with: &str) -> Vec<u8> {
    let Some(text) = m.text() else {
        return m.bytes.clone();
    };
    let mut span = json_scan::root(text);
    for name in path {
        match json_scan::member(text, span, name) {
            Some(s) => span = s,
            None => return m.bytes.clone(),
        }
    }
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..span.start]);
    out.push_str(with);
    out.push_str(&text[span.end..]);
    out.into_bytes()
}

fn raw_value(id: &str) -> Value {
    serde_json::from_str(id).unwrap_or(Value::Null)
}

fn out_error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Out {
    Out {
        bytes: protocol::error_frame(id, code, message, data).into_bytes(),
        answer: true,
    }
}

fn write_all(output: &mut impl Write, outs: Vec<Out>) -> std::io::Result<()> {
    if outs.is_empty() {
        return Ok(());
    }
    for out in outs {
        output.write_all(&out.bytes)?;
        output.write_all(b"\n")?;
    }
    output.flush()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::evidence::recording::{load, LoadOptions};

    fn recording(log: &str, options: &LoadOptions) -> Recording {
        load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(log), options).unwrap()
    }

    /// The recorded client's messages, its requests under new ids (`1000 + n`), and what a
    /// faithful replay must send back: the recorded server messages in order, answers under
    /// the new ids.
    fn reenact(rec: &Recording) -> (String, Vec<String>) {
        let mut input = String::new();
        let mut expected = Vec::new();
        let mut new_ids = HashMap::new();
        for (i, m) in rec.messages.iter().enumerate() {
            let text = m.text().unwrap().to_owned();
            match (m.side, m.kind) {
                (Side::Client, FrameKind::Request) => {
                    let id = format!("{}", 1000 + i);
                    input.push_str(&String::from_utf8(splice(m, &["id"], &id)).unwrap());
                    new_ids.insert(i, id);
                }
                (Side::Client, _) => input.push_str(&text),
                (Side::Server, FrameKind::Response | FrameKind::Error) => {
                    let id = &new_ids[&m.answers.unwrap()];
                    expected.push(String::from_utf8(splice(m, &["id"], id)).unwrap());
                    continue;
                }
                (Side::Server, _) => {
                    expected.push(text);
                    continue;
                }
            }
            input.push('\n');
        }
        (input, expected)
    }

    fn replay(rec: Recording, options: ReplayOptions, input: &str) -> (Vec<String>, Summary) {
        let mut out = Vec::new();
        let summary = ReplayServer::new(rec, options)
            .serve(input.as_bytes(), &mut out)
            .unwrap();
        let text = String::from_utf8(out).unwrap();
        (text.lines().map(str::to_owned).collect(), summary)
    }

    fn strict() -> ReplayOptions {
        ReplayOptions {
            strict: true,
            volatile: Volatile::defaults(),
        }
    }

    #[test]
    fn every_recorded_session_replays_to_its_own_client_byte_for_byte_in_order() {
        for log in [
            "frame-logs/ts-everything.jsonl",
            "frame-logs/ts-filesystem.jsonl",
            "frame-logs/py-session-memory.jsonl",
            "frame-logs/py-client-stateless.jsonl",
            "fixtures/frame-logs/everything-stateless.jsonl",
            "fixtures/frame-logs/everything-compaction.jsonl",
        ] {
            let rec = recording(log, &LoadOptions::default());
            let (input, expected) = reenact(&rec);
            let (got, summary) = replay(rec, strict(), &input);
            assert_eq!(got, expected, "{log}");
            assert!(!summary.failed(), "{log}: {summary}");
            assert!(summary.answered > 3, "{log}: {summary}");
        }
    }

    fn line_of<'a>(lines: &'a [String], needle: &str) -> &'a str {
        lines
            .iter()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle} in {lines:#?}"))
    }

    /// The messages up to and including `initialize`'s `notifications/initialized`.
    const TS_HANDSHAKE: &str = concat!(
        r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"another-client","version":"9.9"}},"jsonrpc":"2.0","id":"a"}"#,
        "\n",
        r#"{"method":"notifications/initialized","jsonrpc":"2.0"}"#,
        "\n",
    );

    #[test]
    fn a_new_progress_token_and_client_version_are_volatile() {
        let rec = recording("frame-logs/ts-everything.jsonl", &LoadOptions::default());
        let input = format!(
            "{TS_HANDSHAKE}{}\n",
            r#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"trigger-long-running-operation","arguments":{"duration":0.2,"steps":2},"_meta":{"progressToken":"tok"}}}"#
        );
        let (got, summary) = replay(
            rec,
            ReplayOptions {
                strict: false,
                volatile: Volatile::defaults(),
            },
            &input,
        );
        assert!(
            line_of(&got, "\"serverInfo\"").ends_with(r#""id":"a"}"#),
            "{got:#?}"
        );
        let progress: Vec<&String> = got
            .iter()
            .filter(|l| l.contains("notifications/progress"))
            .collect();
        assert_eq!(progress.len(), 2);
        assert!(
            progress
                .iter()
                .all(|l| l.contains(r#""progressToken":"tok""#)),
            "{progress:#?}"
        );
        assert!(line_of(&got, "Long running operation completed").ends_with(r#""id":"x"}"#));
        assert_eq!((summary.answered, summary.unmatched), (2, 0));
        // The canary: without the defaults, the other client's identity does not match.
        let rec = recording("frame-logs/ts-everything.jsonl", &LoadOptions::default());
        let (got, summary) = replay(rec, ReplayOptions::default(), TS_HANDSHAKE);
        assert_eq!(summary.unmatched, 1);
        assert!(got[0].contains("/params/clientInfo/name: recorded \\\"ctxopt-interop-ts\\\", now \\\"another-client\\\""), "{}", got[0]);
    }

    #[test]
    fn an_unmatched_request_names_the_closest_recorded_one_and_how_it_differs() {
        let rec = recording("frame-logs/ts-everything.jsonl", &LoadOptions::default());
        let input = format!(
            "{TS_HANDSHAKE}{}\n",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":40,"b":3}}}"#
        );
        let (got, summary) = replay(
            rec,
            ReplayOptions {
                strict: false,
                volatile: Volatile::defaults(),
            },
            &input,
        );
        let error: Value = serde_json::from_str(got.last().unwrap()).unwrap();
        assert_eq!(error["id"], 5);
        assert_eq!(error["error"]["code"], NO_MATCH);
        let message = error["error"]["message"].as_str().unwrap();
        assert!(message.contains("the closest is tools/call at seq 14 (line 16): /params/arguments/b: recorded 2, now 3"), "{message}");
        assert_eq!(error["error"]["data"]["closest"]["seq"], 14);
        assert_eq!(summary.unmatched, 1);
    }

    #[test]
    fn strict_fails_on_order_and_on_what_was_never_sent_and_the_lenient_replay_does_not() {
        let ping = r#"{"method":"ping","jsonrpc":"2.0","id":99}"#;
        let input = format!("{TS_HANDSHAKE}{ping}\n");
        let rec = || recording("frame-logs/ts-everything.jsonl", &LoadOptions::default());
        let (got, summary) = replay(
            rec(),
            ReplayOptions {
                strict: false,
                volatile: Volatile::defaults(),
            },
            &input,
        );
        assert_eq!(
            got.last().unwrap(),
            r#"{"result":{},"jsonrpc":"2.0","id":99}"#
        );
        assert!(!summary.failed());
        let (got, summary) = replay(rec(), strict(), &input);
        let error: Value = serde_json::from_str(got.last().unwrap()).unwrap();
        assert_eq!(error["error"]["code"], OUT_OF_ORDER);
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("expects response roots/list (seq 8, line 10) next"),
            "{error}"
        );
        assert_eq!(summary.out_of_order, 1);
        assert!(summary.never_sent > 0 && summary.failed(), "{summary}");
    }

    #[test]
    fn a_request_asked_more_often_than_recorded_gets_its_last_answer_again() {
        let rec = recording("frame-logs/ts-everything.jsonl", &LoadOptions::default());
        let ping = |id: u32| format!("{{\"method\":\"ping\",\"jsonrpc\":\"2.0\",\"id\":{id}}}\n");
        let (got, summary) = replay(
            rec,
            ReplayOptions {
                strict: false,
                volatile: Volatile::defaults(),
            },
            &(ping(1) + &ping(2)),
        );
        assert_eq!(
            got[got.len() - 2..],
            [
                r#"{"result":{},"jsonrpc":"2.0","id":1}"#,
                r#"{"result":{},"jsonrpc":"2.0","id":2}"#
            ]
        );
        assert_eq!((summary.answered, summary.answered_again), (1, 1));
    }

    #[test]
    fn a_compaction_log_serves_the_original_result_or_as_delivered_the_compacted_one() {
        let log = "fixtures/frame-logs/everything-compaction.jsonl";
        let call = {
            let rec = recording(log, &LoadOptions::default());
            rec.messages
                .iter()
                .find(|m| m.seq == 6)
                .unwrap()
                .text()
                .unwrap()
                .to_owned()
        };
        let input = format!("{call}\n");
        let original = replay(
            recording(log, &LoadOptions::default()),
            ReplayOptions::default(),
            &input,
        )
        .0;
        let delivered = replay(
            recording(
                log,
                &LoadOptions {
                    as_delivered: true,
                    ..LoadOptions::default()
                },
            ),
            ReplayOptions::default(),
            &input,
        )
        .0;
        assert!(
            original[0]
                .starts_with(r#"{"result":{"content":[{"type":"text","text":"Echo: <returncode>"#),
            "{}",
            &original[0][..80]
        );
        assert!(
            delivered[0]
                .starts_with(r#"{"result":{"content":[{"type":"text","text":"  1 | Echo: "#),
            "{}",
            &delivered[0][..80]
        );
        assert!(delivered[0].len() < original[0].len());
    }

    /// A recorded `tools/call` frame with id 1 at log line `seq + 2`.
    fn recorded_call(
        seq: u64,
        side: Side,
        kind: FrameKind,
        bytes: &str,
        answers: Option<usize>,
    ) -> Recorded {
        let dir = match side {
            Side::Client => crate::framelog::Direction::C2s,
            Side::Server => crate::framelog::Direction::S2c,
        };
        Recorded {
            seq,
            line: seq + 2,
            side,
            dir,
            kind,
            method: Some("tools/call".into()),
            id: Some("1".into()),
            bytes: bytes.into(),
            value: serde_json::from_str(bytes).ok(),
            answers,
        }
    }

    #[test]
    fn a_redacted_request_matches_a_secret_of_its_length_and_the_answer_keeps_its_placeholder() {
        let secret_call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"token":"[REDACTED:generic-api-key:16:0a1b2c3d]"}}}"#;
        let answer = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"welcome [REDACTED:generic-api-key:16:0a1b2c3d]"}]}}"#;
        let rec = Recording {
            header: recording("frame-logs/ts-everything.jsonl", &LoadOptions::default()).header,
            messages: vec![
                recorded_call(0, Side::Client, FrameKind::Request, secret_call, None),
                recorded_call(1, Side::Server, FrameKind::Response, answer, Some(0)),
            ],
            redacted_frames: 2,
            notes: Vec::new(),
        };
        let call = |token: &str| {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{{\"name\":\"login\",\"arguments\":{{\"token\":\"{token}\"}}}}}}\n")
        };
        let (got, _) = replay(
            rec.clone(),
            ReplayOptions::default(),
            &call("sk-0123456789abc"),
        );
        assert_eq!(got, [answer.replace("\"id\":1", "\"id\":7")]);
        let (got, summary) = replay(rec, ReplayOptions::default(), &call("too-short"));
        assert_eq!(summary.unmatched, 1, "{got:?}");
    }
}
