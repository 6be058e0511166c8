//! One client's connection to a Streamable HTTP server: each client message POSTed, its
//! answer (nothing, one JSON message, or an event stream of several) handed on message by
//! message as it arrives; the session id and protocol revision kept from `initialize`; the
//! standalone GET stream; the session ended with DELETE. Blocking calls, safe to use from
//! several threads at once (one per message under way).
//!
//! Nothing here knows the relay: a caller gives each message's text and a function that
//! takes each server message with its [`HttpFacts`], and gets back what was left unanswered
//! and why ([`Outcome`]).

use std::io::{BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ureq::http::Response;
use ureq::{Agent, Body};

mod resume;

use super::auth::bearer::authorized;
use super::auth::scope::challenge_fault;
use super::auth::ProxyAuth;
use super::config::{display_url, ConfigError, HttpConfig};
use super::fault::Fault;
use super::outgoing::{header_value, same_id, Outgoing};
use super::sse::{SseError, SseReader};
use crate::framelog::classify::{classify, Shape};
use crate::framelog::{FrameKind, HttpFacts, HttpVia};
use crate::sync::lock;

/// The largest answer or event taken (as the relay's tap budget: a larger one could not be
/// logged either).
pub const MESSAGE_LIMIT: usize = 256 << 20;

/// How much of an error status's body is read, for the message.
const ERROR_BODY_LIMIT: u64 = 4096;

/// How long ending a session (DELETE) may take.
const CLOSE_LIMIT: Duration = Duration::from_secs(5);

/// A server message and what carried it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerMessage {
    /// The message, one line: without a line ending, any `\r` or `\n` of the JSON text (which
    /// can only be whitespace) made a space. Shared: the relay writes it on while the
    /// connection reads which requests it answers.
    pub bytes: Arc<Vec<u8>>,
    /// The exchange, status, content type, session and event id.
    pub facts: HttpFacts,
}

/// How the exchange of one client message ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The ids (JSON text) of the message's requests the server did not answer.
    pub unanswered: Vec<String>,
    /// Why not; also set for a message without requests whose POST failed.
    pub fault: Option<Fault>,
    /// The HTTP status of the answer, when there was one.
    pub status: Option<u16>,
}

#[derive(Debug, Default)]
struct Session {
    /// The `Mcp-Session-Id` the server gave at `initialize`.
    id: Option<String>,
    /// The revision `initialize` negotiated.
    protocol: Option<String>,
    /// The session the server said it no longer knows (HTTP 404), until the next
    /// `initialize`.
    expired: Option<String>,
}

/// A connection to one Streamable HTTP endpoint.
#[derive(Debug)]
pub struct Connection {
    agent: Agent,
    config: HttpConfig,
    shown_url: String,
    session: Mutex<Session>,
    /// The token `ctxopt auth login` stored, unless the user gave an `Authorization` header.
    auth: Option<Arc<ProxyAuth>>,
}

/// What the answer to one POST is for.
struct Exchange<'o, 'a> {
    out: &'o Outgoing<'a>,
    unanswered: Vec<String>,
    /// The caller wants no more of the answer (its client cancelled the request).
    abandoned: bool,
    /// The answer's event stream after its last answer, when it did not end there.
    rest: Option<Rest>,
}

/// An event stream read up to the answer to every request it carried, not yet to its end.
/// Read to its end ([`Connection::finish`]), it gives its connection back to the client's
/// pool for the next request; dropped, it closes it.
pub struct Rest {
    events: SseReader<BufReader<ureq::BodyReader<'static>>>,
    facts: HttpFacts,
}

