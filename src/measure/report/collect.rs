//! Reads frame logs one line at a time and accumulates the report.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{
    Anomalies, Anomaly, CatalogChange, Compaction, DirectionCounts, NeverCalled, Report,
    ServerReport, Session, ToolReport, MAX_LISTED_ANOMALIES,
};
use crate::evidence::catalog;
use crate::evidence::pins::PinTracker;
use crate::framelog::exchanges::{self, Entry, Exchanges};
use crate::framelog::json_scan::{as_str, is_valid, member, root};
use crate::framelog::meta_strip::strip_meta;
use crate::framelog::{Direction, Frame, FrameKind, Pins};
use crate::measure::audit::tool_tokens;
use crate::measure::claude_estimate;
use crate::measure::stats::{Latency, Summary};
use crate::measure::MeasureError;
use crate::protocol;
use crate::tokenizer::Tokenizer;

/// Reads every log in `paths` (in order) and builds the report.
pub fn collect(paths: &[PathBuf]) -> Result<Report, MeasureError> {
    let mut acc = Accumulator::default();
    for path in paths {
        acc.read_log(path)?;
    }
    Ok(acc.finish())
}

#[derive(Default)]
struct ToolAcc {
    calls: u64,
    tokens: Vec<u64>,
    stripped: Vec<u64>,
    bytes: Vec<u64>,
    latency: Vec<u64>,
    jsonrpc_errors: u64,
    is_error_results: u64,
}

/// (server name, origin, tool); origin sorts `proxy` after `server`.
type ToolKey = (String, Origin, String);

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Origin {
    Server,
    Proxy,
}

/// One session's distinct catalogs, for the changes across sessions.
struct SessionCatalogs {
    /// The server: short name, `serverInfo` name.
    server: (String, Option<String>),
    started: String,
    log: String,
    /// (digest, tools), in order.
    catalogs: Vec<(String, Vec<Value>)>,
}

#[derive(Default)]
struct Accumulator {
    tokenizer: Option<Tokenizer>,
    sessions: Vec<Session>,
    tools: BTreeMap<ToolKey, ToolAcc>,
    anomalies: Anomalies,
    listed_per_kind: HashMap<&'static str, usize>,
    /// Per session: the server (short name, `serverInfo` name), its start, its log and its
    /// distinct catalogs.
    catalogs: Vec<SessionCatalogs>,
    /// (log, server, tool) → the ledger's row.
    compaction: BTreeMap<(String, String, String), LedgerRow>,
    /// (server, tool) → (sessions offered it, its tokens in the last of them, summed).
    offered: BTreeMap<(String, String), (u64, u64, u64)>,
}

/// One row of the saving ledger, as it is summed.
#[derive(Default)]
struct LedgerRow {
    compacted: u64,
    left_whole: u64,
    server_tokens: u64,
    client_tokens: u64,
}

/// What is kept of a `tools/call` request until its answer: its tool and measures.
struct CallRequest {
    tool: String,
    tokens: u64,
    stripped: u64,
    bytes: u64,
    /// For a call that spans several exchanges (`input_required` rounds, a task): when its
    /// first request was relayed; its latency runs from there to its final answer.
    started: Option<String>,
    /// Origin of its first request.
    origin: Origin,
}

/// A call answered with a task handle, until the task's result: the call so far, and the
/// time of a `tasks/get` answer that said the task ended (the call ends there when the
/// client never asks for `tasks/result`).
struct TaskCall {
    call: CallRequest,
    ended: Option<(String, bool)>,
}

/// `tasks/get` statuses after which a task does not change.
const TASK_ENDED: [&str; 3] = ["completed", "failed", "cancelled"];

/// One JSON-RPC message, measured: a frame, or one item of a batch frame.
struct Message<'a> {
    seq: u64,
    /// The item's index, in a batch.
    item: Option<usize>,
    ts: &'a str,
    dir: Direction,
    kind: FrameKind,
    id: Option<&'a str>,
    method: Option<&'a str>,
    tool: Option<String>,
    latency_us: Option<u64>,
    is_error: bool,
    bytes: u64,
    /// The parsed message, when the frame is a single message worth parsing.
    json: Option<Value>,
    /// The `seq` of the `input_required` result this request retries.
    retries: Option<u64>,
    /// The task the message is about.
    task: Option<&'a str>,
    /// The result's `resultType` when it is not `complete`.
    result_type: Option<&'a str>,
    /// For a `tools/call` request or answer: (tokens, tokens without `_meta`) of its
    /// `params` / `result` / `error` text, or of the whole item of a batch.
    call_tokens: Option<(u64, u64)>,
}

