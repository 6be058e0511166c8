//! The legacy HTTP+SSE transport (MCP 2024-11-05) toward a remote server: a GET opens an
//! event stream whose first event, `endpoint`, names the URL every client message is POSTed
//! to; every server message (answers, notifications, server requests) comes on that one
//! stream. Spoken with `--transport sse`, or when the server refuses Streamable HTTP's first
//! POST with 400, 404 or 405 (the specification's backwards compatibility).
//!
//! Nothing here knows the relay: [`LegacySse::open`] is given what to do with each server
//! message and with the requests left unanswered when the stream ends; [`LegacySse::post`]
//! says how a POST went.

use std::io::BufReader;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::Instant;

use ureq::http::Uri;
use ureq::Agent;

use super::auth::bearer::authorized;
use super::auth::ProxyAuth;
use super::config::{display_url, ConfigError, HttpConfig};
use super::connection::MESSAGE_LIMIT;
use super::connection::{
    call_for_stream, error_body, header, media_type, one_line, status_fault, with_headers, Outcome,
    ServerMessage,
};
use super::fault::Fault;
use super::outgoing::{same_id, Outgoing};
use super::sse::{SseError, SseReader};
use crate::framelog::classify::{classify, Shape};
use crate::framelog::{FrameKind, HttpFacts, HttpVia};
use crate::sync::lock;

/// A fault, and the HTTP status of the response it came with (when there was one).
pub type Failure = (Fault, Option<u16>);

/// A connection to one server in the legacy HTTP+SSE transport.
#[derive(Debug)]
pub struct LegacySse {
    agent: Agent,
    config: HttpConfig,
    state: Mutex<State>,
    /// Wakes the watch over waiting requests (a request POSTed, the stream ended).
    changed: Condvar,
    /// The token `ctxopt auth login` stored, unless the user gave an `Authorization` header:
    /// sent with the GET and every POST, renewed as over Streamable HTTP.
    auth: Option<Arc<ProxyAuth>>,
}

#[derive(Debug, Default)]
struct State {
    /// Which opening of the stream is current: a reader of an older one (given up on)
    /// leaves the state alone.
    generation: u64,
    /// Where to POST, from the current stream's `endpoint` event.
    endpoint: Option<String>,
    /// The ids (JSON text) of the requests POSTed and not yet answered on the stream.
    pending: Vec<String>,
    /// Since when the stream has been quiet while a request waits: its last event, or the
    /// POST that made a request wait when none did.
    quiet_since: Option<Instant>,
    /// Why the current stream ended, once it has: the session is gone with it.
    gone: Option<Fault>,
}

impl LegacySse {
    /// A connection with `config`'s URL (the event stream's), headers, timeout and trust,
    /// sending `auth`'s token.
    pub fn new(config: HttpConfig, auth: Option<Arc<ProxyAuth>>) -> Result<LegacySse, ConfigError> {
        Ok(LegacySse {
            agent: config.agent()?,
            config,
            state: Mutex::default(),
            changed: Condvar::new(),
            auth,
        })
    }

    /// Whether a message must open a stream first: none was opened, or the last one ended
    /// and the message is the client's `initialize` (a new session).
    pub fn needs_open(&self, out: &Outgoing<'_>) -> bool {
        let state = lock(&self.state);
        match state.gone {
            Some(_) => out.is_initialize(),
            None => state.endpoint.is_none(),
        }
    }

