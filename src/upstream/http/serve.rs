//! The HTTP upstream as the relay's [`Remote`]: the client's frames read from the relay, each
//! POSTed over a [`Connection`] (Streamable HTTP) or a [`LegacySse`] (the legacy HTTP+SSE
//! transport), every server message written back to the relay with its [`HttpFacts`]; a
//! request the server did not answer gets a JSON-RPC error naming the fault (`via: proxy` in
//! the log), and every fault a line in the log's trailer.
//!
//! Threads: `http-c2s` reads the client's frames in order and POSTs notifications and
//! responses itself (so they reach the server in the client's order), and `initialize` up
//! to its answer's headers (every later message needs its session id); each other request
//! runs on a thread of its own for its answer (an idle one reused, or a new
//! one), so a slow call never holds up the next message or a cancellation; once answered,
//! that thread reads the rest of the answer's event stream, so that its connection is used
//! again. `http-get` listens on the standalone GET stream once the session is
//! initialized, when the server offers one. In the legacy transport every POST is answered
//! at once (the answers come on the stream), so `http-c2s` POSTs every message itself, and
//! `http-sse` reads the one stream.
//!
//! With `--transport auto` the client's first message decides: POSTed as Streamable HTTP,
//! and when the server refuses it with 400, 404 or 405, the legacy stream is opened and the
//! message POSTed there (the specification's backwards compatibility).

use std::collections::{BTreeMap, HashSet};
use std::io::{self, BufRead, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Instant;

use super::auth::ProxyAuth;
use super::config::{HttpConfig, Transport};
use super::connection::{Connection, Outcome, ServerMessage};
use super::fault::Fault;
use super::legacy_sse::LegacySse;
use super::outgoing::{same_id, Outgoing};
use super::workers::Workers;
use crate::framelog::{HttpFacts, HttpVia};
use crate::relay::{Remote, RemoteLink, ServerFrames};
use crate::sync::lock;

/// A remote server over HTTP, ready to be relayed to.
#[derive(Debug)]
pub struct HttpRemote {
    connection: Arc<Connection>,
    legacy: Arc<LegacySse>,
    transport: Transport,
}

impl HttpRemote {
    /// The server at `config.url`; fails when the settings cannot be used (a `--ca-cert`
    /// file without a certificate).
    pub fn new(config: HttpConfig) -> Result<HttpRemote, super::ConfigError> {
        // One token for both transports (`--transport auto` may use either): one renewal.
        let auth = ProxyAuth::for_config(&config, config.agent()?).map(Arc::new);
        Ok(HttpRemote {
            transport: config.transport,
            legacy: Arc::new(LegacySse::new(config.clone(), auth.clone())?),
            connection: Arc::new(Connection::new(config, auth)?),
        })
    }
}

impl Remote for HttpRemote {
    fn describe(&self) -> Vec<String> {
        vec![self.connection.shown_url().to_string()]
    }

    fn transport(&self) -> &'static str {
        self.transport.name()
    }

    fn detects_transport(&self) -> bool {
        self.transport == Transport::Auto
    }

    fn start(self: Box<Self>, link: RemoteLink) -> io::Result<()> {
        let speaking = Arc::new(OnceLock::new());
        if self.transport != Transport::Auto {
            let _ = speaking.set(self.transport);
        }
        let (connection, legacy) = (self.connection, self.legacy);
        std::thread::Builder::new()
            .name("http-c2s".into())
            .spawn(move || serve(connection, legacy, speaking, link))?;
        Ok(())
    }
}

/// What the threads of one run share.
#[derive(Clone)]
struct Shared {
    connection: Arc<Connection>,
    legacy: Arc<LegacySse>,
    /// The transport spoken: known from the start, or (auto) once the first exchange
    /// found it out.
    speaking: Arc<OnceLock<Transport>>,
    to_client: ServerFrames,
    /// Ids (JSON text) of the requests the client cancelled.
    cancelled: Arc<Mutex<HashSet<String>>>,
    /// The requests under way on threads of their own.
    in_flight: Arc<InFlight>,
    /// The threads they run on.
    workers: Arc<Workers>,
    stop: Arc<AtomicBool>,
}

/// The requests under way on `http-request` threads, by thread number: what the end of the
/// client's input waits for before the session ends.
#[derive(Default)]
struct InFlight {
    requests: Mutex<BTreeMap<u64, Vec<String>>>,
    changed: Condvar,
}

impl InFlight {
    /// Registers the request ids of thread `n`.
    fn start(&self, n: u64, ids: Vec<String>) {
        lock(&self.requests).insert(n, ids);
    }

    /// Thread `n` is done.
    fn end(&self, n: u64) {
        lock(&self.requests).remove(&n);
        self.changed.notify_all();
    }