impl std::fmt::Debug for Rest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rest")
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// A connection with `config`'s URL, headers, timeout and trust, sending `auth`'s token.
    pub fn new(
        config: HttpConfig,
        auth: Option<Arc<ProxyAuth>>,
    ) -> Result<Connection, ConfigError> {
        let agent = config.agent()?;
        Ok(Connection {
            auth,
            agent,
            shown_url: display_url(&config.url),
            config,
            session: Mutex::new(Session::default()),
        })
    }

    /// The URL as messages and the log show it (no credentials, no query values).
    pub fn shown_url(&self) -> &str {
        &self.shown_url
    }

    /// How long the server may take to begin answering, and a stream stay silent
    /// (`--timeout`).
    pub(crate) fn timeout(&self) -> std::time::Duration {
        self.config.timeout
    }

    /// The session id in effect.
    pub fn session_id(&self) -> Option<String> {
        lock(&self.session).id.clone()
    }

    /// The headers every request carries: the configured ones, the stored token (`bearer`),
    /// the session id and the protocol revision (`protocol`, else the negotiated one).
    fn common_headers<B>(
        &self,
        request: ureq::RequestBuilder<B>,
        bearer: Option<&str>,
        protocol: Option<String>,
    ) -> (ureq::RequestBuilder<B>, Option<String>) {
        let (session_id, negotiated) = {
            let session = lock(&self.session);
            (session.id.clone(), session.protocol.clone())
        };
        let mut request = with_headers(request, &self.config, bearer);
        if let Some(id) = &session_id {
            request = request.header("Mcp-Session-Id", id);
        }
        if let Some(version) = protocol.or(negotiated) {
            request = request.header("MCP-Protocol-Version", version);
        }
        (request, session_id)
    }

    /// POSTs `out` and hands each message of the answer to `each` as it arrives, until the
    /// server has answered every request in it (or the answer ends, or fails), or `each`
    /// returns `false`: the caller wants no more of it (the client cancelled the request),
    /// and the answer is dropped unread, without a fault.
    pub fn post(
        &self,
        out: &Outgoing<'_>,
        each: &mut dyn FnMut(&ServerMessage) -> bool,
    ) -> Outcome {
        self.post_keeping_rest(out, each).0
    }

    /// [`Connection::post`], and the rest of an answer's event stream when it was still open
    /// after the last answer: the caller reads it with [`Connection::finish`] when it may
    /// (the connection can then be used again), or drops it.
    pub fn post_keeping_rest(
        &self,
        out: &Outgoing<'_>,
        each: &mut dyn FnMut(&ServerMessage) -> bool,
    ) -> (Outcome, Option<Rest>) {
        let mut exchange = Exchange {
            out,
            unanswered: out.requests.clone(),
            abandoned: false,
            rest: None,
        };
        // A 401 comes before any message of the answer: sending again loses nothing.
        let result = authorized(self.auth.as_deref(), |bearer| {
            self.post_inner(&mut exchange, each, bearer)
        });
        let (fault, status) = match result {
            Ok(status) => (
                (!exchange.unanswered.is_empty() && !exchange.abandoned)
                    .then_some(Fault::Unanswered),
                status,
            ),
            Err((fault, status)) => (Some(fault), status),
        };
        let outcome = Outcome {
            unanswered: exchange.unanswered,
            fault,
            status,
        };
        (outcome, exchange.rest)
    }

    /// Reads the rest of an answer's event stream to its end, handing on any message in it
    /// (a server should send none after its answer), for at most the timeout while events
    /// keep coming, and the timeout of silence. Then the connection goes back to the pool;
    /// a fault or the limit closes it instead.
    pub fn finish(&self, mut rest: Rest, each: &mut dyn FnMut(&ServerMessage)) {
        let limit = std::time::Instant::now() + self.config.timeout;
        let _ = self.read_events(
            &mut rest.events,
            rest.facts,
            self.config.timeout,
            &mut None,
            &mut |message| {
                each(&message);
                std::time::Instant::now() < limit
            },
        );
    }

    fn post_inner(
        &self,
        exchange: &mut Exchange<'_, '_>,
        each: &mut dyn FnMut(&ServerMessage) -> bool,
        bearer: Option<&str>,
    ) -> Result<Option<u16>, (Fault, Option<u16>)> {
        let out = exchange.out;
        {
            let mut session = lock(&self.session);
            if out.is_initialize() {
                *session = Session::default();
            } else if let Some(expired) = &session.expired {
                let fault = Fault::SessionExpired {
                    session: expired.clone(),
                };
                return Err((fault, None));
            }
        }
        let timeout = self.config.timeout;
        let request = self
            .agent
            .post(&self.config.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        let protocol = out.protocol.clone().filter(|_| !out.is_initialize());
        let (mut request, session_id) = self.common_headers(request, bearer, protocol);
        if let Some(method) = &out.method {
            request = request.header("Mcp-Method", header_value(method));
        }
        if let Some(name) = &out.name {
            request = request.header("Mcp-Name", header_value(name));
        }
        // A subscription's stream stays open, silent, as long as the client listens.
        let idle = (out.method.as_deref() != Some("subscriptions/listen")).then_some(timeout);
        let sent = std::time::Instant::now();
        let response = request
            .config()
            .timeout_recv_response(Some(timeout))
            .timeout_per_read(idle)
            .build()
            .send(out.text)
            .map_err(|e| (Fault::from_ureq(e, timeout), None))?;
        let ttfb_us = u64::try_from(sent.elapsed().as_micros()).ok();
        let status = response.status().as_u16();
        if out.is_initialize() && (200..300).contains(&status) {
            let given = header(&response, "mcp-session-id");
            lock(&self.session).id = given;
        }
        let fail =
            |fault| -> Result<Option<u16>, (Fault, Option<u16>)> { Err((fault, Some(status))) };
        match status {
            202 => Ok(Some(status)),
            200..=299 => {
                let facts = HttpFacts {
                    ttfb_us,
                    ..self.facts(HttpVia::Post, &response)
                };
                match facts.content_type.as_deref() {
                    Some("text/event-stream") => {
                        let mut events = events(response.into_body().into_reader());
                        let mut last_id = None;
                        let read = self.read_events(
                            &mut events,
                            facts.clone(),
                            timeout,
                            &mut last_id,
                            &mut |m| self.answered(exchange, m, each),
                        );
                        if read.is_ok() && exchange.unanswered.is_empty() && !exchange.abandoned {
                            exchange.rest = Some(Rest { events, facts });
                        } else {
                            drop(events);
                        }
                        self.resume(exchange, read, last_id, each)
                            .map_err(|fault| (fault, Some(status)))?;
                        Ok(Some(status))
                    }
                    Some("application/json") => {
                        let mut body = response.into_body();
                        let bytes = body
                            .with_config()
                            .limit(MESSAGE_LIMIT as u64)
                            .read_to_vec()
                            .map_err(|e| (Fault::from_ureq(e, timeout), Some(status)))?;
                        if bytes.iter().all(u8::is_ascii_whitespace) {
                            return Ok(Some(status));
                        }
                        let bytes = one_line(bytes);
                        if !std::str::from_utf8(&bytes)
                            .is_ok_and(crate::framelog::json_scan::is_valid)
                        {
                            return fail(Fault::NotJson);
                        }
                        let message = ServerMessage {
                            bytes: Arc::new(bytes),
                            facts,
                        };
                        self.answered(exchange, message, each);
                        Ok(Some(status))
                    }
                    other => {
                        let mut body = response.into_body();
                        let empty = body
                            .with_config()
                            .limit(ERROR_BODY_LIMIT)
                            .read_to_vec()
                            .is_ok_and(|b| b.is_empty());
                        if empty {
                            Ok(Some(status))
                        } else {
                            fail(Fault::ContentType(other.unwrap_or("").to_string()))
                        }
                    }
                }
            }
            300..=399 => fail(Fault::Redirect {
                status,
                location: header(&response, "location").unwrap_or_default(),
            }),
            404 if session_id.is_some() => {
                let session = session_id.unwrap_or_default();
                let mut current = lock(&self.session);
                // Unless a new `initialize` replaced it meanwhile.
                if current.id.as_ref() == Some(&session) {
                    current.expired = Some(session.clone());
                }
                drop(current);
                fail(Fault::SessionExpired { session })
            }
            _ => fail(status_fault(response, self.auth.as_deref())),
        }
    }

    /// Hands `message` on, then notes the requests it answers (and, for `initialize`, the
    /// revision negotiated); `false` once every request of the exchange is answered, or the
    /// caller wants no more. The message goes first: finding its ids takes passes over all
    /// of it (UTF-8, JSON, its members), which for a result of megabytes the client need not
    /// wait for. (The next message after `initialize` is POSTed only once this returns.)
    fn answered(
        &self,
        exchange: &mut Exchange<'_, '_>,
        message: ServerMessage,
        each: &mut dyn FnMut(&ServerMessage) -> bool,
    ) -> bool {
        exchange.abandoned |= !each(&message);
        if !exchange.unanswered.is_empty() && !exchange.abandoned {
            if let Ok(text) = std::str::from_utf8(&message.bytes) {
                let answers = match classify(text) {
                    Shape::Single(m) => vec![m],
                    Shape::Batch(items) => items,
                    Shape::Unparseable => Vec::new(),
                };
                for m in answers {
                    if !matches!(m.kind, FrameKind::Response | FrameKind::Error) {
                        continue;
                    }
                    let Some(id) = m.id else { continue };
                    if exchange.out.is_initialize() {
                        if let Some(version) = m.result_protocol {
                            lock(&self.session).protocol = Some(version);
                        }
                    }
                    exchange.unanswered.retain(|wanted| !same_id(wanted, &id));
                }
            }
        }
        !exchange.unanswered.is_empty() && !exchange.abandoned
    }

    /// Reads an event stream, handing each message event to `each` while it returns `true`;
    /// `last_id` follows the id of the last event read (to resume from).
    fn read_stream(
        &self,
        stream: impl Read,
        facts: HttpFacts,
        timeout: Duration,
        last_id: &mut Option<String>,
        each: &mut dyn FnMut(ServerMessage) -> bool,
    ) -> Result<(), Fault> {
        self.read_events(&mut events(stream), facts, timeout, last_id, each)
    }

    /// [`Connection::read_stream`] from a reader of its events.
    fn read_events(
        &self,
        events: &mut SseReader<impl BufRead>,
        facts: HttpFacts,
        timeout: Duration,
        last_id: &mut Option<String>,
        each: &mut dyn FnMut(ServerMessage) -> bool,
    ) -> Result<(), Fault> {
        loop {
            let event = match events.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => return Ok(()),
                Err(SseError::Io(e)) => return Err(Fault::from_io(&e, timeout)),
                Err(SseError::TooLarge(limit)) => return Err(Fault::TooLarge(limit)),
                Err(SseError::Cut) => return Err(Fault::Cut),
            };
            if event.id.is_some() {
                last_id.clone_from(&event.id);
            }
            // An event without JSON (the priming event a server sends to give an id to
            // resume from) carries no message.
            if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let message = ServerMessage {
                bytes: Arc::new(one_line(event.data)),
                facts: HttpFacts {
                    event_id: event.id,
                    ..facts.clone()
                },
            };
            if !each(message) {
                return Ok(());
            }
        }
    }

    /// Listens on the standalone GET stream for messages the server sends of its own accord,
    /// handing each to `each`, until the stream ends or `stop` is set. `Ok(false)` when
    /// the server offers no such stream (HTTP 405).
    pub fn listen(
        &self,
        each: &mut dyn FnMut(ServerMessage),
        stop: &AtomicBool,
    ) -> Result<bool, (Fault, Option<u16>)> {
        let timeout = self.config.timeout;
        // A 401 is handled as a POST's: the token renewed, the stream asked for again.
        let response = authorized(self.auth.as_deref(), |bearer| {
            let get = self.agent.get(&self.config.url);
            let (request, _) = self.common_headers(get, bearer, None);
            let response = call_for_stream(request, timeout)?;
            match response.status().as_u16() {
                200..=299 | 405 => Ok(response),
                status => Err((status_fault(response, self.auth.as_deref()), Some(status))),
            }
        })?;
        let status = response.status().as_u16();
        if status == 405 {
            return Ok(false);
        }
        let facts = self.facts(HttpVia::Get, &response);
        if facts.content_type.as_deref() != Some("text/event-stream") {
            let fault = Fault::ContentType(facts.content_type.unwrap_or_default());
            return Err((fault, Some(status)));
        }
        let mut body = response.into_body();
        self.read_stream(body.as_reader(), facts, timeout, &mut None, &mut |m| {
            each(m);
            !stop.load(Ordering::Relaxed)
        })
        .map_err(|fault| (fault, Some(status)))?;
        Ok(true)
    }

    /// Ends the session (DELETE with its id), when there is one; the server's answer does
    /// not matter (405: it lets sessions expire).
    pub fn close_session(&self) {
        if self.session_id().is_none() {
            return;
        }
        let request = self.agent.delete(&self.config.url);
        // The token in use (no renewal for a request whose answer does not matter).
        let bearer = self.auth.as_ref().and_then(|auth| auth.header());
        let (request, _) = self.common_headers(request, bearer.as_deref(), None);
        let _ = request
            .config()
            .timeout_global(Some(self.config.timeout.min(CLOSE_LIMIT)))
            .build()
            .call();
    }

    /// The facts of a response's messages.
    fn facts(&self, via: HttpVia, response: &Response<Body>) -> HttpFacts {
        HttpFacts {
            via,
            status: Some(response.status().as_u16()),
            content_type: media_type(response),
            session_id: self.session_id(),
            event_id: None,
            ttfb_us: None,
            fault: None,
        }
    }
}

