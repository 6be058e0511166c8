//! The HTTP upstream as the relay's [`Remote`]: the client's frames read from the relay, each
//! POSTed over a [`Connection`], every server message written back to the relay with its
//! [`HttpFacts`]; a request the server did not answer gets a JSON-RPC error naming the
//! fault (`via: proxy` in the log), and every fault a line in the log's trailer.
//!
//! Threads: `http-c2s` reads the client's frames in order and POSTs notifications and
//! responses itself (so they reach the server in the client's order), and `initialize` up
//! to its answer's headers (every later message needs its session id); each other request
//! gets a thread of its own for its answer, so a slow call never holds up the next message
//! or a cancellation. `http-get` listens on the standalone GET stream once the session is
//! initialized, when the server offers one.

use std::collections::HashSet;
use std::io::{self, BufRead, BufReader};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::config::HttpConfig;
use super::connection::{Connection, Outcome, ServerMessage};
use super::outgoing::{same_id, Outgoing};
use crate::framelog::{HttpFacts, HttpVia};
use crate::relay::{Remote, RemoteLink, ServerFrames};
use crate::sync::lock;

/// A Streamable HTTP server, ready to be relayed to.
#[derive(Debug)]
pub struct HttpRemote {
    connection: Arc<Connection>,
}

impl HttpRemote {
    /// The server at `config.url`; fails when the settings cannot be used (a `--ca-cert`
    /// file without a certificate).
    pub fn new(config: HttpConfig) -> Result<HttpRemote, super::ConfigError> {
        Ok(HttpRemote {
            connection: Arc::new(Connection::new(config)?),
        })
    }
}

impl Remote for HttpRemote {
    fn describe(&self) -> Vec<String> {
        vec![self.connection.shown_url().to_string()]
    }

    fn transport(&self) -> &'static str {
        "streamable-http"
    }

    fn start(self: Box<Self>, link: RemoteLink) -> io::Result<()> {
        let connection = self.connection;
        std::thread::Builder::new()
            .name("http-c2s".into())
            .spawn(move || serve(connection, link))?;
        Ok(())
    }
}

/// What the threads of one run share.
#[derive(Clone)]
struct Shared {
    connection: Arc<Connection>,
    to_client: ServerFrames,
    /// Ids (JSON text) of the requests the client cancelled.
    cancelled: Arc<Mutex<HashSet<String>>>,
    stop: Arc<AtomicBool>,
}

/// The `http-c2s` thread: every client frame POSTed, until the client's end closes.
fn serve(connection: Arc<Connection>, link: RemoteLink) {
    let RemoteLink {
        from_client,
        to_client,
        stop,
        finished,
    } = link;
    let shared = Shared {
        connection,
        to_client,
        cancelled: Arc::default(),
        stop,
    };
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
            let finished = finished.clone();
            let started = std::thread::Builder::new()
                .name("http-request".into())
                .spawn(move || {
                    worker.exchange(&Outgoing::new(&owned));
                    drop(finished);
                });
            if let Err(e) = started {
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
    shared.connection.close_session();
    drop(finished);
}

/// `line` without its `\n` or `\r\n`.
fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

impl Shared {
    /// POSTs one client message, relays its answer, and answers what the server left
    /// unanswered.
    fn exchange(&self, out: &Outgoing<'_>) -> Outcome {
        let outcome = self
            .connection
            .post(out, &mut |message: &ServerMessage| self.relay(message));
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
        self.answer_unanswered(&outcome);
        outcome
    }

    /// Writes a server message toward the client.
    fn relay(&self, message: &ServerMessage) {
        self.to_client.send(&message.bytes, message.facts.clone());
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
            let error = fault.error_response(id, self.connection.shown_url(), outcome.status);
            let facts = HttpFacts {
                via: HttpVia::Proxy,
                status: outcome.status,
                content_type: None,
                session_id: self.connection.session_id(),
                event_id: None,
                fault: Some(fault.to_string()),
            };
            self.to_client.send(&error, facts);
        }
    }

    /// Starts the `http-get` thread: the standalone stream for server-initiated messages.
    fn listen(&self) {
        let shared = self.clone();
        let started = std::thread::Builder::new()
            .name("http-get".into())
            .spawn(move || {
                let result = shared.connection.listen(
                    &mut |message: &ServerMessage| shared.relay(message),
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
