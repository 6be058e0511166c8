//! Turning a relayed frame (bytes, direction, time) into its frame-log record: kind, id,
//! pairing, latency, protocol revision, tokens and `_meta` tokens.

use std::collections::VecDeque;
use std::time::{Instant, SystemTime};

use base64::Engine as _;

use super::classify::{classify, Message, Revision, Shape};
use super::json_scan::root;
use super::meta_strip::strip_meta;
use super::pairing::{Pairing, Pending};
use super::record::{BatchItem, Direction, Frame, FrameKind, LineEnding};
use crate::tokenizer::Tokenizer;

/// A copy of one relayed frame, handed from the relay to the accounting task.
#[derive(Debug)]
pub struct Tapped {
    /// Which way it went.
    pub dir: Direction,
    /// The exact bytes relayed, line ending included.
    pub bytes: Vec<u8>,
    /// Wall-clock time when the relay began writing it on.
    pub at: SystemTime,
    /// Monotonic time when the relay began writing it on (for latencies).
    pub instant: Instant,
}

/// Per-item fields that batches and single messages share.
struct Accounted {
    method: Option<String>,
    tool: Option<String>,
    latency_us: Option<u64>,
    protocol: Option<String>,
    is_error: Option<bool>,
    task: Option<String>,
}

/// Most `input_required` results remembered for their retries; past it the oldest are
/// forgotten (a client that never retries must not grow the accounting without bound).
const MAX_AWAITING_INPUT: usize = 1024;

/// The accounting state of one connection: the tokenizer, pairing and the sequence counter.
#[derive(Debug)]
pub struct Accountant {
    tokenizer: Tokenizer,
    pairing: Pairing,
    seq: u64,
    /// `input_required` results awaiting their retry, oldest first: (key, `seq`), the key
    /// being the result's `requestState`, else its request's method and tool.
    awaiting_input: VecDeque<(String, u64)>,
}

/// What links an `input_required` result and its retry: the `requestState` when there is
/// one, else the method and tool of the request.
fn input_key(request_state: Option<&str>, method: Option<&str>, tool: Option<&str>) -> String {
    match request_state {
        Some(state) => format!("state\0{state}"),
        None => format!(
            "call\0{}\0{}",
            method.unwrap_or_default(),
            tool.unwrap_or_default()
        ),
    }
}