/// The events of an event stream.
fn events<R: Read>(stream: R) -> SseReader<BufReader<R>> {
    SseReader::new(BufReader::with_capacity(1 << 16, stream), MESSAGE_LIMIT)
}

/// Sends `request`, a GET for an event stream (the standalone stream, or the legacy
/// transport's one stream), waiting at most `timeout` for the response's headers.
pub(crate) fn call_for_stream(
    request: ureq::RequestBuilder<ureq::typestate::WithoutBody>,
    timeout: Duration,
) -> Result<Response<Body>, (Fault, Option<u16>)> {
    request
        .header("Accept", "text/event-stream")
        .config()
        .timeout_recv_response(Some(timeout))
        .build()
        .call()
        .map_err(|e| (Fault::from_ureq(e, timeout), None))
}

/// `request` with the configured headers and, when one is stored, the token (`bearer`).
pub(crate) fn with_headers<B>(
    mut request: ureq::RequestBuilder<B>,
    config: &HttpConfig,
    bearer: Option<&str>,
) -> ureq::RequestBuilder<B> {
    for (name, value) in &config.headers {
        request = request.header(name, value);
    }
    if let Some(bearer) = bearer {
        request = request.header("Authorization", bearer);
    }
    request
}

/// The fault of an error status: a 403 with a Bearer `insufficient_scope` challenge names
/// the login command that widens the grant of `auth`'s token; any other, the start of the
/// body.
pub(crate) fn status_fault(response: Response<Body>, auth: Option<&ProxyAuth>) -> Fault {
    let status = response.status().as_u16();
    if status == 403 {
        let challenges = response
            .headers()
            .get_all("www-authenticate")
            .iter()
            .filter_map(|v| v.to_str().ok());
        if let Some(fault) = challenge_fault(challenges, auth) {
            return fault;
        }
    }
    Fault::Status {
        status,
        body: error_body(response),
    }
}