    /// Waits until every request under way was answered or cancelled by the client (a
    /// cancelled one is answered to nobody), at most `limit`: the client closed its end, so
    /// only answers it may still read are worth waiting for, and never longer than a
    /// request may stay silent. A `subscriptions/listen` stream is never registered: it
    /// lasts as long as the session.
    fn settle(&self, cancelled: &Mutex<HashSet<String>>, limit: std::time::Duration) {
        let deadline = Instant::now() + limit;
        let mut requests = lock(&self.requests);
        loop {
            let waiting = {
                let cancelled = lock(cancelled);
                requests
                    .values()
                    .any(|ids| ids.iter().any(|id| !cancelled.contains(id)))
            };
            let left = deadline.saturating_duration_since(Instant::now());
            if !waiting || left.is_zero() {
                return;
            }
            requests = match self.changed.wait_timeout(requests, left) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }
}

/// The `http-c2s` thread: every client frame POSTed, until the client's end closes.
fn serve(
    connection: Arc<Connection>,
    legacy: Arc<LegacySse>,
    speaking: Arc<OnceLock<Transport>>,
    link: RemoteLink,
) {
    let RemoteLink {
        from_client,
        to_client,
        stop,
        finished,
    } = link;
    let shared = Shared {
        connection,
        legacy,
        speaking,
        to_client,
        cancelled: Arc::default(),
        in_flight: Arc::default(),
        workers: Arc::default(),
        stop,
    };
    let mut threads: u64 = 0;
    let mut listening = false;
    let mut input = BufReader::with_capacity(1 << 16, from_client);
    let mut line = Vec::new();
    loop {
        line.clear();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                shared
                    .to_client
                    .error(format!("http: reading the client's frames failed: {e}"));
                break;
            }
        }
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let text = trim_line(&line);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let out = Outgoing::new(text);
        if let Some(id) = &out.cancels {
            lock(&shared.cancelled).insert(id.clone());
            shared.in_flight.changed.notify_all();
        }
        match shared.speaking.get() {
            None => {
                shared.detect(&out);
                continue;
            }
            Some(Transport::Sse) => {
                shared.legacy_exchange(&out);
                continue;
            }
            Some(_) => {}
        }
        let initialized = out.method.as_deref() == Some("notifications/initialized");
        if out.requests.is_empty() || out.is_initialize() {
            // In order, here: the next message waits for this one's answer (for
            // `initialize`: its session id).
            let outcome = shared.exchange(&out);
            if initialized && outcome.fault.is_none() && !listening {
                listening = true;
                shared.listen();
            }
        } else {
            let owned = text.to_vec();
            let worker = shared.clone();
            threads += 1;
            let n = threads;
            if out.method.as_deref() != Some("subscriptions/listen") {
                shared.in_flight.start(n, out.requests.clone());
            }
            let started = shared.workers.run(
                "http-request",
                Box::new(move || {
                    let out = Outgoing::new(&owned);
                    let (outcome, rest) = worker
                        .connection
                        .post_keeping_rest(&out, &mut |message| worker.relay_for(&out, message));
                    worker.conclude(&out, &outcome);
                    worker.in_flight.end(n);
                    // Answered: the rest of the stream, read to its end, frees the
                    // connection for the next request (dropped unread, it would be closed).
                    if let Some(rest) = rest {
                        worker
                            .connection
                            .finish(rest, &mut |message| worker.relay(message));
                    }
                }),
            );
            if let Err(e) = started {
                shared.in_flight.end(n);
                shared.answer_unanswered(&Outcome {
                    unanswered: out.requests.clone(),
                    fault: Some(super::Fault::Connection(format!(
                        "no thread for the request: {e}"
                    ))),
                    status: None,
                });
            }
        }
    }
    shared
        .in_flight
        .settle(&shared.cancelled, shared.connection.timeout());
    if shared.speaking.get() == Some(&Transport::StreamableHttp) {
        shared.connection.close_session();
    }
    drop(finished);
}

