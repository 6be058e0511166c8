//! The few frames the proxy takes part in when it injects tools (`--inject` other than
//! `none`), compacts results or hides tools: [`Interceptor`], the relay's
//! [`FrameHandler`]; every other frame passes the relay untouched.
//!
//! - **Client → server**: a `tools/call` to an injected tool is consumed (logged `c2p`) and
//!   answered on a worker thread (logged `p2c`), never forwarded; a `notifications/cancelled`
//!   for such a call is consumed too, and the answer is then not sent. `tools/list`,
//!   `initialize` and `server/discover` requests are forwarded, their ids remembered; when
//!   the server has no tools capability the proxy answers `tools/list` itself. The relay
//!   logs a taken frame `c2p` and writes and logs the answers `p2c`
//!   ([`crate::relay::answers`]).
//! - **Server → client**: only the responses to those remembered requests are parsed; a
//!   `tools/list` result gains the injected tools (last page only), a handshake result
//!   without `capabilities.tools` gains it. The rewritten frame is what the client receives;
//!   the log keeps the server's original beside it (`server_raw`).
//! - **Compaction and hidden tools** (`--compact-results`, `--hide-tools`, `--only-tools`):
//!   every `tools/call` is looked at; a call to a hidden tool is answered with an error and
//!   never forwarded; a forwarded call's id is remembered, and an oversized result is
//!   replaced by its compacted frame ([`Replaced::Separately`]: the server's frame is logged
//!   `s2c` as it came, the compacted one `p2c` after it, naming it in `compacts`).
//!
//! The checks on the relay threads are byte searches: a frame is parsed only when it
//! contains one of the method names above, or the name of an injected tool. They see whole
//! frames only: a long frame the pump writes on as it arrives is never checked, and the
//! pump streams only frames these checks cannot act on (see [`crate::relay::pump`] and
//! [`FrameHandler::sees_whole`]).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use memchr::memmem::Finder;
use serde_json::Value;

use crate::evidence::hold_back::HoldBack;
use crate::framelog::json_scan::{find, object_members, root};
use crate::framelog::Direction;
use crate::injected::tool_filter::ToolFilter;
use crate::injected::{tools_list, Bridge, ResultVerdict};
use crate::protocol;
use crate::relay::handler::{ClientVerdict, FrameHandler, Replaced, ServerVerdict};
use crate::sync::lock;

/// Which client request a remembered id belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// `tools/list`: extend its result.
    ToolsList,
    /// `initialize` or `server/discover`: make sure the result declares tools.
    Handshake,
}

/// What a response ends the watch of.
enum Awaited {
    /// The result of a forwarded `tools/call`, which may be compacted.
    Result {
        /// The tool called.
        tool: String,
        /// The call's arguments.
        arguments: Value,
    },
    /// The answer to a watched request, which may be rewritten.
    Answer(Watched),
}

/// How many answered injected-call ids are remembered, so that a cancellation arriving
/// after the answer is still recognised as ours (and not forwarded to the server).
const ANSWERED_KEPT: usize = 256;

#[derive(Debug, Default)]
struct Calls {
    /// Injected calls being answered, by id text, with their cancellation flag.
    in_flight: HashMap<String, Arc<AtomicBool>>,
    /// Ids of injected calls already answered or cancelled, newest last.
    answered: VecDeque<String>,
}

/// Shared by the `c2s` and `s2c` pumps and the workers answering injected calls.
pub(crate) struct Interceptor {
    bridge: Arc<Bridge>,
    watched: Mutex<HashMap<String, Watched>>,
    watched_count: AtomicUsize,
    serves_tools_list: AtomicBool,
    calls: Arc<Mutex<Calls>>,
    tool_names: Vec<Finder<'static>>,
    /// Whether every `tools/call` is looked at (compaction, hidden tools).
    sees_calls: bool,
    /// Forwarded `tools/call` requests whose results may be compacted: tool and arguments
    /// by id text.
    calls_out: Mutex<HashMap<String, (String, Value)>>,
    calls_out_count: AtomicUsize,
    /// Changed tools held back (`--hold-changed-tools`).
    hold: Option<HoldBack>,
}

