//! Frame-log records of one session in, finished spans out: one per request/response pair
//! (and per notification), named and attributed as the MCP semantic conventions say, with
//! ctxopt's own figures under `ctxopt.*`, plus one span covering the session.
//!
//! The same code serves `ctxopt export` (records read from a log) and the proxy's live
//! export (records as the tap produces them), so both send the same spans for a session.
//!
//! Parents: a request whose `params._meta` carries a valid `traceparent` gets that as its
//! remote parent (and `tracestate` with it); any other span is a child of the session span.
//! The proxy only reads a `traceparent`, it never writes one.

use std::sync::Arc;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::{span::SpanKind, status::StatusCode, Span, Status};
use serde_json::Value;

use super::encode::{boolean, int, signed, string};
use super::metrics::Metrics;
use super::trace_context::{parse_traceparent, RemoteParent, SessionIds};
use crate::framelog::pairing::Outstanding;
use crate::framelog::{Direction, ExitStatus, Frame, FrameKind, Header};
use crate::protocol::MODERN_VERSION;
use crate::redact::Redactor;

/// `error.type` of a request that was never answered.
pub(crate) const UNANSWERED: &str = "unanswered";

/// Unix nanoseconds of an RFC 3339 time; `None` when it does not parse.
pub(crate) fn unix_nanos(ts: &str) -> Option<u64> {
    chrono::DateTime::parse_from_rfc3339(ts)
        .ok()?
        .timestamp_nanos_opt()
        .and_then(|n| u64::try_from(n).ok())
}

/// A request (or notification) waiting for the frame that ends its span.
#[derive(Debug)]
struct Opened {
    seq: u64,
    start_ns: u64,
    dir: Direction,
    method: String,
    tool: Option<String>,
    prompt: Option<String>,
    id: Option<String>,
    protocol: Option<String>,
    tokens: u64,
    meta_tokens: u64,
    bytes: u64,
    parent: Option<RemoteParent>,
    arguments: Option<String>,
}

/// A request and its server answer, whose span waits for the next frame.
#[derive(Debug)]
struct Held {
    opened: Opened,
    answer: Box<Frame>,
    at: u64,
}

/// How a span ends.
enum End<'a> {
    /// A notification: it ends where it starts.
    Notification,
    /// The response or error that answered the request, and the frame the proxy sent the
    /// client in its place when it compacted it (`p2c` with `compacts`).
    Answered(&'a Frame, Option<&'a Frame>),
    /// The session ended first.
    Unanswered,
}

/// The spans and metrics of one session (one header … trailer run).
#[derive(Debug)]
pub(crate) struct SessionSpans {
    ids: SessionIds,
    server_name: String,
    tokenizer: String,
    started_ns: u64,
    last_ns: u64,
    last_protocol: Option<String>,
    /// Set when tool arguments and results go into spans: what redacts them first.
    content: Option<Arc<Redactor>>,
    pending: Outstanding<Opened>,
    /// A server's answer to a tool call, waiting one frame: when the proxy compacted it,
    /// the frame the client got is logged right after it.
    held: Option<Held>,
    operations: u64,
    metrics: Metrics,
}

/// The id as JSON-RPC text (a string id unquoted); `None` for a `null` id.
fn request_id(text: &str) -> Option<String> {
    match text {
        "null" => None,
        t if t.starts_with('"') => serde_json::from_str::<String>(t).ok(),
        t => Some(t.to_string()),
    }
}

/// Whether `protocol` is of the stateless era (no sessions: `mcp.session.id` MUST NOT be
/// set), the first stateless revision or a later one.
fn stateless(protocol: Option<&str>) -> bool {
    protocol.is_some_and(|p| p >= MODERN_VERSION)
}

/// `value` as JSON text with every secret the redaction rules find replaced by its
/// placeholder (the same rules and key as the frame log's, see docs/security.md).
fn redacted(redactor: &Redactor, value: &Value) -> String {
    let mut text = value.to_string();
    redactor.redact_string(&mut text);
    text
}

