//! The standalone GET stream, for the messages a server sends of its own accord: opened once
//! the session is initialized, and reopened whenever it ends or breaks, with
//! `Last-Event-ID` when the server gave event ids (the server replays what came after it),
//! after the wait [`super::resume`] computes. An event the session's streams handed on
//! already is not handed on again ([`super::seen`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::resume::{Backoff, Position, ATTEMPTS};
use super::{Connection, ServerMessage};
use crate::framelog::HttpVia;
use crate::sync::lock;
use crate::upstream::http::fault::Fault;

impl Connection {
    /// Listens on the standalone GET stream for messages the server sends of its own accord,
    /// handing each to `each`, until `stop` is set or the proxy ends the session. A stream
    /// that ends or breaks is reopened (`reopened` gets a line saying why, when and from
    /// which event) until [`ATTEMPTS`] attempts in a row bring neither a message nor a new
    /// event id. `Ok(false)` when
    /// the server offers no such stream (HTTP 405 to the first GET); a 405 to a later one
    /// ends the listening too, said to `reopened`. A 404 to a GET carrying the session id
    /// expires the session as a POST's does.
    pub fn listen(
        &self,
        each: &mut dyn FnMut(ServerMessage),
        stop: &AtomicBool,
        reopened: &mut dyn FnMut(String),
    ) -> Result<bool, (Fault, Option<u16>)> {
        let timeout = self.config.timeout;
        let mut position = Position::default();
        let mut backoff = Backoff::default();
        let mut opened = false;
        loop {
            let session = self.session_id();
            let response = match self.open_stream(position.last_id.as_deref(), None) {
                Ok(answer) => answer,
                Err((Fault::Status { status: 404, .. }, status)) if opened && session.is_some() => {
                    let fault = self.session_expired(session.unwrap_or_default());
                    return Err((fault, status));
                }
                Err(failed) => return Err(failed),
            };
            let status = response.status().as_u16();
            if status == 405 {
                if opened {
                    reopened(
                        "http: the GET stream for server messages: reopening it was refused \
                         (HTTP 405): the server no longer offers it; not reopened"
                            .to_string(),
                    );
                }
                return Ok(false);
            }
            let facts = self.facts(HttpVia::Get, &response);
            if facts.content_type.as_deref() != Some("text/event-stream") {
                let fault = Fault::ContentType(facts.content_type.unwrap_or_default());
                return Err((fault, Some(status)));
            }
            opened = true;
            let from = position.last_id.clone();
            let mut brought = false;
            let mut body = response.into_body();
            let ended =
                self.read_stream(body.as_reader(), facts, timeout, &mut position, &mut |m| {
                    brought = true;
                    each(m);
                    !stop.load(Ordering::Relaxed)
                });
            drop(body);
            if self.listening_over(stop) {
                return Ok(true);
            }
            // An oversized event would come again; a timeout is not a broken connection.
            if let Err(fault @ (Fault::TooLarge(_) | Fault::Timeout(_))) = ended {
                return Err((fault, Some(status)));
            }
            // A stream that brought something (a message, or an id to resume from) starts a
            // new row of tries: a server may close it after each message, as a way to poll.
            if brought || position.last_id != from {
                backoff.reset();
            }
            let Some(wait) = backoff.next(position.retry) else {
                let fault = ended.err().unwrap_or(Fault::StreamClosed);
                return Err((fault, Some(status)));
            };
            let cause = match &ended {
                Err(fault) => fault.to_string(),
                Ok(()) => "the server closed it".to_string(),
            };
            let resume = match &position.last_id {
                Some(id) => format!("with Last-Event-ID {id}"),
                None => "without Last-Event-ID (the server gave no event ids)".to_string(),
            };
            reopened(format!(
                "http: the GET stream for server messages: {cause}; reopening it {resume} \
                 in {wait:?} (attempt {} of {ATTEMPTS})",
                backoff.attempt()
            ));
            if !self.pause(wait, stop) {
                return Ok(true);
            }
        }
    }

    /// Whether listening is over: the proxy is stopping, or it ended the session.
    fn listening_over(&self, stop: &AtomicBool) -> bool {
        stop.load(Ordering::Relaxed) || lock(&self.session).closed
    }

    /// Waits `wait`, looking every 100 ms whether listening is over; `false` when it is.
    fn pause(&self, wait: Duration, stop: &AtomicBool) -> bool {
        let until = Instant::now() + wait;
        loop {
            if self.listening_over(stop) {
                return false;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
    }
}
