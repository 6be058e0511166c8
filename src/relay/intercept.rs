//! The few frames the proxy takes part in when it injects tools (`--inject` other than
//! `none`); every other frame passes the relay untouched.
//!
//! - **Client → server**: a `tools/call` to an injected tool is consumed (logged `c2p`) and
//!   answered on a worker thread (logged `p2c`), never forwarded; a `notifications/cancelled`
//!   for such a call is consumed too, and the answer is then not sent. `tools/list`,
//!   `initialize` and `server/discover` requests are forwarded, their ids remembered; when
//!   the server has no tools capability the proxy answers `tools/list` itself.
//! - **Server → client**: only the responses to those remembered requests are parsed; a
//!   `tools/list` result gains the injected tools (last page only), a handshake result
//!   without `capabilities.tools` gains it. The rewritten frame is what the client receives;
//!   the log keeps the server's original beside it (`server_raw`).
//!
//! The checks on the relay threads are byte searches: a frame is parsed only when it
//! contains one of the method names above, or the name of an injected tool. They see whole
//! frames only: a long frame the pump writes on as it arrives is never checked, and the
//! pump streams only frames these checks cannot act on (see [`super::pump`] and
//! [`Interceptor::awaits_server_answer`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use memchr::memmem::Finder;
use serde_json::Value;

use super::outlet::Outlet;
use super::tap::TapSender;
use crate::bridge::tool_filter::ToolFilter;
use crate::bridge::{inject, jsonrpc, Bridge};
use crate::framelog::json_scan::{find, object_members, root};
use crate::framelog::Direction;

/// Which client request a remembered id belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// `tools/list`: extend its result.
    ToolsList,
    /// `initialize` or `server/discover`: make sure the result declares tools.
    Handshake,
}

/// How many answered injected-call ids are remembered, so that a cancellation arriving
/// after the answer is still recognised as ours (and not forwarded to the server).
const ANSWERED_KEPT: usize = 256;

/// The longest an injected call waits for the tap to ingest what was relayed before it. The
/// tap is usually milliseconds behind; on a loaded machine, right after start (while the
/// tokenizer loads), it can be seconds behind, and an answer built without the frames the
/// client has already seen would be wrong rather than late.
const CATCH_UP_LIMIT: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Calls {
    /// Injected calls being answered, by id text, with their cancellation flag.
    in_flight: HashMap<String, Arc<AtomicBool>>,
    /// Ids of injected calls already answered or cancelled, newest last.
    answered: VecDeque<String>,
}

/// What becomes of a server frame.
#[derive(Debug, PartialEq, Eq)]
pub enum ServerFrame {
    /// Relayed as it is.
    Pass,
    /// Rewritten: the frame to write instead, and the server's original text (logged
    /// `server_raw`).
    Rewritten(Vec<u8>, String),
    /// A compacted `tools/call` result: the frame to write instead (logged `p2c` after the
    /// server's, which is logged `s2c` as received).
    Compacted(Vec<u8>),
}

/// Shared by the `c2s` and `s2c` pumps and the workers answering injected calls.
pub struct Interceptor {
    bridge: Arc<Bridge>,
    to_client: Arc<Outlet>,
    tap: TapSender,
    watched: Mutex<HashMap<String, Watched>>,
    watched_count: AtomicUsize,
    serves_tools_list: AtomicBool,
    calls: Mutex<Calls>,
    /// Workers that have not finished (answer written and handed to the tap).
    workers: AtomicUsize,
    tool_names: Vec<Finder<'static>>,
    answer_delay: Duration,
    /// Whether every `tools/call` is looked at (compaction, hidden tools).
    sees_calls: bool,
    /// Forwarded `tools/call` requests whose results may be compacted: tool and arguments
    /// by id text.
    calls_out: Mutex<HashMap<String, (String, Value)>>,
    calls_out_count: AtomicUsize,
}

impl std::fmt::Debug for Interceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interceptor")
            .field("serves_tools_list", &self.serves_tools_list)
            .finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Byte patterns of the client requests whose responses may be rewritten.
const WATCHED_METHODS: [&[u8]; 3] = [b"\"tools/list\"", b"\"initialize\"", b"\"server/discover\""];

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

/// The frame without its line ending, and the line ending.
fn split_ending(frame: &[u8]) -> (&[u8], &[u8]) {
    let body = frame
        .strip_suffix(b"\r\n")
        .or_else(|| frame.strip_suffix(b"\n"))
        .unwrap_or(frame);
    frame.split_at(body.len())
}

/// The error for a call whose tool is no longer offered.
fn unknown_tool(request: &str) -> String {
    let id = serde_json::from_str::<Value>(request)
        .ok()
        .and_then(|r| r.get("id").cloned())
        .unwrap_or(Value::Null);
    jsonrpc::error_frame(&id, jsonrpc::INVALID_PARAMS, "Unknown tool", None)
}