/// `line` without its `\n` or `\r\n`.
fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl Shared {
    /// The client's first message, with `--transport auto`: POSTed as Streamable HTTP; when
    /// the server refuses it with 400, 404 or 405, the legacy stream is opened and the
    /// message POSTed there. Either way the transport is then known, for the session.
    fn detect(&self, out: &Outgoing<'_>) {
        let outcome = self
            .connection
            .post(out, &mut |message| self.relay_for(out, message));
        let refused = matches!(
            outcome.fault,
            Some(Fault::Status {
                status: 400 | 404 | 405,
                ..
            })
        );
        if refused {
            match self.open_legacy() {
                Ok(()) => {
                    self.speak(Transport::Sse);
                    let outcome = self.legacy.post(out);
                    self.conclude(out, &outcome);
                    return;
                }
                Err((fault, _)) => self.to_client.error(format!(
                    "http: auto-detection: the server refused Streamable HTTP, and its GET \
                     for the legacy HTTP+SSE transport failed: {fault}"
                )),
            }
        }
        self.speak(Transport::StreamableHttp);
        self.conclude(out, &outcome);
    }

    /// The transport spoken from now on, named for the log's header.
    fn speak(&self, transport: Transport) {
        let _ = self.speaking.set(transport);
        self.to_client.transport_found(transport.name());
    }

    /// The name of the transport spoken (or tried first).
    fn transport_name(&self) -> &'static str {
        self.speaking.get().copied().unwrap_or_default().name()
    }

    /// One client message in the legacy transport: the stream opened first when none is
    /// (or, after it ended, for the client's new `initialize`), then the message POSTed.
    fn legacy_exchange(&self, out: &Outgoing<'_>) {
        if self.legacy.needs_open(out) {
            if let Err((fault, status)) = self.open_legacy() {
                let outcome = Outcome {
                    unanswered: out.requests.clone(),
                    fault: Some(fault),
                    status,
                };
                self.conclude(out, &outcome);
                return;
            }
        }
        let outcome = self.legacy.post(out);
        self.conclude(out, &outcome);
    }

    /// Opens the legacy event stream: its messages relayed; the requests it leaves
    /// unanswered (it ended, or stayed quiet for the timeout) answered with why.
    fn open_legacy(&self) -> Result<(), (Fault, Option<u16>)> {
        let (relay, ended) = (self.clone(), self.clone());
        self.legacy.open(
            move |message| relay.relay(&message),
            move |outcome| {
                if let Some(fault) = &outcome.fault {
                    let line = format!("http: the event stream (GET): {fault}");
                    tracing::warn!("ctxopt-proxy: {}: {line}", ended.connection.shown_url());
                    ended.to_client.error(line);
                }
                ended.answer_unanswered(&outcome);
            },
        )
    }

    /// POSTs one client message, relays its answer, and answers what the server left
    /// unanswered.
    fn exchange(&self, out: &Outgoing<'_>) -> Outcome {
        let outcome = self
            .connection
            .post(out, &mut |message| self.relay_for(out, message));
        self.conclude(out, &outcome);
        outcome
    }

    /// A message's exchange ended as `outcome`: its fault in the log's trailer, and an
    /// error for each request left unanswered.
    fn conclude(&self, out: &Outgoing<'_>, outcome: &Outcome) {
        if let Some(fault) = &outcome.fault {
            let what = out.method.as_deref().unwrap_or(if out.requests.is_empty() {
                "a response"
            } else {
                "a batch"
            });
            let line = format!("http: POST of {what}: {fault}");
            tracing::warn!("ctxopt-proxy: {}: {line}", self.connection.shown_url());
            self.to_client.error(line);
        }
        self.answer_unanswered(outcome);
    }

    /// Writes a server message toward the client.
    fn relay(&self, message: &ServerMessage) {
        self.to_client
            .send(message.bytes.clone(), message.facts.clone());
    }

    /// Writes a message of the answer to `out` toward the client, unless the client has
    /// cancelled every request in `out`: then `false`, and the answer is read no further
    /// (nor relayed: the client expects nothing more of those requests).
    fn relay_for(&self, out: &Outgoing<'_>, message: &ServerMessage) -> bool {
        let cancelled = !out.requests.is_empty() && {
            let cancelled = lock(&self.cancelled);
            out.requests
                .iter()
                .all(|id| cancelled.iter().any(|c| same_id(c, id)))
        };
        if !cancelled {
            self.relay(message);
        }
        !cancelled
    }

    /// A JSON-RPC error for each request the server did not answer, unless the client
    /// cancelled it (it expects no answer then).
    fn answer_unanswered(&self, outcome: &Outcome) {
        let Some(fault) = &outcome.fault else {
            return;
        };
        for id in &outcome.unanswered {
            if lock(&self.cancelled).iter().any(|c| same_id(c, id)) {
                continue;
            }
            let url = self.connection.shown_url();
            let error = fault.error_response(id, url, outcome.status, self.transport_name());
            let facts = HttpFacts {
                via: HttpVia::Proxy,
                status: outcome.status,
                content_type: None,
                session_id: self.connection.session_id(),
                event_id: None,
                ttfb_us: None,
                fault: Some(fault.to_string()),
            };
            self.to_client.send(Arc::new(error), facts);
        }
    }

    /// Starts the `http-get` thread: the standalone stream for server-initiated messages.
    fn listen(&self) {
        let shared = self.clone();
        let started = std::thread::Builder::new()
            .name("http-get".into())
            .spawn(move || {
                let result = shared.connection.listen(
                    &mut |message: ServerMessage| shared.relay(&message),
                    &shared.stop,
                );
                if let Err((fault, _)) = result {
                    let line = format!("http: the GET stream for server messages: {fault}");
                    tracing::warn!("ctxopt-proxy: {}: {line}", shared.connection.shown_url());
                    shared.to_client.error(line);
                }
            });
        if let Err(e) = started {
            self.to_client
                .error(format!("http: no thread for the GET stream: {e}"));
        }
    }
}