/// The frame's text as JSON, when it has text that parses.
fn json_of(frame: &Frame) -> Option<Value> {
    serde_json::from_str(frame.raw.as_deref()?).ok()
}

impl SessionSpans {
    /// Spans for the session `header` opens; with `content`, tool arguments and results go
    /// into `tools/call` spans, redacted by it.
    pub(crate) fn new(header: &Header, content: Option<Arc<Redactor>>) -> SessionSpans {
        let started_ns = unix_nanos(&header.started).unwrap_or(0);
        SessionSpans {
            ids: SessionIds::of(header),
            server_name: header.server_name.clone(),
            tokenizer: header.tokenizer.clone(),
            started_ns,
            last_ns: started_ns,
            last_protocol: None,
            content,
            pending: Outstanding::default(),
            held: None,
            operations: 0,
            metrics: Metrics::new(started_ns),
        }
    }

    /// Takes one frame record; returns the spans it finishes: a response's or error's
    /// request, a notification, and a tool call's answered by the frame before (held one
    /// frame for the compacted replacement the proxy logs after it).
    pub(crate) fn frame(&mut self, frame: &Frame) -> Vec<Span> {
        let at = unix_nanos(&frame.ts).unwrap_or(self.last_ns);
        self.last_ns = self.last_ns.max(at);
        if frame.protocol.is_some() {
            self.last_protocol = frame.protocol.clone();
        }
        let mut spans = Vec::new();
        if let Some(held) = self.held.take() {
            let replaced = frame.compacts == Some(held.answer.seq);
            // A compacted answer ends when the client got the replacement.
            let (delivered, end) = if replaced {
                (Some(frame), at)
            } else {
                (None, held.at)
            };
            spans.push(self.span(held.opened, End::Answered(&held.answer, delivered), end));
            if replaced {
                return spans;
            }
        }
        match frame.kind {
            FrameKind::Request => {
                if let (Some(opened), Some(id)) = (self.open(frame, at), frame.id.as_deref()) {
                    self.pending.request(frame.dir, id, opened);
                }
            }
            FrameKind::Notification => {
                if let Some(opened) = self.open(frame, at) {
                    spans.push(self.span(opened, End::Notification, at));
                }
            }
            FrameKind::Response | FrameKind::Error => {
                let answered = frame
                    .id
                    .as_deref()
                    .and_then(|id| self.pending.answer(frame.dir, id));
                match answered {
                    Some(opened) if frame.dir == Direction::S2c && opened.tool.is_some() => {
                        self.held = Some(Held {
                            opened,
                            answer: Box::new(frame.clone()),
                            at,
                        });
                    }
                    Some(opened) => spans.push(self.span(opened, End::Answered(frame, None), at)),
                    None => {}
                }
            }
            FrameKind::Batch | FrameKind::Unparseable => {}
        }
        spans
    }

    /// Ends the session at `end_ts` (the trailer's time; `None`: the last frame's): the
    /// spans of requests never answered, in log order, then the session span.
    pub(crate) fn finish(&mut self, end_ts: Option<&str>, exit: Option<&ExitStatus>) -> Vec<Span> {
        let end = end_ts
            .and_then(unix_nanos)
            .unwrap_or(self.last_ns)
            .max(self.last_ns);
        let mut spans = Vec::new();
        if let Some(held) = self.held.take() {
            spans.push(self.span(held.opened, End::Answered(&held.answer, None), held.at));
        }
        let mut open: Vec<Opened> = self.pending.drain().map(|(_, o)| o).collect();
        open.sort_by_key(|o| o.seq);
        spans.extend(open.into_iter().map(|o| self.span(o, End::Unanswered, end)));
        spans.push(self.session_span(end, exit));
        spans
    }

    /// The session's metrics as of its last frame (or `end_ts`).
    pub(crate) fn metrics(&self, end_ts: Option<&str>) -> Vec<Metric> {
        let end = end_ts
            .and_then(unix_nanos)
            .unwrap_or(self.last_ns)
            .max(self.last_ns);
        self.metrics.export(end)
    }