/// An id as a map key: its canonical JSON text.
fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Interceptor {
    /// An interceptor answering for `bridge`, writing its answers through `to_client` (the
    /// `s2c` pump's outlet, whose lock keeps frames whole) and logging them through `tap`.
    /// `answer_delay` holds every injected answer back that long (for tests of
    /// cancellation; zero otherwise).
    pub fn new(
        bridge: Arc<Bridge>,
        to_client: Arc<Outlet>,
        tap: TapSender,
        answer_delay: Duration,
    ) -> Interceptor {
        let tool_names = bridge
            .names()
            .definitions()
            .iter()
            .filter_map(|d| d["name"].as_str())
            .map(|n| Finder::new(n.as_bytes()).into_owned())
            .collect();
        let bridge_sees_calls = bridge.sees_calls();
        Interceptor {
            bridge,
            to_client,
            tap,
            watched: Mutex::new(HashMap::new()),
            watched_count: AtomicUsize::new(0),
            serves_tools_list: AtomicBool::new(false),
            calls: Mutex::new(Calls::default()),
            workers: AtomicUsize::new(0),
            tool_names,
            answer_delay,
            sees_calls: bridge_sees_calls,
            calls_out: Mutex::new(HashMap::new()),
            calls_out_count: AtomicUsize::new(0),
        }
    }

    /// Looks at a client frame before it is forwarded; `true` when the proxy consumed it
    /// (it is then logged `c2p` and must not reach the server).
    pub fn on_client_frame(self: &Arc<Self>, frame: &[u8]) -> bool {
        let (body, _) = split_ending(frame);
        let watched = WATCHED_METHODS.iter().any(|m| contains(body, m));
        let cancel = contains(body, b"notifications/cancelled") && self.has_calls();
        let call = (self.sees_calls && contains(body, b"\"tools/call\""))
            || self.tool_names.iter().any(|f| f.find(body).is_some());
        if !(watched || cancel || call) {
            return false;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(body) else {
            return false;
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return false;
        };
        // The consumed frame's place in the log comes before anything the proxy answers.
        let ticket = self.tap.ticket();
        let order = TapSender::order_of(&ticket);
        let consumed = match (method, msg.get("id")) {
            ("tools/list", Some(id)) => {
                if self.serves_tools_list.load(Ordering::Relaxed) {
                    self.answer_tools_list(&msg, id);
                    true
                } else {
                    self.watch(id, Watched::ToolsList);
                    false
                }
            }
            ("initialize" | "server/discover", Some(id)) => {
                self.watch(id, Watched::Handshake);
                false
            }
            ("tools/call", Some(id)) => {
                self.refuse_hidden(&msg, id)
                    || self.start_call(&msg, id, frame, order)
                    || self.watch_call(&msg, id)
            }
            ("notifications/cancelled", None) => self.cancel(&msg),
            _ => false,
        };
        if consumed {
            self.tap.relayed(ticket, Direction::C2p, frame.to_vec());
        } else {
            self.tap.not_relayed(ticket);
        }
        consumed
    }

    fn has_calls(&self) -> bool {
        let calls = lock(&self.calls);
        !calls.in_flight.is_empty() || !calls.answered.is_empty()
    }

    fn watch(&self, id: &Value, what: Watched) {
        // A repeated id replaces the entry: counted once, so the count falls back to zero.
        if lock(&self.watched).insert(id_key(id), what).is_none() {
            self.watched_count.fetch_add(1, Ordering::Release);
        }
    }

    /// Answers a call to a hidden server tool with an error; `false` for any other call.
    fn refuse_hidden(&self, request: &Value, id: &Value) -> bool {
        let name = request
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.bridge.hides(name) {
            return false;
        }
        self.send(jsonrpc::error_frame(
            id,
            jsonrpc::INVALID_PARAMS,
            &ToolFilter::refusal(name),
            None,
        ));
        true
    }

    /// Remembers a forwarded call whose result may be compacted; never consumes it.
    fn watch_call(&self, request: &Value, id: &Value) -> bool {
        if self.bridge.compaction().is_none() {
            return false;
        }
        let params = request.get("params");
        let name = params
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default();
        let arguments = params
            .and_then(|p| p.get("arguments"))
            .cloned()
            .unwrap_or(Value::Null);
        if lock(&self.calls_out)
            .insert(id_key(id), (name.to_string(), arguments))
            .is_none()
        {
            self.calls_out_count.fetch_add(1, Ordering::Release);
        }
        false
    }

    /// Sends a frame the proxy originated to the client and logs it `p2c`.
    fn send(&self, text: String) {
        let mut bytes = text.into_bytes();
        bytes.push(b'\n');
        let ticket = self.tap.ticket();
        match self.to_client.write_frame(&bytes) {
            Ok(true) => self.tap.relayed(ticket, Direction::P2c, bytes),
            _ => self.tap.not_relayed(ticket),
        }
    }

    fn answer_tools_list(&self, request: &Value, id: &Value) {
        let mut result = self.bridge.own_tools_list();
        if jsonrpc::is_modern(request) {
            jsonrpc::stamp_modern(&mut result);
            jsonrpc::stamp_cacheable(&mut result);
        }
        self.send(jsonrpc::result_frame(id, result));
    }

    /// Starts answering a call to an injected tool on a worker thread; `false` when the
    /// call is for another tool (it is then forwarded).
    fn start_call(self: &Arc<Self>, request: &Value, id: &Value, frame: &[u8], order: u64) -> bool {
        let name = request
            .get("params")
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str);
        if name.and_then(|n| self.bridge.lookup(n)).is_none() {
            return false;
        }
        let key = id_key(id);
        let cancelled = Arc::new(AtomicBool::new(false));
        lock(&self.calls)
            .in_flight
            .insert(key.clone(), cancelled.clone());
        let this = Arc::clone(self);
        let text = String::from_utf8_lossy(split_ending(frame).0).into_owned();
        self.workers.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("injected-call".into())
            .spawn(move || {
                this.finish_call(&key, &text, &cancelled, order);
                this.workers.fetch_sub(1, Ordering::AcqRel);
            });
        if let Err(err) = spawned {
            self.workers.fetch_sub(1, Ordering::AcqRel);
            // Without a worker the call cannot be answered: say so to the client.
            lock(&self.calls).in_flight.remove(&id_key(id));
            self.send(jsonrpc::error_frame(
                id,
                jsonrpc::INTERNAL_ERROR,
                &format!("ctxopt-proxy: cannot answer: {err}"),
                None,
            ));
        }
        true
    }

    fn finish_call(&self, key: &str, request: &str, cancelled: &AtomicBool, order: u64) {
        if !self.answer_delay.is_zero() {
            std::thread::sleep(self.answer_delay);
        }
        self.tap.wait_processed(order, CATCH_UP_LIMIT);
        let response = if cancelled.load(Ordering::Relaxed) {
            None
        } else {
            // `None` only when the tool was renamed away (a new listing) since the call
            // was recognised: the client asked for a name we no longer offer.
            Some(
                self.bridge
                    .answer(request)
                    .unwrap_or_else(|| unknown_tool(request)),
            )
        };
        // Decide under the lock, so a cancellation either lands before (no answer) or
        // finds the call answered.
        let send = {
            let mut calls = lock(&self.calls);
            calls.in_flight.remove(key);
            calls.answered.push_back(key.to_string());
            if calls.answered.len() > ANSWERED_KEPT {
                calls.answered.pop_front();
            }
            !cancelled.load(Ordering::Relaxed)
        };
        if let (true, Some(response)) = (send, response) {
            self.send(response);
        }
    }

    /// Waits (up to `limit`) until no injected call is being answered, so that a client
    /// that closes its end after asking still gets the answer. Then closes the client's
    /// outlet, which the `s2c` pump leaves open for these answers.
    pub fn finish(&self, limit: Duration) {
        let start = std::time::Instant::now();
        while self.workers.load(Ordering::Acquire) > 0 && start.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.to_client.close();
    }

    /// Consumes a `notifications/cancelled` for an injected call; `false` for any other.
    fn cancel(&self, msg: &Value) -> bool {
        let Some(id) = msg.get("params").and_then(|p| p.get("requestId")) else {
            return false;
        };
        let key = id_key(id);
        let calls = lock(&self.calls);
        if let Some(flag) = calls.in_flight.get(&key) {
            flag.store(true, Ordering::Relaxed);
            return true;
        }
        calls.answered.contains(&key)
    }

    /// Whether a server frame may be one the proxy rewrites: a response to a `tools/list`
    /// or handshake request it is waiting for. The `c2s` pump registers such a request
    /// before it forwards it, so once this is `false` a frame the server is writing cannot
    /// be the answer to one (and may be relayed as it arrives).
    pub fn awaits_server_answer(&self) -> bool {
        self.watched_count.load(Ordering::Acquire) > 0
            || self.calls_out_count.load(Ordering::Acquire) > 0
    }

    /// Looks at a server frame before it is relayed.
    pub fn on_server_frame(&self, frame: &[u8]) -> ServerFrame {
        self.rewrite(frame).unwrap_or(ServerFrame::Pass)
    }

    fn rewrite(&self, frame: &[u8]) -> Option<ServerFrame> {
        if !self.awaits_server_answer() {
            return None;
        }
        let (body, ending) = split_ending(frame);
        let text = std::str::from_utf8(body).ok()?;
        let span = root(text);
        if !text[span.clone()].starts_with('{') {
            return None;
        }
        let members = object_members(text, span);
        // A server request may reuse an id the client is waiting on: only responses count.
        if find(text, &members, "method").is_some() {
            return None;
        }
        let id: Value = serde_json::from_str(&text[find(text, &members, "id")?]).ok()?;
        let call = lock(&self.calls_out).remove(&id_key(&id));
        if let Some((tool, arguments)) = call {
            self.calls_out_count.fetch_sub(1, Ordering::Relaxed);
            let compacted = self.bridge.compact_response(text, &tool, &arguments)?;
            let mut bytes = compacted.frame.into_bytes();
            bytes.extend_from_slice(ending);
            return Some(ServerFrame::Compacted(bytes));
        }
        let what = {
            let mut watched = lock(&self.watched);
            let what = watched.remove(&id_key(&id))?;
            self.watched_count.fetch_sub(1, Ordering::Relaxed);
            what
        };
        let result = &text[find(text, &members, "result")?];
        let new_result = match what {
            Watched::ToolsList => {
                let ext = self.bridge.extend_tools_list(result)?;
                for note in ext.notes() {
                    eprintln!("{note}");
                }
                ext.result
            }
            Watched::Handshake => {
                let with_tools = inject::ensure_tools_capability(result)?;
                self.serves_tools_list.store(true, Ordering::Relaxed);
                with_tools
            }
        };
        let mut rewritten = inject::with_result(text, &new_result)?.into_bytes();
        rewritten.extend_from_slice(ending);
        Some(ServerFrame::Rewritten(rewritten, text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bridge::tools::Selection;
    use crate::framelog::writer::LogWriter;
    use crate::relay::stats::RelayStats;
    use crate::relay::tap::Tap;
    use crate::store::{Scope, Store};
    use crate::tokenizer::Tokenizer;

    /// An interceptor over an in-memory store, writing to a sink, with a tap that logs
    /// nothing.
    fn interceptor(selection: Selection) -> (Arc<Interceptor>, Tap) {
        let scope = Scope {
            workspace: "/w".into(),
            server: "s".into(),
            session: "t".into(),
        };
        let bridge = Bridge::new(Store::open_in_memory().unwrap(), scope).with_selection(selection);
        let header = crate::framelog::Header {
            format_version: crate::framelog::FORMAT_VERSION,
            proxy_version: "test".into(),
            tokenizer: "chars/4".into(),
            started: "2026-01-01T00:00:00Z".into(),
            server_name: "s".into(),
            server_argv: vec![],
            cwd: "/".into(),
            server_pid: None,
            proxy_pid: 1,
        };
        let (tap, sender) = Tap::start(
            header,
            LogWriter::disabled(),
            Tokenizer::CharsDiv4,
            Arc::new(RelayStats::default()),
            None,
        )
        .unwrap();
        let outlet = Arc::new(Outlet::new(std::io::sink()));
        let i = Interceptor::new(Arc::new(bridge), outlet, sender, Duration::ZERO);
        (Arc::new(i), tap)
    }

    #[test]
    fn only_the_response_to_a_watched_request_is_rewritten_keeping_its_line_ending() {
        let (i, _tap) = interceptor(Selection::BuildContext);
        let list = br#"{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}"#.to_vec();
        let mut crlf = list.clone();
        crlf.extend_from_slice(b"\r\n");
        // Nothing asked yet: relayed as it is.
        assert_eq!(i.on_server_frame(&crlf), ServerFrame::Pass);
        assert!(
            !i.on_client_frame(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\"}\n")
        );
        // A server request reusing the id is not the answer.
        let request = br#"{"jsonrpc":"2.0","id":"a","method":"roots/list"}"#;
        assert_eq!(i.on_server_frame(request), ServerFrame::Pass);
        let ServerFrame::Rewritten(rewritten, original) = i.on_server_frame(&crlf) else {
            panic!("not rewritten")
        };
        assert_eq!(original.as_bytes(), list.as_slice());
        assert!(rewritten.ends_with(b"}}]}}\r\n"));
        let value: Value = serde_json::from_slice(&rewritten).unwrap();
        assert_eq!(value["result"]["tools"][0]["name"], "build_context");
        // Answered once: the same id again is not rewritten.
        assert_eq!(i.on_server_frame(&crlf), ServerFrame::Pass);
    }

    #[test]
    fn calls_to_other_tools_and_other_frames_pass() {
        let (i, _tap) = interceptor(Selection::All);
        let other = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"build_context.md"}}}"#;
        assert!(
            !i.on_client_frame(other),
            "the name in an argument is not a call"
        );
        assert!(!i.on_client_frame(b"not json build_context\n"));
        let cancel =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
        assert!(!i.on_client_frame(cancel), "nothing of ours to cancel");
        let ours = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_decisions","arguments":{}}}"#;
        assert!(i.on_client_frame(ours));
    }
}