    /// Opens the event stream (GET) and waits for its `endpoint` event; then a thread of
    /// its own reads the stream, handing each message to `each` as it arrives. `unanswered`
    /// gets the requests left unanswered and why: when the stream ends, or when it stays
    /// quiet for the timeout while they wait (the stream goes on).
    pub fn open(
        self: &Arc<Self>,
        mut each: impl FnMut(ServerMessage) + Send + 'static,
        unanswered: impl Fn(Outcome) + Send + Sync + 'static,
    ) -> Result<(), Failure> {
        let timeout = self.config.timeout;
        // A 401 before the stream: the token renewed, the stream asked for again.
        let response = authorized(self.auth.as_deref(), |bearer| {
            let request = with_headers(self.agent.get(&self.config.url), &self.config, bearer);
            let response = call_for_stream(request, timeout)?;
            let status = response.status().as_u16();
            match status {
                200..=299 => Ok(response),
                300..=399 => {
                    let location = header(&response, "location").unwrap_or_default();
                    Err((Fault::Redirect { status, location }, Some(status)))
                }
                _ => Err((status_fault(response, self.auth.as_deref()), Some(status))),
            }
        })?;
        let status = response.status().as_u16();
        let content_type = media_type(&response);
        if content_type.as_deref() != Some("text/event-stream") {
            let fault = Fault::ContentType(content_type.unwrap_or_default());
            return Err((fault, Some(status)));
        }
        let facts = HttpFacts {
            via: HttpVia::Get,
            status: Some(status),
            content_type,
            session_id: None,
            event_id: None,
            ttfb_us: None,
            fault: None,
        };
        let generation = {
            let mut state = lock(&self.state);
            state.generation += 1;
            state.endpoint = None;
            state.gone = None;
            state.pending.clear();
            state.quiet_since = None;
            state.generation
        };
        let unanswered = Arc::new(unanswered);
        let (endpoint_tx, endpoint_rx) = mpsc::sync_channel(1);
        let (this, answer) = (Arc::clone(self), Arc::clone(&unanswered));
        std::thread::Builder::new()
            .name("http-sse".into())
            .spawn(move || {
                let mut body = response.into_body();
                let reader = BufReader::with_capacity(1 << 16, body.as_reader());
                let mut events = SseReader::new(reader, MESSAGE_LIMIT);
                let endpoint = this.endpoint(&mut events);
                let found = endpoint.is_ok();
                // Nobody waits any more (it came too late): give the stream up.
                if endpoint_tx.send(endpoint).is_err() || !found {
                    return;
                }
                let (this_watch, answer_watch) = (Arc::clone(&this), Arc::clone(&answer));
                let watch = std::thread::Builder::new()
                    .name("http-sse-watch".into())
                    .spawn(move || this_watch.watch(generation, &*answer_watch));
                if let Err(e) = watch {
                    tracing::warn!("ctxopt-proxy: no thread to time requests out: {e}");
                }
                let fault = this.read(&mut events, generation, &facts, &mut each);
                if let Some(left) = this.end(generation, &fault) {
                    answer(Outcome {
                        unanswered: left,
                        fault: Some(fault),
                        status: Some(status),
                    });
                }
            })
            .map_err(|e| {
                let fault = Fault::Connection(format!("no thread for the event stream: {e}"));
                (fault, None)
            })?;
        let found = endpoint_rx.recv_timeout(timeout).unwrap_or_else(|_| {
            Err(Fault::NoEndpoint(format!(
                "none within {timeout:?} (--timeout)"
            )))
        });
        let mut state = lock(&self.state);
        match found {
            Ok(endpoint) if state.generation == generation => {
                state.endpoint = Some(endpoint);
                Ok(())
            }
            Ok(_) => Err((Fault::NoEndpoint("the stream was replaced".into()), None)),
            Err(fault) => {
                // Its reader, if still reading, relays nothing more.
                state.generation += 1;
                Err((fault, Some(status)))
            }
        }
    }

    /// The URL the stream's first event names, resolved against the stream's.
    fn endpoint<R: std::io::BufRead>(&self, events: &mut SseReader<R>) -> Result<String, Fault> {
        let timeout = self.config.timeout;
        loop {
            let event = match events.next_event() {
                Ok(Some(event)) => event,
                Ok(None) | Err(SseError::Cut) => {
                    return Err(Fault::NoEndpoint("the event stream ended before it".into()))
                }
                Err(SseError::Io(e)) => return Err(Fault::from_io(&e, timeout)),
                Err(SseError::TooLarge(limit)) => return Err(Fault::TooLarge(limit)),
            };
            match event.event.as_deref() {
                Some("endpoint") => {
                    let data = String::from_utf8_lossy(&event.data);
                    return resolve(&self.config.url, data.trim()).map_err(Fault::NoEndpoint);
                }
                None | Some("message") => {
                    return Err(Fault::NoEndpoint(
                        "the event stream began with a message instead".into(),
                    ))
                }
                // Another type (the specification names none): not for this transport.
                Some(_) => {}
            }
        }
    }