impl std::fmt::Debug for Interceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interceptor")
            .field("serves_tools_list", &self.serves_tools_list)
            .finish_non_exhaustive()
    }
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
    protocol::error_frame(&id, protocol::INVALID_PARAMS, "Unknown tool", None)
}

/// An id as a map key: its canonical JSON text.
fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Interceptor {
    /// An interceptor answering for `bridge` (with the tools of its selection).
    pub(crate) fn new(bridge: Arc<Bridge>) -> Interceptor {
        let tool_names = bridge
            .names()
            .definitions()
            .iter()
            .filter_map(|d| d["name"].as_str())
            .map(|n| Finder::new(n.as_bytes()).into_owned())
            .collect();
        let sees_calls = bridge.sees_calls();
        Interceptor {
            bridge,
            watched: Mutex::new(HashMap::new()),
            watched_count: AtomicUsize::new(0),
            serves_tools_list: AtomicBool::new(false),
            calls: Arc::new(Mutex::new(Calls::default())),
            tool_names,
            sees_calls,
            calls_out: Mutex::new(HashMap::new()),
            calls_out_count: AtomicUsize::new(0),
            hold: None,
        }
    }

    /// The interceptor holding changed tools back with `hold`: it then looks at every
    /// `tools/call`.
    pub(crate) fn holding_back(mut self, hold: HoldBack) -> Interceptor {
        self.hold = Some(hold);
        self.sees_calls = true;
        self
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

    fn tools_list_answer(&self, request: &Value, id: &Value) -> Vec<u8> {
        let mut result = self.bridge.own_tools_list();
        if protocol::is_modern(request) {
            protocol::stamp_modern(&mut result);
            protocol::stamp_cacheable(&mut result);
        }
        protocol::result_frame(id, result).into_bytes()
    }

    /// The answer to a call of an injected tool, run on one of the relay's workers; `None`
    /// when the call is for another tool (it is then forwarded).
    fn start_call(&self, request: &Value, id: &Value, frame: &[u8]) -> Option<ClientVerdict> {
        let name = request
            .get("params")
            .and_then(|p| p.get("name"))
            .and_then(Value::as_str);
        self.bridge.lookup(name?)?;
        let key = id_key(id);
        let cancelled = Arc::new(AtomicBool::new(false));
        lock(&self.calls)
            .in_flight
            .insert(key.clone(), cancelled.clone());
        let bridge = Arc::clone(&self.bridge);
        let calls = Arc::clone(&self.calls);
        let text = String::from_utf8_lossy(split_ending(frame).0).into_owned();
        Some(ClientVerdict::AnswerLater(Box::new(move || {
            finish_call(&bridge, &calls, &key, &text, &cancelled)
        })))
    }

    /// The error answering a call to a hidden server tool; `None` for any other call.
    fn refuse_hidden(&self, request: &Value, id: &Value) -> Option<ClientVerdict> {
        let name = request
            .pointer("/params/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.bridge.hides(name) {
            return None;
        }
        let error = protocol::error_frame(
            id,
            protocol::INVALID_PARAMS,
            &ToolFilter::refusal(name),
            None,
        );
        Some(ClientVerdict::Answer(error.into_bytes()))
    }

    /// The error answering a call to a tool held back; `None` for any other call.
    fn refuse_held(&self, request: &Value, id: &Value) -> Option<ClientVerdict> {
        let name = request.pointer("/params/name").and_then(Value::as_str)?;
        let (message, data) = self.hold.as_ref()?.refusal(name)?;
        tracing::warn!("{message}");
        let error = protocol::error_frame(id, protocol::INVALID_PARAMS, &message, Some(data));
        Some(ClientVerdict::Answer(error.into_bytes()))
    }

    /// Remembers a forwarded call whose result may be compacted.
    fn watch_call(&self, request: &Value, id: &Value) {
        if self.bridge.compaction().is_none() {
            return;
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
    }

    /// Takes a `notifications/cancelled` for an injected call; `false` for any other. A
    /// cancellation of a forwarded call whose result is watched ends that watch (and is
    /// forwarded, since the server runs the call): a late answer passes as it comes.
    fn cancel(&self, msg: &Value) -> bool {
        let Some(id) = msg.get("params").and_then(|p| p.get("requestId")) else {
            return false;
        };
        let key = id_key(id);
        {
            let calls = lock(&self.calls);
            if let Some(flag) = calls.in_flight.get(&key) {
                flag.store(true, Ordering::Relaxed);
                return true;
            }
            if calls.answered.contains(&key) {
                return true;
            }
        }
        self.unwatch_call(&key);
        false
    }

    /// Forgets the forwarded call `key`: its tool and arguments, when it was watched.
    fn unwatch_call(&self, key: &str) -> Option<(String, Value)> {
        let call = lock(&self.calls_out).remove(key)?;
        self.calls_out_count.fetch_sub(1, Ordering::Release);
        Some(call)
    }

    /// Ends the watch of the request `key` a response answers: what was awaited, if anything.
    fn end_watch(&self, key: &str) -> Option<Awaited> {
        if let Some((tool, arguments)) = self.unwatch_call(key) {
            return Some(Awaited::Result { tool, arguments });
        }
        let what = lock(&self.watched).remove(key)?;
        self.watched_count.fetch_sub(1, Ordering::Release);
        Some(Awaited::Answer(what))
    }

    /// Whether a server frame may be one the proxy rewrites: a response to a `tools/list`
    /// or handshake request it is waiting for. The `c2s` pump registers such a request
    /// before it forwards it, so once this is `false` a frame the server is writing cannot
    /// be the answer to one (and may be relayed as it arrives).
    fn awaits_server_answer(&self) -> bool {
        self.watched_count.load(Ordering::Acquire) > 0
            || self.calls_out_count.load(Ordering::Acquire) > 0
    }

    /// The verdict on the result of a watched call: compacted, left whole, or relayed.
    fn compacted(
        &self,
        text: &str,
        ending: &[u8],
        tool: &str,
        arguments: &Value,
    ) -> Option<ServerVerdict> {
        match self.bridge.compact_response(text, tool, arguments) {
            ResultVerdict::Relay => None,
            ResultVerdict::LeftWhole(left) => Some(ServerVerdict::LeftWhole(left)),
            ResultVerdict::Compacted(compacted) => {
                let mut bytes = compacted.frame.into_bytes();
                bytes.extend_from_slice(ending);
                Some(ServerVerdict::Replace {
                    frame: bytes,
                    log: Replaced::Separately,
                })
            }
        }
    }

    /// What to write instead of a server frame, when the proxy rewrites or compacts it.
    ///
    /// A response to a watched id ends the watch whatever its bytes: one that is not UTF-8
    /// is looked at through a lossy copy, only to find its id, and relayed as it came.
    fn rewrite(&self, frame: &[u8]) -> Option<ServerVerdict> {
        if !self.awaits_server_answer() {
            return None;
        }
        let (body, ending) = split_ending(frame);
        let Ok(text) = std::str::from_utf8(body) else {
            // Nothing to rewrite or compact in it: the watch ends, the frame passes.
            self.end_watch(&response_id(&String::from_utf8_lossy(body))?);
            return None;
        };
        let what = match self.end_watch(&response_id(text)?)? {
            Awaited::Result { tool, arguments } => {
                return self.compacted(text, ending, &tool, &arguments)
            }
            Awaited::Answer(what) => what,
        };
        let span = root(text);
        let result = &text[find(text, &object_members(text, span), "result")?];
        let new_result = match what {
            Watched::ToolsList => {
                let held = self.hold.as_ref().and_then(|h| h.hold_page(result));
                match self
                    .bridge
                    .extend_tools_list(held.as_deref().unwrap_or(result))
                {
                    Some(ext) => {
                        for note in ext.notes() {
                            tracing::warn!("{note}");
                        }
                        ext.result
                    }
                    None => held?,
                }
            }
            Watched::Handshake => {
                if let Some(hold) = &self.hold {
                    hold.handshake(result);
                }
                let with_tools = tools_list::ensure_tools_capability(result)?;
                self.serves_tools_list.store(true, Ordering::Relaxed);
                with_tools
            }
        };
        let mut rewritten = tools_list::with_result(text, &new_result)?.into_bytes();
        rewritten.extend_from_slice(ending);
        Some(ServerVerdict::Replace {
            frame: rewritten,
            log: Replaced::WithServerRaw(text.to_string()),
        })
    }
}

/// The id (as a map key) of a response frame's text; `None` for anything else (a request
/// or notification, which has a `method`, a batch, or a frame with no id to read).
fn response_id(text: &str) -> Option<String> {
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
    Some(id_key(&id))
}

/// Answers a call (on a worker): the response, or `None` when it was cancelled.
fn finish_call(
    bridge: &Bridge,
    calls: &Mutex<Calls>,
    key: &str,
    request: &str,
    cancelled: &AtomicBool,
) -> Option<Vec<u8>> {
    let response = if cancelled.load(Ordering::Relaxed) {
        None
    } else {
        // `None` only when the tool was renamed away (a new listing) since the call was
        // recognised: the client asked for a name we no longer offer.
        Some(
            bridge
                .answer(request)
                .unwrap_or_else(|| unknown_tool(request)),
        )
    };
    // Decide under the lock, so a cancellation either lands before (no answer) or finds
    // the call answered.
    let mut calls = lock(calls);
    calls.in_flight.remove(key);
    calls.answered.push_back(key.to_string());
    if calls.answered.len() > ANSWERED_KEPT {
        calls.answered.pop_front();
    }
    if cancelled.load(Ordering::Relaxed) {
        return None;
    }
    response.map(String::into_bytes)
}

impl FrameHandler for Interceptor {
    fn sees_whole(&self, dir: Direction) -> bool {
        // Any client frame may be a call to answer; a server frame only while a request
        // whose answer is rewritten is under way.
        dir != Direction::S2c || self.awaits_server_answer()
    }

    fn on_client_frame(&self, frame: &[u8]) -> ClientVerdict {
        let (body, _) = split_ending(frame);
        let watched = WATCHED_METHODS.iter().any(|m| contains(body, m));
        let cancel = contains(body, b"notifications/cancelled")
            && (self.has_calls() || self.calls_out_count.load(Ordering::Acquire) > 0);
        let call = (self.sees_calls && contains(body, b"\"tools/call\""))
            || self.tool_names.iter().any(|f| f.find(body).is_some());
        if !(watched || cancel || call) {
            return ClientVerdict::Pass;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(body) else {
            return ClientVerdict::Pass;
        };
        let Some(method) = msg.get("method").and_then(Value::as_str) else {
            return ClientVerdict::Pass;
        };
        match (method, msg.get("id")) {
            ("tools/list", Some(id)) => {
                if self.serves_tools_list.load(Ordering::Relaxed) {
                    return ClientVerdict::Answer(self.tools_list_answer(&msg, id));
                }
                self.watch(id, Watched::ToolsList);
            }
            ("initialize" | "server/discover", Some(id)) => self.watch(id, Watched::Handshake),
            ("tools/call", Some(id)) => {
                if let Some(verdict) = self
                    .refuse_hidden(&msg, id)
                    .or_else(|| self.start_call(&msg, id, frame))
                    .or_else(|| self.refuse_held(&msg, id))
                {
                    return verdict;
                }
                self.watch_call(&msg, id);
            }
            ("notifications/cancelled", None) if self.cancel(&msg) => return ClientVerdict::Take,
            _ => {}
        }
        ClientVerdict::Pass
    }

    fn on_server_frame(&self, frame: &[u8]) -> ServerVerdict {
        self.rewrite(frame).unwrap_or(ServerVerdict::Pass)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::injected::tools::Selection;
    use crate::store::{Scope, Store};

    /// A bridge over an in-memory store.
    fn bridge(selection: Selection) -> Bridge {
        let scope = Scope {
            workspace: "/w".into(),
            server: "s".into(),
            session: "t".into(),
        };
        Bridge::new(Store::open_in_memory().unwrap(), scope).with_selection(selection)
    }

    /// An interceptor over an in-memory store.
    fn interceptor(selection: Selection) -> Interceptor {
        Interceptor::new(Arc::new(bridge(selection)))
    }

    /// The frame a verdict writes instead, and the server's text it keeps.
    fn replaced(verdict: ServerVerdict) -> Option<(Vec<u8>, String)> {
        match verdict {
            ServerVerdict::Replace {
                frame,
                log: Replaced::WithServerRaw(original),
            } => Some((frame, original)),
            _ => None,
        }
    }

    fn passes(verdict: &ClientVerdict) -> bool {
        matches!(verdict, ClientVerdict::Pass)
    }

    #[test]
    fn only_the_response_to_a_watched_request_is_rewritten_keeping_its_line_ending() {
        let i = interceptor(Selection::BuildContext);
        let list = br#"{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}"#.to_vec();
        let mut crlf = list.clone();
        crlf.extend_from_slice(b"\r\n");
        // Nothing asked yet: relayed as it is.
        assert_eq!(i.on_server_frame(&crlf), ServerVerdict::Pass);
        assert!(!i.sees_whole(Direction::S2c));
        assert!(passes(&i.on_client_frame(
            b"{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/list\"}\n"
        )));
        assert!(
            i.sees_whole(Direction::S2c),
            "its answer must be seen whole"
        );
        // A server request reusing the id is not the answer.
        let request = br#"{"jsonrpc":"2.0","id":"a","method":"roots/list"}"#;
        assert_eq!(i.on_server_frame(request), ServerVerdict::Pass);
        let (rewritten, original) = replaced(i.on_server_frame(&crlf)).unwrap();
        assert_eq!(original.as_bytes(), list.as_slice());
        assert!(rewritten.ends_with(b"}}]}}\r\n"));
        let value: Value = serde_json::from_slice(&rewritten).unwrap();
        assert_eq!(value["result"]["tools"][0]["name"], "build_context");
        // Answered once: the same id again is not rewritten.
        assert_eq!(i.on_server_frame(&crlf), ServerVerdict::Pass);
        assert!(!i.sees_whole(Direction::S2c));
        assert!(i.sees_whole(Direction::C2s));
    }

    #[test]
    fn calls_to_other_tools_and_other_frames_pass() {
        let i = interceptor(Selection::All);
        let other = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"build_context.md"}}}"#;
        assert!(
            passes(&i.on_client_frame(other)),
            "the name in an argument is not a call"
        );
        assert!(passes(&i.on_client_frame(b"not json build_context\n")));
        let cancel =
            br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}"#;
        assert!(
            passes(&i.on_client_frame(cancel)),
            "nothing of ours to cancel"
        );
        let ours = br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_decisions","arguments":{}}}"#;
        let ClientVerdict::AnswerLater(answer) = i.on_client_frame(ours) else {
            panic!("a call of ours is answered later");
        };
        assert!(matches!(i.on_client_frame(cancel), ClientVerdict::Take));
        assert_eq!(answer(), None, "cancelled before it ran: no answer");
        assert!(
            matches!(i.on_client_frame(cancel), ClientVerdict::Take),
            "a late cancellation of an answered call is still ours"
        );
    }

    /// An interceptor compacting results over 500 tokens, forwarding every other call.
    fn compacting() -> Interceptor {
        let bridge = bridge(Selection::None).with_compaction(crate::compact::Limits {
            tokens: 500,
            tokenizer: crate::tokenizer::Tokenizer::O200kBase,
        });
        Interceptor::new(Arc::new(bridge))
    }

    /// Forwards a `tools/call` of the server's `dump` with `id` (its JSON text).
    fn forward_call(i: &Interceptor, id: &str) {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"dump","arguments":{{}}}}}}"#
        );
        assert!(passes(&i.on_client_frame(call.as_bytes())), "forwarded");
    }

    /// Forwarded calls still waiting for their answer (the count that keeps server frames
    /// gathered whole).
    fn watched_calls(i: &Interceptor) -> usize {
        i.calls_out_count.load(Ordering::Acquire)
    }

    #[test]
    fn a_response_to_a_watched_call_ends_the_watch_whatever_its_bytes() {
        let i = compacting();
        forward_call(&i, "1");
        forward_call(&i, "\"two\"");
        assert_eq!(watched_calls(&i), 2);
        assert!(
            i.sees_whole(Direction::S2c),
            "canary: its answer is awaited"
        );
        // A server request reusing the id does not answer it.
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#;
        assert_eq!(i.on_server_frame(request), ServerVerdict::Pass);
        assert_eq!(watched_calls(&i), 2);
        // Not UTF-8 (a Latin-1 byte in the text): relayed as it came, the watch ended.
        let mut latin1 =
            br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf"#.to_vec();
        latin1.push(0xE9);
        latin1.extend_from_slice(b"\"}]}}\n");
        assert!(std::str::from_utf8(&latin1).is_err());
        assert_eq!(i.on_server_frame(&latin1), ServerVerdict::Pass);
        assert_eq!(watched_calls(&i), 1);
        // A JSON-RPC error answers it too.
        let error = br#"{"jsonrpc":"2.0","id":"two","error":{"code":-32603,"message":"boom"}}"#;
        assert_eq!(i.on_server_frame(error), ServerVerdict::Pass);
        assert_eq!(watched_calls(&i), 0);
        assert!(
            !i.sees_whole(Direction::S2c),
            "later server frames are relayed as they arrive"
        );
    }

    #[test]
    fn a_cancelled_watched_call_is_no_longer_awaited_and_its_cancellation_is_forwarded() {
        let i = compacting();
        forward_call(&i, "3");
        forward_call(&i, "4");
        let cancel = |id: u64| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{id},"reason":"timeout"}}}}"#
            )
        };
        // A cancellation of a call nobody watches changes nothing.
        assert!(passes(&i.on_client_frame(cancel(9).as_bytes())));
        assert_eq!(watched_calls(&i), 2);
        assert!(
            passes(&i.on_client_frame(cancel(3).as_bytes())),
            "the server must hear of it"
        );
        assert_eq!(watched_calls(&i), 1);
        // A late answer to the cancelled call is relayed as it came.
        let late = br#"{"jsonrpc":"2.0","id":3,"result":{"content":[]}}"#;
        assert_eq!(i.on_server_frame(late), ServerVerdict::Pass);
        assert_eq!(watched_calls(&i), 1, "the other call is still awaited");
        assert!(passes(&i.on_client_frame(cancel(4).as_bytes())));
        assert_eq!(watched_calls(&i), 0);
        assert!(!i.sees_whole(Direction::S2c));
    }

    #[test]
    fn a_tools_list_answer_that_is_not_utf8_ends_its_watch_and_passes() {
        let i = interceptor(Selection::BuildContext);
        let list = b"{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}\n";
        assert!(passes(&i.on_client_frame(list)));
        assert!(
            i.sees_whole(Direction::S2c),
            "canary: its answer is awaited"
        );
        let mut answer =
            br#"{"jsonrpc":"2.0","id":5,"result":{"tools":[{"name":"x","description":""#.to_vec();
        answer.extend_from_slice(&[0xFF, 0xFE]);
        answer.extend_from_slice(b"\"}]}}\r\n");
        assert_eq!(i.on_server_frame(&answer), ServerVerdict::Pass);
        assert!(!i.sees_whole(Direction::S2c));
    }

    #[test]
    fn a_call_of_ours_is_answered_with_its_id() {
        let i = interceptor(Selection::All);
        let ours = br#"{"jsonrpc":"2.0","id":"x7","method":"tools/call","params":{"name":"get_decisions","arguments":{}}}"#;
        let ClientVerdict::AnswerLater(answer) = i.on_client_frame(ours) else {
            panic!("a call of ours is answered later");
        };
        let response: Value = serde_json::from_slice(&answer().unwrap()).unwrap();
        assert_eq!(response["id"], "x7");
        assert!(response["result"]["structuredContent"].is_object());
    }
}