/// RFC 3339 UTC with microseconds.
pub(crate) fn rfc3339(at: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(at).to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn split_line_ending(bytes: &[u8]) -> (usize, LineEnding) {
    if bytes.ends_with(b"\r\n") {
        (bytes.len() - 2, LineEnding::Crlf)
    } else if bytes.ends_with(b"\n") {
        (bytes.len() - 1, LineEnding::Lf)
    } else {
        (bytes.len(), LineEnding::None)
    }
}

impl Accountant {
    /// A fresh connection counted with `tokenizer`.
    pub fn new(tokenizer: Tokenizer) -> Self {
        Accountant {
            tokenizer,
            pairing: Pairing::default(),
            seq: 0,
            awaiting_input: VecDeque::new(),
        }
    }

    /// `(tokens, meta_tokens)` of JSON text.
    fn token_pair(&self, text: &str) -> (u64, u64) {
        let tokens = self.tokenizer.count(text) as u64;
        let meta = strip_meta(text, root(text))
            .map(|stripped| tokens.saturating_sub(self.tokenizer.count(&stripped) as u64))
            .unwrap_or(0);
        (tokens, meta)
    }

    fn account(&mut self, dir: Direction, m: &Message, instant: Instant) -> Accounted {
        let mut out = Accounted {
            method: m.method.clone(),
            tool: m.tool.clone(),
            latency_us: None,
            protocol: None,
            is_error: None,
            task: m.revision.as_ref().and_then(|r| r.task_id.clone()),
        };
        match m.kind {
            FrameKind::Request => {
                let pending = Pending {
                    method: m.method.clone().unwrap_or_default(),
                    tool: m.tool.clone(),
                    at: instant,
                    protocol: m.request_protocol.clone(),
                    task: out.task.clone(),
                };
                let id = m.id.as_deref().unwrap_or_default();
                out.protocol = self.pairing.request(dir, id, pending);
            }
            FrameKind::Notification => {
                out.protocol = self.pairing.notification(m.request_protocol.clone());
            }
            FrameKind::Response | FrameKind::Error => {
                let id = m.id.as_deref().unwrap_or_default();
                match self.pairing.response(dir, id, m.result_protocol.as_deref()) {
                    Some(req) => {
                        out.latency_us =
                            Some(instant.saturating_duration_since(req.at).as_micros() as u64);
                        if req.method == "tools/call" && m.kind == FrameKind::Response {
                            out.is_error = Some(m.result_is_error == Some(true));
                        }
                        out.method = Some(req.method);
                        out.tool = req.tool;
                        out.protocol = req.protocol.or_else(|| self.pairing.current());
                        out.task = req.task.or(out.task);
                    }
                    None => out.protocol = self.pairing.current(),
                }
            }
            FrameKind::Batch | FrameKind::Unparseable => {}
        }
        out
    }

    fn batch_item(
        &mut self,
        dir: Direction,
        text: &str,
        m: &Message,
        instant: Instant,
    ) -> BatchItem {
        let a = self.account(dir, m, instant);
        let item = &text[m.span.clone()];
        let compact = serde_json::from_str::<serde_json::Value>(item)
            .map(|v| v.to_string())
            .unwrap_or_else(|_| item.to_string());
        let (tokens, meta_tokens) = self.token_pair(&compact);
        BatchItem {
            kind: m.kind,
            id: m.id.clone(),
            method: a.method,
            tool: a.tool,
            latency_us: a.latency_us,
            is_error: a.is_error,
            error_code: m.error_code,
            tokens,
            meta_tokens,
        }
    }

    /// Links `input_required` results and their retries: remembers a result that needs
    /// input (frame `seq`), and returns, for a request that retries one, that result's `seq`.
    fn rounds(&mut self, seq: u64, m: &Message, r: &Revision, a: &Accounted) -> Option<u64> {
        let state = r.request_state.as_deref();
        match m.kind {
            FrameKind::Response
                if r.result_type.as_deref() == Some(crate::protocol::INPUT_REQUIRED) =>
            {
                let key = input_key(state, a.method.as_deref(), a.tool.as_deref());
                if self.awaiting_input.len() == MAX_AWAITING_INPUT {
                    self.awaiting_input.pop_front();
                }
                self.awaiting_input.push_back((key, seq));
                None
            }
            FrameKind::Request if state.is_some() || r.has_input_responses => {
                let key = input_key(state, m.method.as_deref(), m.tool.as_deref());
                let at = self.awaiting_input.iter().position(|(k, _)| *k == key)?;
                self.awaiting_input.remove(at).map(|(_, seq)| seq)
            }
            _ => None,
        }
    }

    /// Counts a relayed frame that will not be logged: its `seq` is left out, so the gap
    /// shows in the log.
    pub fn skip(&mut self) {
        self.seq += 1;
    }

    /// The frame-log record of one relayed frame. Takes ownership of the bytes so a large
    /// frame becomes its `raw` text without a copy.
    pub fn frame(&mut self, tapped: Tapped) -> Frame {
        let Tapped {
            dir,
            mut bytes,
            at,
            instant,
        } = tapped;
        let wire_len = bytes.len() as u64;
        let (body_len, line_ending) = split_line_ending(&bytes);
        bytes.truncate(body_len);
        let seq = self.seq;
        self.seq += 1;
        let mut frame = Frame {
            seq,
            ts: rfc3339(at),
            dir,
            bytes: wire_len,
            line_ending,
            kind: FrameKind::Unparseable,
            id: None,
            method: None,
            tool: None,
            latency_us: None,
            protocol: None,
            is_error: None,
            error_code: None,
            result_type: None,
            retries: None,
            task: None,
            subscription: None,
            tokens: 0,
            meta_tokens: 0,
            items: None,
            raw: None,
            raw_b64: None,
            server_raw: None,
            compacts: None,
            left_whole: None,
            redactions: None,
            http: None,
        };
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(err) => {
                let bytes = err.into_bytes();
                frame.tokens = self.tokenizer.count_bytes(&bytes) as u64;
                frame.raw_b64 = Some(base64::engine::general_purpose::STANDARD.encode(&bytes));
                return frame;
            }
        };
        match classify(&text) {
            Shape::Unparseable => {
                frame.tokens = self.tokenizer.count(&text) as u64;
            }
            Shape::Single(m) => {
                let a = self.account(dir, &m, instant);
                (frame.tokens, frame.meta_tokens) = self.token_pair(&text);
                frame.kind = m.kind;
                if let Some(revision) = &m.revision {
                    frame.result_type = revision
                        .result_type
                        .clone()
                        .filter(|t| m.kind == FrameKind::Response && t != "complete");
                    frame.retries = self.rounds(seq, &m, revision, &a);
                    frame.subscription = revision.subscription.clone();
                }
                frame.task = a.task.filter(|_| {
                    is_task_method(a.method.as_deref(), frame.result_type.as_deref(), m.kind)
                });
                frame.id = m.id;
                frame.method = a.method;
                frame.tool = a.tool;
                frame.latency_us = a.latency_us;
                frame.protocol = a.protocol;
                frame.is_error = a.is_error;
                frame.error_code = m.error_code;
            }
            Shape::Batch(ms) => {
                let items = ms
                    .iter()
                    .map(|m| self.batch_item(dir, &text, m, instant))
                    .collect();
                (frame.tokens, frame.meta_tokens) = self.token_pair(&text);
                frame.kind = FrameKind::Batch;
                frame.protocol = self.pairing.current();
                frame.items = Some(items);
            }
        }
        frame.raw = Some(text);
        frame
    }
}