    /// Reads the stream's messages, handing each to `each`, until it ends; why it ended.
    fn read<R: std::io::BufRead>(
        &self,
        events: &mut SseReader<R>,
        generation: u64,
        facts: &HttpFacts,
        each: &mut dyn FnMut(ServerMessage),
    ) -> Fault {
        let timeout = self.config.timeout;
        loop {
            let event = match events.next_event() {
                Ok(Some(event)) => event,
                Ok(None) => return Fault::StreamClosed,
                Err(SseError::Io(e)) => return Fault::from_io(&e, timeout),
                Err(SseError::TooLarge(limit)) => return Fault::TooLarge(limit),
                Err(SseError::Cut) => return Fault::Cut,
            };
            if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let bytes = one_line(event.data);
            {
                let mut state = lock(&self.state);
                if state.generation != generation {
                    return Fault::StreamClosed;
                }
                for id in answered(&bytes) {
                    state.pending.retain(|wanted| !same_id(wanted, &id));
                }
                state.quiet_since = Some(Instant::now());
            }
            each(ServerMessage {
                bytes: Arc::new(bytes),
                facts: HttpFacts {
                    event_id: event.id,
                    ttfb_us: None,
                    ..facts.clone()
                },
            });
        }
    }

    /// The stream of `generation` ended with `fault`: the session is gone; the requests it
    /// left unanswered (`None` when another stream has replaced it).
    fn end(&self, generation: u64, fault: &Fault) -> Option<Vec<String>> {
        let mut state = lock(&self.state);
        if state.generation != generation {
            return None;
        }
        state.gone = Some(fault.clone());
        state.endpoint = None;
        self.changed.notify_all();
        Some(std::mem::take(&mut state.pending))
    }

    /// Watches the requests waiting on the stream of `generation`, until it ends: when it
    /// stays quiet for the timeout while some wait, `unanswered` gets them with
    /// [`Fault::Timeout`] (the stream goes on).
    fn watch(&self, generation: u64, unanswered: &dyn Fn(Outcome)) {
        let timeout = self.config.timeout;
        let mut state = lock(&self.state);
        loop {
            if state.generation != generation || state.gone.is_some() {
                return;
            }
            let quiet = state
                .quiet_since
                .filter(|_| !state.pending.is_empty())
                .map(|since| since.elapsed());
            let wait = match quiet {
                Some(quiet) if quiet >= timeout => {
                    let expired = std::mem::take(&mut state.pending);
                    state.quiet_since = None;
                    drop(state);
                    unanswered(Outcome {
                        unanswered: expired,
                        fault: Some(Fault::Timeout(timeout)),
                        status: None,
                    });
                    state = lock(&self.state);
                    continue;
                }
                Some(quiet) => timeout - quiet,
                None => timeout,
            };
            state = self
                .changed
                .wait_timeout(state, wait)
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
    }

    /// POSTs `out` to the endpoint; its answers come on the stream. A POST that fails
    /// leaves its requests unanswered (unless the stream answered them meanwhile).
    pub fn post(&self, out: &Outgoing<'_>) -> Outcome {
        let endpoint = {
            let mut state = lock(&self.state);
            let endpoint = match (&state.gone, &state.endpoint) {
                (Some(gone), _) => Err(Fault::StreamGone(gone.to_string())),
                (None, None) => Err(Fault::NoEndpoint("no event stream is open".into())),
                (None, Some(endpoint)) => Ok(endpoint.clone()),
            };
            match endpoint {
                Ok(endpoint) => {
                    if state.pending.is_empty() && !out.requests.is_empty() {
                        state.quiet_since = Some(Instant::now());
                        self.changed.notify_all();
                    }
                    state.pending.extend(out.requests.iter().cloned());
                    endpoint
                }
                Err(fault) => {
                    return Outcome {
                        unanswered: out.requests.clone(),
                        fault: Some(fault),
                        status: None,
                    }
                }
            }
        };
        let timeout = self.config.timeout;
        // A 401 comes before the server took the message: sending it again loses nothing.
        let sent = authorized(self.auth.as_deref(), |bearer| {
            let request = self
                .agent
                .post(&endpoint)
                .header("Content-Type", "application/json");
            let response = with_headers(request, &self.config, bearer)
                .config()
                .timeout_global(Some(timeout))
                .build()
                .send(out.text)
                .map_err(|e| (Fault::from_ureq(e, timeout), None))?;
            let status = response.status().as_u16();
            match status {
                200..=299 => {
                    // Read, so that the connection can be used again.
                    error_body(response);
                    Ok(status)
                }
                300..=399 => {
                    let location = header(&response, "location").unwrap_or_default();
                    Err((Fault::Redirect { status, location }, Some(status)))
                }
                _ => Err((status_fault(response, self.auth.as_deref()), Some(status))),
            }
        });
        let (fault, status) = match sent {
            Ok(status) => {
                return Outcome {
                    unanswered: Vec::new(),
                    fault: None,
                    status: Some(status),
                }
            }
            Err(failed) => failed,
        };
        // The POST's requests that the stream has not answered (nor its end claimed).
        let mut state = lock(&self.state);
        let unanswered = out
            .requests
            .iter()
            .filter(|id| state.pending.iter().any(|p| same_id(p, id)))
            .cloned()
            .collect::<Vec<_>>();
        state
            .pending
            .retain(|p| !unanswered.iter().any(|id| same_id(p, id)));
        Outcome {
            unanswered,
            fault: Some(fault),
            status,
        }
    }
}

/// The ids (JSON text) of the responses and errors in a server message.
fn answered(bytes: &[u8]) -> Vec<String> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Vec::new();
    };
    let messages = match classify(text) {
        Shape::Single(m) => vec![m],
        Shape::Batch(items) => items,
        Shape::Unparseable => Vec::new(),
    };
    messages
        .into_iter()
        .filter(|m| matches!(m.kind, FrameKind::Response | FrameKind::Error))
        .filter_map(|m| m.id)
        .collect()
}