struct LogState {
    log: String,
    /// `tools/call` requests waiting for their answer, by (seq, batch item): the pairing
    /// itself is [`Exchanges`]'.
    calls: HashMap<(u64, Option<usize>), CallRequest>,
    advertised: HashSet<String>,
    /// `tools/call` requests whose tool was not advertised when they were made.
    early_calls: Vec<(u64, Direction, String)>,
    /// The last `s2c` frame: its `seq` and tokens (a compacted frame names it).
    last_s2c: Option<(u64, u64)>,
    /// The server tools offered to the client in this session: name → definition tokens.
    offered: BTreeMap<String, u64>,
    /// `tools/call`s answered `input_required`, by the `seq` of that answer, until their
    /// retry.
    rounds: HashMap<u64, CallRequest>,
    /// `tools/call`s answered with a task handle, by task id, until the task's result.
    tasks: HashMap<String, TaskCall>,
    /// The session's pins, derived from its frames.
    pins: PinTracker,
    /// The pins its trailer gives (format version 5 on), which are preferred.
    trailer_pins: Option<Box<Pins>>,
}

/// The server tools a `tools/list` answer offered the client, with the tokens of their
/// definitions: the tools of the server's answer that are also in what the client got
/// (where the proxy rewrote the answer, its injected tools are not the server's and the
/// tools it hid were not offered).
fn offered_tools(frame: &Frame, tokenizer: Tokenizer, offered: &mut BTreeMap<String, u64>) {
    let tools = |v: &Value| -> Vec<Value> {
        v.pointer("/result/tools")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let Some(server) = frame.server_json() else {
        return;
    };
    let client: Option<Vec<String>> = frame.server_raw.as_ref().map(|_| {
        frame
            .json()
            .map(|c| tools(&c))
            .unwrap_or_default()
            .iter()
            .filter_map(|t| t.get("name")?.as_str().map(str::to_owned))
            .collect()
    });
    for tool in tools(&server) {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        if client.as_ref().is_none_or(|c| c.iter().any(|n| n == name)) {
            offered.insert(name.to_owned(), tool_tokens(&tool, tokenizer) as u64);
        }
    }
}

/// The key a request's measures are kept under.
fn call_key(m: &exchanges::Message) -> (u64, Option<usize>) {
    (m.frame.seq, m.item)
}

fn bump(counts: &mut DirectionCounts, dir: Direction, by: u64) {
    match dir {
        Direction::C2s => counts.c2s += by,
        Direction::S2c => counts.s2c += by,
        Direction::C2p => counts.c2p += by,
        Direction::P2c => counts.p2c += by,
    }
}

/// Methods whose frames are parsed into a tree (`tools/call` frames are measured on spans
/// of their text instead; everything else from the record alone).
fn worth_parsing(method: Option<&str>) -> bool {
    matches!(
        method,
        Some("tools/list" | "notifications/cancelled" | "tasks/get")
    )
}

/// What a `tools/call` frame's text says: the tool name (requests), whether the result
/// says `isError: true` (answers), and the tokens of the counted member.
struct CallText {
    tool: Option<String>,
    is_error: bool,
    tokens: (u64, u64),
}

/// Measures a `tools/call` request (`params`) or answer (`result`, else `error`) on the
/// wire text: tokens of the member's text, and of that text with every `_meta` cut out
/// (the cut the proxy makes for `meta_tokens`).
fn call_text(raw: &str, tokenizer: Tokenizer) -> Option<CallText> {
    if !is_valid(raw) {
        return None;
    }
    let top = root(raw);
    let span = ["params", "result", "error"]
        .iter()
        .find_map(|name| member(raw, top.clone(), name))?;
    let text = &raw[span.clone()];
    let full = tokenizer.count(text) as u64;
    let stripped = strip_meta(text, root(text)).map_or(full, |s| tokenizer.count(&s) as u64);
    Some(CallText {
        tool: member(raw, span.clone(), "name")
            .and_then(|n| as_str(raw, n))
            .map(|n| n.into_owned()),
        is_error: member(raw, span, "isError").is_some_and(|v| &raw[v] == "true"),
        tokens: (full, stripped),
    })
}

fn preview(text: &str) -> String {
    let mut out: String = text.chars().take(60).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}

fn micros_between(from: &str, to: &str) -> Option<u64> {
    let from = chrono::DateTime::parse_from_rfc3339(from).ok()?;
    let to = chrono::DateTime::parse_from_rfc3339(to).ok()?;
    u64::try_from((to - from).num_microseconds()?).ok()
}

impl Accumulator {
    fn tokenizer(&self) -> Tokenizer {
        self.tokenizer.unwrap_or_default()
    }

    fn anomaly(&mut self, kind: &'static str, log: &str, seq: u64, dir: Direction, detail: String) {
        let counter = match kind {
            "unanswered_request" => &mut self.anomalies.unanswered_requests,
            "unknown_id_response" => &mut self.anomalies.unknown_id_responses,
            "unadvertised_tool_call" => &mut self.anomalies.unadvertised_tool_calls,
            "cancellation" => &mut self.anomalies.cancellations,
            _ => &mut self.anomalies.unparseable_frames,
        };
        *counter += 1;
        let listed = self.listed_per_kind.entry(kind).or_default();
        if *listed < MAX_LISTED_ANOMALIES {
            *listed += 1;
            self.anomalies.listed.push(Anomaly {
                kind: kind.to_owned(),
                log: log.to_owned(),
                seq,
                dir: dir.as_str().to_owned(),
                detail,
            });
        }
    }

    fn read_log(&mut self, path: &Path) -> Result<(), MeasureError> {
        let log = path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let mut session = Session {
            log: log.clone(),
            server_name: String::new(),
            started: String::new(),
            protocols: Vec::new(),
            client: None,
            server: None,
            frames: DirectionCounts::default(),
            bytes: DirectionCounts::default(),
            tokens: DirectionCounts::default(),
            meta_tokens: DirectionCounts::default(),
            calls: 0,
            call_tokens: 0,
            jsonrpc_errors: 0,
            unreadable_log_lines: 0,
            frames_unlogged: 0,
            complete: false,
            ctxopt_version: String::new(),
            catalog_digests: Vec::new(),
            changed_mid_run: Vec::new(),
            claude_tool_list: None,
        };
        let mut state = LogState {
            log,
            calls: HashMap::new(),
            advertised: HashSet::new(),
            early_calls: Vec::new(),
            last_s2c: None,
            offered: BTreeMap::new(),
            rounds: HashMap::new(),
            tasks: HashMap::new(),
            pins: PinTracker::default(),
            trailer_pins: None,
        };
        let mut log = Exchanges::open(path)?;
        for entry in log.by_ref() {
            match entry? {
                Entry::Bad { .. } => session.unreadable_log_lines += 1,
                Entry::Header(h) => {
                    if self.tokenizer.is_none() {
                        self.tokenizer = Some(h.tokenizer.parse().unwrap_or_default());
                    }
                    session.server_name = h.server_name;
                    session.started = h.started;
                    session.ctxopt_version = h.proxy_version;
                }
                Entry::Trailer(t) => {
                    session.complete = true;
                    session.frames_unlogged = t.frames_unlogged;
                    state.trailer_pins = t.pins;
                }
                Entry::Frame { frame, messages } => {
                    self.frame(&mut session, &mut state, &frame, messages)
                }
            }
        }
        for request in log.take_unanswered() {
            let what = match state.calls.remove(&call_key(&request)) {
                Some(call) => format!("tools/call {}", call.tool),
                None => request.method().unwrap_or_default().to_owned(),
            };
            self.anomaly(
                "unanswered_request",
                &state.log,
                request.frame.seq,
                request.dir(),
                what,
            );
        }
        let mut ended: Vec<(String, TaskCall)> = state.tasks.drain().collect();
        ended.sort_by(|a, b| a.0.cmp(&b.0));
        for (_, task) in ended {
            if let Some((at, failed)) = task.ended {
                let latency = task
                    .call
                    .started
                    .as_deref()
                    .and_then(|s| micros_between(s, &at));
                self.call_done(&mut session, task.call, latency, false, failed);
            }
        }
        for (seq, dir, tool) in std::mem::take(&mut state.early_calls) {
            if !state.advertised.contains(&tool) {
                self.anomaly("unadvertised_tool_call", &state.log, seq, dir, tool);
            }
        }
        let catalogs: Vec<(String, Vec<Value>)> = state
            .pins
            .catalogs()
            .distinct()
            .into_iter()
            .map(|(d, tools)| (d, tools.to_vec()))
            .collect();
        session.claude_tool_list = catalogs
            .last()
            .filter(|(_, tools)| !tools.is_empty())
            .map(|(_, tools)| claude_estimate::tool_definitions(tools));
        let pins = state
            .trailer_pins
            .take()
            .map_or_else(|| state.pins.pins(&session.ctxopt_version), |p| *p);
        session.client = pins.client;
        session.server = pins.server;
        session.protocols = pins.protocols;
        session.catalog_digests = pins.catalog_digests;
        session.ctxopt_version = pins.ctxopt_version;
        session.changed_mid_run = pins.changed;
        let identity_name = session.server.as_ref().map(|i| i.name.clone());
        self.catalogs.push(SessionCatalogs {
            server: (session.server_name.clone(), identity_name),
            started: session.started.clone(),
            log: session.log.clone(),
            catalogs,
        });
        for (tool, tokens) in std::mem::take(&mut state.offered) {
            let row = self
                .offered
                .entry((session.server_name.clone(), tool))
                .or_default();
            *row = (row.0 + 1, tokens, row.2 + tokens);
        }
        self.sessions.push(session);
        Ok(())
    }

    fn frame(
        &mut self,
        session: &mut Session,
        state: &mut LogState,
        frame: &Frame,
        messages: Vec<exchanges::Exchange>,
    ) {
        bump(&mut session.frames, frame.dir, 1);
        bump(&mut session.bytes, frame.dir, frame.bytes);
        bump(&mut session.tokens, frame.dir, frame.tokens);
        bump(&mut session.meta_tokens, frame.dir, frame.meta_tokens);
        state.pins.frame(frame);
        if frame.dir == Direction::S2c {
            state.last_s2c = Some((frame.seq, frame.tokens));
            if frame.left_whole.is_some() {
                let key = (
                    state.log.clone(),
                    session.server_name.clone(),
                    frame.tool.clone().unwrap_or_default(),
                );
                self.compaction.entry(key).or_default().left_whole += 1;
            }
            if frame.kind == FrameKind::Response && frame.method.as_deref() == Some("tools/list") {
                offered_tools(frame, self.tokenizer(), &mut state.offered);
            }
        }
        if let Some(of) = frame.compacts {
            // What the client got instead of the server's frame just before: a line of the
            // ledger, not a message of its own (the server's frame answered the call).
            if let Some((_, server_tokens)) = state.last_s2c.filter(|(seq, _)| *seq == of) {
                let key = (
                    state.log.clone(),
                    session.server_name.clone(),
                    frame.tool.clone().unwrap_or_default(),
                );
                let row = self.compaction.entry(key).or_default();
                row.compacted += 1;
                row.server_tokens += server_tokens;
                row.client_tokens += frame.tokens;
            }
            return;
        }
        match frame.kind {
            FrameKind::Unparseable => {
                let detail = match &frame.raw {
                    Some(raw) => preview(raw),
                    None => format!("({} bytes, not UTF-8)", frame.bytes),
                };
                self.anomaly(
                    "unparseable_frame",
                    &state.log,
                    frame.seq,
                    frame.dir,
                    detail,
                );
            }
            FrameKind::Batch => {
                for exchange in messages {
                    let message = batch_message(frame, &exchange.message);
                    self.message(session, state, message, exchange.request);
                }
            }
            _ => {
                let Some(exchange) = messages.into_iter().next() else {
                    return;
                };
                let raw = frame.raw.as_deref();
                let json = if worth_parsing(frame.method.as_deref()) {
                    raw.and_then(|r| serde_json::from_str(r).ok())
                } else {
                    None
                };
                let of_task = frame
                    .task
                    .as_ref()
                    .is_some_and(|t| state.tasks.contains_key(t));
                let is_call = of_task
                    || match frame.kind {
                        FrameKind::Request => frame.method.as_deref() == Some("tools/call"),
                        _ => exchange
                            .request
                            .as_ref()
                            .is_some_and(|r| state.calls.contains_key(&call_key(r))),
                    };
                let call = is_call
                    .then(|| raw.and_then(|r| call_text(r, self.tokenizer())))
                    .flatten();
                let message = Message {
                    seq: frame.seq,
                    item: None,
                    ts: &frame.ts,
                    dir: frame.dir,
                    kind: frame.kind,
                    id: frame.id.as_deref(),
                    method: frame.method.as_deref(),
                    tool: frame
                        .tool
                        .clone()
                        .or_else(|| call.as_ref().and_then(|c| c.tool.clone())),
                    latency_us: frame.latency_us,
                    is_error: frame.is_error.unwrap_or(false)
                        || call.as_ref().is_some_and(|c| c.is_error),
                    bytes: frame.bytes,
                    json,
                    call_tokens: call.map(|c| c.tokens),
                    retries: frame.retries,
                    task: frame.task.as_deref(),
                    result_type: frame.result_type.as_deref(),
                };
                self.message(session, state, message, exchange.request);
            }
        }
    }

    fn message(
        &mut self,
        session: &mut Session,
        state: &mut LogState,
        m: Message<'_>,
        request: Option<exchanges::Message>,
    ) {
        match m.kind {
            FrameKind::Request => self.request(session, state, m),
            FrameKind::Response | FrameKind::Error => self.answer(session, state, m, request),
            FrameKind::Notification if m.method == Some("notifications/cancelled") => {
                let target = m
                    .json
                    .as_ref()
                    .and_then(|j| j.pointer("/params/requestId"))
                    .map_or_else(|| "?".to_owned(), Value::to_string);
                self.anomaly(
                    "cancellation",
                    &state.log,
                    m.seq,
                    m.dir,
                    format!("requestId {target}"),
                );
            }
            _ => {}
        }
    }

    fn request(&mut self, session: &mut Session, state: &mut LogState, m: Message<'_>) {
        let (tokens, stripped) = m.call_tokens.unwrap_or((0, 0));
        if let Some(task) = m.task.and_then(|t| state.tasks.get_mut(t)) {
            // Polling a task (`tasks/get`, `tasks/result`): part of the call that made it.
            task.call.tokens += tokens;
            task.call.stripped += stripped;
            task.call.bytes += m.bytes;
            return;
        }
        let tool = m.tool.filter(|_| m.method == Some("tools/call"));
        if let Some(round) = m.retries.and_then(|seq| state.rounds.remove(&seq)) {
            // The retry of an `input_required` answer: the same call, one more round.
            if m.id.is_some() {
                state.calls.insert(
                    (m.seq, m.item),
                    CallRequest {
                        tokens: round.tokens + tokens,
                        stripped: round.stripped + stripped,
                        bytes: round.bytes + m.bytes,
                        ..round
                    },
                );
            }
            return;
        }
        if let Some(tool) = &tool {
            session.calls += 1;
            let origin = origin(m.dir);
            self.tool_acc(&session.server_name, origin, tool).calls += 1;
            if origin == Origin::Server && !state.advertised.contains(tool) {
                state.early_calls.push((m.seq, m.dir, tool.clone()));
            }
        }
        if let (Some(tool), Some(_)) = (tool, m.id) {
            state.calls.insert(
                (m.seq, m.item),
                CallRequest {
                    tool,
                    tokens,
                    stripped,
                    bytes: m.bytes,
                    started: None,
                    origin: origin(m.dir),
                },
            );
        }
    }

    fn answer(
        &mut self,
        session: &mut Session,
        state: &mut LogState,
        m: Message<'_>,
        request: Option<exchanges::Message>,
    ) {
        session.jsonrpc_errors += u64::from(m.kind == FrameKind::Error);
        let Some(request) = request else {
            let detail = format!("id {}", m.id.unwrap_or("null"));
            self.anomaly("unknown_id_response", &state.log, m.seq, m.dir, detail);
            return;
        };
        let result = m.json.as_ref().and_then(|j| j.get("result"));
        if request.method() == Some("tools/list") && m.dir == Direction::S2c {
            let tools = result
                .and_then(|r| r.get("tools"))
                .and_then(Value::as_array);
            for t in tools.into_iter().flatten() {
                if let Some(name) = t.get("name").and_then(Value::as_str) {
                    state.advertised.insert(name.to_owned());
                }
            }
        }
        let (tokens, stripped) = m.call_tokens.unwrap_or((0, 0));
        if let Some(task) = m.task.filter(|t| state.tasks.contains_key(*t)) {
            self.task_answer(session, state, task, &m, request.method());
            return;
        }
        let Some(mut call) = state.calls.remove(&call_key(&request)) else {
            return;
        };
        if m.kind == FrameKind::Response
            && (m.result_type == Some(protocol::INPUT_REQUIRED) || m.task.is_some())
        {
            // Not the call's end: it goes on with a retry, or with its task.
            call.tokens += tokens;
            call.stripped += stripped;
            call.bytes += m.bytes;
            call.started.get_or_insert_with(|| request.frame.ts.clone());
            match m.task {
                Some(task) => {
                    state
                        .tasks
                        .insert(task.to_owned(), TaskCall { call, ended: None });
                }
                None => {
                    state.rounds.insert(m.seq, call);
                }
            }
            return;
        }
        let latency = match &call.started {
            Some(started) => micros_between(started, m.ts),
            None => m
                .latency_us
                .or_else(|| micros_between(&request.frame.ts, m.ts)),
        };
        call.tokens += tokens;
        call.stripped += stripped;
        call.bytes += m.bytes;
        self.call_done(
            session,
            call,
            latency,
            m.kind == FrameKind::Error,
            m.is_error,
        );
    }

    /// An answer about a task a call made: `tasks/result` ends the call; a `tasks/get`
    /// that says the task ended is remembered (the call ends there if no `tasks/result`
    /// follows).
    fn task_answer(
        &mut self,
        session: &mut Session,
        state: &mut LogState,
        task: &str,
        m: &Message<'_>,
        method: Option<&str>,
    ) {
        let (tokens, stripped) = m.call_tokens.unwrap_or((0, 0));
        let Some(entry) = state.tasks.get_mut(task) else {
            return;
        };
        entry.call.tokens += tokens;
        entry.call.stripped += stripped;
        entry.call.bytes += m.bytes;
        let failed = m.kind == FrameKind::Error;
        match method {
            Some("tasks/result") => {
                if let Some(done) = state.tasks.remove(task) {
                    let latency = done
                        .call
                        .started
                        .as_deref()
                        .and_then(|s| micros_between(s, m.ts));
                    self.call_done(session, done.call, latency, failed, m.is_error);
                }
            }
            _ => {
                let status = m
                    .json
                    .as_ref()
                    .and_then(|j| j.pointer("/result/status"))
                    .and_then(Value::as_str);
                if failed || status.is_some_and(|s| TASK_ENDED.contains(&s)) {
                    entry.ended = Some((m.ts.to_owned(), failed || status == Some("failed")));
                }
            }
        }
    }

    /// Accounts an answered call to its tool.
    fn call_done(
        &mut self,
        session: &mut Session,
        call: CallRequest,
        latency: Option<u64>,
        jsonrpc_error: bool,
        is_error: bool,
    ) {
        session.call_tokens += call.tokens;
        let acc = self.tool_acc(&session.server_name, call.origin, &call.tool);
        acc.tokens.push(call.tokens);
        acc.stripped.push(call.stripped);
        acc.bytes.push(call.bytes);
        acc.latency.extend(latency);
        acc.jsonrpc_errors += u64::from(jsonrpc_error);
        acc.is_error_results += u64::from(is_error);
    }

    fn tool_acc(&mut self, server: &str, origin: Origin, tool: &str) -> &mut ToolAcc {
        self.tools
            .entry((server.to_owned(), origin, tool.to_owned()))
            .or_default()
    }

    fn finish(mut self) -> Report {
        let tokenizer_kind = self.tokenizer();
        let tokenizer = tokenizer_kind.name().to_owned();
        let catalog_changes = catalog_changes(std::mem::take(&mut self.catalogs), self.tokenizer());
        let never_called = self
            .offered
            .iter()
            .filter(|((server, tool), _)| {
                self.tools
                    .get(&(server.clone(), Origin::Server, tool.clone()))
                    .is_none_or(|acc| acc.calls == 0)
            })
            .map(
                |((server_name, tool), &(sessions, tokens, total))| NeverCalled {
                    server_name: server_name.clone(),
                    tool: tool.clone(),
                    sessions,
                    tokens_per_session: tokens,
                    total_tokens: total,
                },
            )
            .collect();
        let mut servers: Vec<ServerReport> = Vec::new();
        for ((server, origin, tool), acc) in self.tools {
            if servers.last().is_none_or(|s| s.name != server) {
                servers.push(ServerReport {
                    name: server.clone(),
                    tools: Vec::new(),
                });
            }
            let call_tokens = Summary::of(acc.tokens);
            let stripped_tokens = Summary::of(acc.stripped);
            let envelope_tokens = call_tokens.total.saturating_sub(stripped_tokens.total);
            let envelope_share = if call_tokens.total == 0 {
                0.0
            } else {
                envelope_tokens as f64 / call_tokens.total as f64
            };
            let claude_estimate = (tokenizer_kind == Tokenizer::O200kBase)
                .then(|| claude_estimate::json_text(call_tokens.total));
            if let Some(s) = servers.last_mut() {
                s.tools.push(ToolReport {
                    tool,
                    origin: match origin {
                        Origin::Server => "server",
                        Origin::Proxy => "proxy",
                    }
                    .to_owned(),
                    calls: acc.calls,
                    answered: call_tokens.n as u64,
                    call_tokens,
                    stripped_tokens,
                    envelope_tokens,
                    envelope_share,
                    bytes: Summary::of(acc.bytes),
                    latency: Latency::of(acc.latency),
                    jsonrpc_errors: acc.jsonrpc_errors,
                    is_error_results: acc.is_error_results,
                    claude_estimate,
                });
            }
        }
        Report {
            hook_injections: Vec::new(),
            tokenizer,
            sessions: self.sessions,
            servers,
            anomalies: self.anomalies,
            compaction: self
                .compaction
                .into_iter()
                .map(|((log, server_name, tool), row)| Compaction {
                    log,
                    server_name,
                    tool,
                    results: row.compacted,
                    left_whole: row.left_whole,
                    server_tokens: row.server_tokens,
                    client_tokens: row.client_tokens,
                    saved_tokens: row.server_tokens.saturating_sub(row.client_tokens),
                })
                .collect(),
            never_called,
            catalog_changes,
        }
    }
}

/// Each change of a server's catalog, per server in start order.
fn catalog_changes(mut sessions: Vec<SessionCatalogs>, tokenizer: Tokenizer) -> Vec<CatalogChange> {
    sessions.sort_by(|a, b| (&a.server, &a.started).cmp(&(&b.server, &b.started)));
    let listed: Vec<(&SessionCatalogs, &(String, Vec<Value>))> = sessions
        .iter()
        .flat_map(|s| s.catalogs.iter().map(move |c| (s, c)))
        .collect();
    listed
        .windows(2)
        .filter(|w| w[0].0.server == w[1].0.server && w[0].1 .0 != w[1].1 .0)
        .map(|w| CatalogChange {
            server_name: w[1].0.server.0.clone(),
            log_then: w[0].0.log.clone(),
            log_now: w[1].0.log.clone(),
            diff: catalog::diff(&w[0].1 .1, &w[1].1 .1, tokenizer),
        })
        .collect()
}

fn origin(request_dir: Direction) -> Origin {
    match request_dir {
        Direction::C2p | Direction::P2c => Origin::Proxy,
        Direction::C2s | Direction::S2c => Origin::Server,
    }
}

fn batch_message<'a>(frame: &'a Frame, item: &'a exchanges::Message) -> Message<'a> {
    let (tokens, meta_tokens) = item
        .batch_item()
        .map_or((0, 0), |i| (i.tokens, i.meta_tokens));
    Message {
        seq: frame.seq,
        item: item.item,
        ts: &frame.ts,
        dir: frame.dir,
        kind: item.kind(),
        id: item.id(),
        method: item.method(),
        tool: item.tool().map(str::to_owned),
        latency_us: item.latency_us(),
        is_error: item.is_error().unwrap_or(false),
        bytes: 0,
        json: None,
        call_tokens: Some((tokens, tokens.saturating_sub(meta_tokens))),
        retries: None,
        task: None,
        result_type: None,
    }
}