    fn open(&self, frame: &Frame, at: u64) -> Option<Opened> {
        let method = frame.method.clone()?;
        let json = json_of(frame);
        let params = json.as_ref().and_then(|j| j.get("params"));
        let meta = params.and_then(|p| p.get("_meta"));
        let parent = meta.and_then(|m| {
            let traceparent = m.get("traceparent")?.as_str()?;
            parse_traceparent(traceparent, m.get("tracestate").and_then(Value::as_str))
        });
        let prompt = (method == "prompts/get")
            .then(|| params?.get("name")?.as_str().map(str::to_string))
            .flatten();
        let arguments = match (&self.content, method == "tools/call") {
            (Some(redactor), true) => params
                .and_then(|p| p.get("arguments"))
                .map(|a| redacted(redactor, a)),
            _ => None,
        };
        Some(Opened {
            seq: frame.seq,
            start_ns: at,
            dir: frame.dir,
            method,
            tool: frame.tool.clone(),
            prompt,
            id: frame.id.as_deref().and_then(request_id),
            protocol: frame.protocol.clone(),
            tokens: frame.tokens,
            meta_tokens: frame.meta_tokens,
            bytes: frame.bytes,
            parent,
            arguments,
        })
    }

    fn span(&mut self, opened: Opened, end: End, end_ns: u64) -> Span {
        self.operations += 1;
        let client_sent = matches!(opened.dir, Direction::C2s | Direction::C2p);
        let protocol = opened.protocol.clone().or_else(|| match end {
            End::Answered(f, _) => f.protocol.clone(),
            _ => None,
        });
        let mut attributes: Vec<KeyValue> = vec![string("mcp.method.name", opened.method.clone())];
        if let Some(tool) = &opened.tool {
            attributes.push(string("gen_ai.tool.name", tool.clone()));
            attributes.push(string("gen_ai.operation.name", "execute_tool"));
        }
        if let Some(prompt) = &opened.prompt {
            attributes.push(string("gen_ai.prompt.name", prompt.clone()));
        }
        if let Some(id) = &opened.id {
            attributes.push(string("jsonrpc.request.id", id.clone()));
        }
        if let Some(p) = &protocol {
            attributes.push(string("mcp.protocol.version", p.clone()));
        }
        if !stateless(protocol.as_deref()) {
            attributes.push(string("mcp.session.id", hex::encode(self.ids.trace_id())));
        }
        attributes.push(string("network.transport", "pipe"));
        let (error_type, message) = match end {
            End::Answered(f, _) if f.kind == FrameKind::Error => {
                let error = json_of(f).and_then(|j| j.get("error").cloned());
                let message = error
                    .as_ref()
                    .and_then(|e| e.get("message")?.as_str().map(str::to_string));
                if let Some(code) = f.error_code {
                    attributes.push(signed("rpc.response.status_code", code));
                }
                let kind = f
                    .error_code
                    .map_or("jsonrpc_error".to_string(), |c| c.to_string());
                (Some(kind), message.unwrap_or_default())
            }
            End::Answered(f, _) if f.is_error == Some(true) => {
                (Some("tool_error".into()), String::new())
            }
            End::Unanswered => (Some(UNANSWERED.into()), String::new()),
            _ => (None, String::new()),
        };
        if let Some(kind) = &error_type {
            attributes.push(string("error.type", kind.clone()));
        }
        attributes.extend([
            string("ctxopt.server.name", self.server_name.clone()),
            string("ctxopt.tokenizer", self.tokenizer.clone()),
            string(
                "ctxopt.origin",
                if matches!(opened.dir, Direction::C2p) {
                    "injected"
                } else {
                    "relayed"
                },
            ),
            int("ctxopt.request.seq", opened.seq),
            int("ctxopt.request.tokens", opened.tokens),
            int("ctxopt.request.meta_tokens", opened.meta_tokens),
            int("ctxopt.request.bytes", opened.bytes),
        ]);
        if let End::Answered(f, delivered) = end {
            attributes.extend([
                int("ctxopt.response.seq", f.seq),
                int("ctxopt.response.tokens", f.tokens),
                int("ctxopt.response.meta_tokens", f.meta_tokens),
                int("ctxopt.response.bytes", f.bytes),
            ]);
            if let Some(d) = delivered {
                attributes.extend([
                    boolean("ctxopt.response.compacted", true),
                    int("ctxopt.response.delivered_tokens", d.tokens),
                    int("ctxopt.response.delivered_bytes", d.bytes),
                    int(
                        "ctxopt.response.saved_tokens",
                        f.tokens.saturating_sub(d.tokens),
                    ),
                ]);
            }
            if f.server_raw.is_some() {
                attributes.push(boolean("ctxopt.response.rewritten", true));
            }
            if client_sent {
                let seconds = end_ns.saturating_sub(opened.start_ns) as f64 / 1e9;
                self.metrics.operation(
                    &opened.method,
                    opened.tool.as_deref(),
                    error_type.as_deref(),
                    seconds,
                );
                if let Some(tool) = &opened.tool {
                    self.metrics.tool_tokens(tool, opened.tokens, f.tokens);
                }
            }
            if let Some(arguments) = &opened.arguments {
                attributes.push(string("gen_ai.tool.call.arguments", arguments.clone()));
            }
            if let (Some(redactor), Some(_)) = (&self.content, &opened.tool) {
                if let Some(result) =
                    json_of(f).and_then(|j| j.get("result").map(|r| redacted(redactor, r)))
                {
                    attributes.push(string("gen_ai.tool.call.result", result));
                }
            }
        }
        let target = opened.tool.as_ref().or(opened.prompt.as_ref());
        let name = match target {
            Some(t) => format!("{} {t}", opened.method),
            None => opened.method.clone(),
        };
        let (trace_id, parent_span_id, flags, trace_state) = match &opened.parent {
            Some(p) => (
                p.trace_id,
                p.span_id,
                u32::from(p.flags),
                p.trace_state.clone(),
            ),
            None => (
                self.ids.trace_id(),
                self.ids.session_span_id(),
                1,
                String::new(),
            ),
        };
        Span {
            trace_id: trace_id.to_vec(),
            span_id: self.ids.span_id(opened.seq).to_vec(),
            trace_state,
            parent_span_id: parent_span_id.to_vec(),
            flags,
            name,
            kind: if client_sent {
                SpanKind::Client
            } else {
                SpanKind::Server
            } as i32,
            start_time_unix_nano: opened.start_ns,
            end_time_unix_nano: end_ns.max(opened.start_ns),
            attributes,
            status: error_type.map(|_| Status {
                message,
                code: StatusCode::Error as i32,
            }),
            ..Default::default()
        }
    }