/// Whether a frame carries its task: a `tools/call` answer that is a task handle, or a
/// `tasks/*` request or answer.
fn is_task_method(method: Option<&str>, result_type: Option<&str>, kind: FrameKind) -> bool {
    match method {
        Some("tools/call") => kind == FrameKind::Response,
        Some(m) => m.starts_with("tasks/"),
        None => result_type == Some("task"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn tap(dir: Direction, text: &str, instant: Instant) -> Tapped {
        Tapped {
            dir,
            bytes: text.as_bytes().to_vec(),
            at: SystemTime::UNIX_EPOCH,
            instant,
        }
    }

    #[test]
    fn response_inherits_method_tool_latency_and_protocol() {
        let mut acc = Accountant::new(Tokenizer::CharsDiv4);
        let t0 = Instant::now();
        let req = acc.frame(tap(
            Direction::C2s,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}\r\n",
            t0,
        ));
        assert_eq!(req.line_ending, LineEnding::Crlf);
        assert!(req.meta_tokens > 0);
        let res = acc.frame(tap(
            Direction::S2c,
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":true}}\n",
            t0 + Duration::from_millis(3),
        ));
        assert_eq!(res.seq, 1);
        assert_eq!(res.method.as_deref(), Some("tools/call"));
        assert_eq!(res.tool.as_deref(), Some("echo"));
        assert_eq!(res.latency_us, Some(3000));
        assert_eq!(res.protocol.as_deref(), Some("2026-07-28"));
        assert_eq!(res.is_error, Some(true));
        assert_eq!(res.meta_tokens, 0);
        assert_eq!(
            res.raw.as_deref(),
            Some("{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"isError\":true}}")
        );
    }

    #[test]
    fn accounting_is_deterministic() {
        let t0 = Instant::now();
        let frames = [
            (Direction::C2s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"_meta\":{\"k\":[1,2]}}}\n"),
            (Direction::S2c, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"_meta\":{\"x\":\"y\"}}}]\r\n"),
            (Direction::S2c, "banner"),
        ];
        let render = || {
            let mut acc = Accountant::new(Tokenizer::O200kBase);
            frames
                .iter()
                .enumerate()
                .map(|(i, (dir, text))| {
                    let f = acc.frame(tap(*dir, text, t0 + Duration::from_micros(i as u64)));
                    serde_json::to_string(&f).unwrap()
                })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(render(), render());
    }

    #[test]
    fn invalid_utf8_is_kept_as_base64() {
        let mut acc = Accountant::new(Tokenizer::CharsDiv4);
        let f = acc.frame(Tapped {
            dir: Direction::S2c,
            bytes: b"ab\xff".to_vec(),
            at: SystemTime::UNIX_EPOCH,
            instant: Instant::now(),
        });
        assert_eq!(f.kind, FrameKind::Unparseable);
        assert_eq!(f.line_ending, LineEnding::None);
        assert_eq!(f.raw_b64.as_deref(), Some("YWL/"));
        assert_eq!(f.raw, None);
    }
}