/// A response header as text.
pub(crate) fn header(response: &Response<Body>, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// A response's media type (its `Content-Type` without parameters, lowercase).
pub(crate) fn media_type(response: &Response<Body>) -> Option<String> {
    header(response, "content-type").map(|t| {
        t.split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase()
    })
}

/// The start of an error response's body.
pub(crate) fn error_body(response: Response<Body>) -> String {
    let mut body = response.into_body();
    body.with_config()
        .limit(ERROR_BODY_LIMIT)
        .lossy_utf8(true)
        .read_to_string()
        .unwrap_or_default()
}

/// A JSON text as one line: line breaks (whitespace, in JSON) made spaces, trailing
/// whitespace dropped.
pub(crate) fn one_line(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last().is_some_and(u8::is_ascii_whitespace) {
        bytes.pop();
    }
    // Found rather than tested byte by byte: a message of megabytes usually has none.
    let mut from = 0;
    while let Some(i) = memchr::memchr2(b'\n', b'\r', &bytes[from..]) {
        bytes[from + i] = b' ';
        from += i + 1;
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pretty_printed_message_becomes_one_line() {
        assert_eq!(
            one_line(b"{\r\n  \"id\": 1\n}\n\n".to_vec()),
            b"{    \"id\": 1 }".to_vec()
        );
    }
}