/// The `endpoint` event's URI resolved against the stream's URL `base`: an absolute URL, an
/// absolute path, or a path relative to the base's. It must have the base's origin (the
/// configured headers, tokens among them, go with every POST).
fn resolve(base: &str, endpoint: &str) -> Result<String, String> {
    let base_uri: Uri = base.parse().map_err(|_| "the stream's URL".to_string())?;
    let scheme = base_uri.scheme_str().unwrap_or("http");
    let authority = base_uri.authority().map_or("", |a| a.as_str());
    let origin = format!("{scheme}://{authority}");
    if endpoint.is_empty() {
        return Err("the endpoint event names no URI".into());
    }
    let resolved = if let Some(rest) = endpoint.strip_prefix("//") {
        format!("{scheme}://{rest}")
    } else if endpoint.contains("://") {
        endpoint.to_string()
    } else if endpoint.starts_with('/') {
        format!("{origin}{endpoint}")
    } else if endpoint.starts_with('?') {
        format!("{origin}{}{endpoint}", base_uri.path())
    } else {
        let path = base_uri.path();
        let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
        let dir = if dir.is_empty() { "/" } else { dir };
        format!("{origin}{dir}{endpoint}")
    };
    let uri: Uri = resolved
        .parse()
        .map_err(|_| format!("the endpoint {endpoint:?} is not a URI"))?;
    let same_origin =
        uri.scheme_str() == Some(scheme) && uri.authority().map(|a| a.as_str()) == Some(authority);
    if !same_origin {
        return Err(format!(
            "the endpoint {} is not on the stream's origin {origin}",
            display_url(&resolved)
        ));
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_resolves_against_the_stream_url_on_its_origin_only() {
        let base = "http://127.0.0.1:3001/sse";
        assert_eq!(
            resolve(base, "/message?sessionId=ab-1").unwrap(),
            "http://127.0.0.1:3001/message?sessionId=ab-1"
        );
        assert_eq!(
            resolve("https://h/mcp/sse", "messages/?session_id=9").unwrap(),
            "https://h/mcp/messages/?session_id=9"
        );
        assert_eq!(
            resolve(base, "http://127.0.0.1:3001/m").unwrap(),
            "http://127.0.0.1:3001/m"
        );
        assert_eq!(
            resolve(base, "?s=1").unwrap(),
            "http://127.0.0.1:3001/sse?s=1"
        );
        for elsewhere in [
            "http://evil.example/m",
            "//evil.example/m",
            "https://127.0.0.1:3001/m",
        ] {
            let err = resolve(base, elsewhere).unwrap_err();
            assert!(
                err.contains("not on the stream's origin"),
                "{elsewhere}: {err}"
            );
        }
        assert!(resolve(base, "").is_err());
    }
}