    fn session_span(&self, end_ns: u64, exit: Option<&ExitStatus>) -> Span {
        let mut attributes = vec![
            string("ctxopt.server.name", self.server_name.clone()),
            string("ctxopt.tokenizer", self.tokenizer.clone()),
            string("network.transport", "pipe"),
            int("ctxopt.operations", self.operations),
        ];
        if !stateless(self.last_protocol.as_deref()) {
            attributes.push(string("mcp.session.id", hex::encode(self.ids.trace_id())));
        }
        if let Some(p) = &self.last_protocol {
            attributes.push(string("mcp.protocol.version", p.clone()));
        }
        if let Some(code) = exit.and_then(|e| e.code) {
            attributes.push(signed("ctxopt.exit.code", i64::from(code)));
        }
        if let Some(signal) = exit.and_then(|e| e.signal) {
            attributes.push(signed("ctxopt.exit.signal", i64::from(signal)));
        }
        Span {
            trace_id: self.ids.trace_id().to_vec(),
            span_id: self.ids.session_span_id().to_vec(),
            flags: 1,
            name: format!("session {}", self.server_name),
            kind: SpanKind::Internal as i32,
            start_time_unix_nano: self.started_ns,
            end_time_unix_nano: end_ns.max(self.started_ns),
            attributes,
            ..Default::default()
        }
    }
}
