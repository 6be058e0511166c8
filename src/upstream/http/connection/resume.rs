//! Resuming an event stream that ended too soon, where the server gave event ids (the
//! specification's resumability): a GET with `Last-Event-ID` asks for the rest, read as the
//! stream's continuation. For a POST's stream, while requests of it are unanswered; for the
//! standalone GET stream, whenever it ends ([`super::listen`]). Both wait as the server's
//! `retry:` says (or [`FIRST_WAIT`]), doubled at each attempt in a row, at most
//! [`WAIT_CAP`], and give up after [`ATTEMPTS`] attempts in a row without a new event.

use std::time::{Duration, Instant};

use ureq::http::Response;
use ureq::Body;

use super::{call_for_stream, status_fault, Connection, Exchange, ServerMessage};
use crate::framelog::{HttpFacts, HttpVia};
use crate::upstream::http::auth::bearer::authorized;
use crate::upstream::http::fault::Fault;

/// How many times in a row a stream is re-opened without a new event before the fault
/// that ended it is given.
pub(super) const ATTEMPTS: u32 = 5;

/// The wait before the first attempt when the server gave no `retry:`.
const FIRST_WAIT: Duration = Duration::from_millis(250);

/// The longest wait before an attempt, whatever the server's `retry:` says.
pub(super) const WAIT_CAP: Duration = Duration::from_secs(30);

/// Where a stream stood when it ended: what resuming it needs.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Position {
    /// The id of the last event read (given as `Last-Event-ID`).
    pub(crate) last_id: Option<String>,
    /// The server's last `retry:` (the time to wait before reconnecting).
    pub(crate) retry: Option<Duration>,
}

/// Attempts in a row to reopen a stream, and the wait before each.
#[derive(Debug, Default)]
pub(super) struct Backoff {
    attempts: u32,
}

impl Backoff {
    /// The wait before the next attempt: the server's `retry` (else [`FIRST_WAIT`]) doubled
    /// for each attempt before it in a row, at most [`WAIT_CAP`]; `None` after
    /// [`ATTEMPTS`].
    pub(super) fn next(&mut self, retry: Option<Duration>) -> Option<Duration> {
        if self.attempts >= ATTEMPTS {
            return None;
        }
        let wait = retry
            .unwrap_or(FIRST_WAIT)
            .saturating_mul(1 << self.attempts)
            .min(WAIT_CAP);
        self.attempts += 1;
        Some(wait)
    }

    /// The number of the attempt last waited for (1 for the first).
    pub(super) fn attempt(&self) -> u32 {
        self.attempts
    }

    /// A reopened stream brought a new event: the next fault starts a new row.
    pub(super) fn reset(&mut self) {
        self.attempts = 0;
    }
}

impl Connection {
    /// GETs an event stream of the session: the standalone one, or with `from` the rest of a
    /// stream after that event (`Last-Event-ID`). A 401 renews the token and asks again, as
    /// for every request. A success status or a 405 is the response; any other status a
    /// fault. Reads may stay silent for `idle` at most.
    pub(super) fn open_stream(
        &self,
        from: Option<&str>,
        idle: Option<Duration>,
    ) -> Result<Response<Body>, (Fault, Option<u16>)> {
        authorized(self.auth.as_deref(), |bearer| {
            let mut get = self.agent.get(&self.config.url);
            if let Some(from) = from {
                get = get.header("Last-Event-ID", from);
            }
            let (request, _) = self.common_headers(get, bearer, None);
            let request = request.config().timeout_per_read(idle).build();
            let response = call_for_stream(request, self.config.timeout)?;
            match response.status().as_u16() {
                200..=299 | 405 => Ok(response),
                status => Err((status_fault(response, self.auth.as_deref()), Some(status))),
            }
        })
    }

    /// After a POST's event stream ended (`ended`: closed, or the fault that cut it) at
    /// `position`: while requests of `exchange` are unanswered and the server gave ids, GETs
    /// the rest with `Last-Event-ID` and reads it like the POST's stream (its messages
    /// logged `via: post`). What ended the last stream when it cannot be resumed (no id, a
    /// GET refused, no new event [`ATTEMPTS`] times in a row).
    pub(super) fn resume(
        &self,
        exchange: &mut Exchange<'_, '_>,
        mut ended: Result<(), Fault>,
        mut position: Position,
        each: &mut dyn FnMut(&ServerMessage) -> bool,
    ) -> Result<(), Fault> {
        let mut backoff = Backoff::default();
        while !exchange.unanswered.is_empty() && !exchange.abandoned {
            // A timeout or an oversized event is not a broken connection: it would recur.
            if matches!(&ended, Err(Fault::Timeout(_) | Fault::TooLarge(_))) {
                break;
            }
            let Some(from) = position.last_id.clone() else {
                break;
            };
            let Some(wait) = backoff.next(position.retry) else {
                break;
            };
            std::thread::sleep(wait);
            let timeout = self.config.timeout;
            let sent = Instant::now();
            let idle = exchange.out.idle(timeout);
            let Ok(response) = self.open_stream(Some(&from), idle) else {
                break;
            };
            // The time to the first byte of the resumed answer: from the resuming GET.
            let facts = HttpFacts {
                ttfb_us: u64::try_from(sent.elapsed().as_micros()).ok(),
                ..self.facts(HttpVia::Post, &response)
            };
            if !(200..300).contains(&response.status().as_u16())
                || facts.content_type.as_deref() != Some("text/event-stream")
            {
                break;
            }
            tracing::warn!(
                "ctxopt-proxy: {}: {}; resuming the stream after event {from} (Last-Event-ID)",
                self.shown_url,
                match &ended {
                    Err(fault) => fault.to_string(),
                    Ok(()) => "the stream ended before the response".into(),
                }
            );
            let mut body = response.into_body();
            ended = self.read_stream(body.as_reader(), facts, timeout, &mut position, &mut |m| {
                self.answered(exchange, m, each)
            });
            if position.last_id.as_deref() != Some(from.as_str()) {
                backoff.reset();
            }
        }
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_from_the_servers_retry_up_to_the_cap_and_the_attempts_end() {
        let mut backoff = Backoff::default();
        let waits: Vec<_> = std::iter::from_fn(|| backoff.next(None)).collect();
        let ms = |n| Duration::from_millis(n);
        assert_eq!(waits, [ms(250), ms(500), ms(1000), ms(2000), ms(4000)]);
        let mut backoff = Backoff::default();
        let retry = Some(Duration::from_secs(10));
        let waits: Vec<_> = std::iter::from_fn(|| backoff.next(retry)).collect();
        assert_eq!(
            waits,
            [ms(10_000), ms(20_000), WAIT_CAP, WAIT_CAP, WAIT_CAP],
            "a retry: of 10 s doubled, capped at 30 s"
        );
        assert_eq!(backoff.attempt(), ATTEMPTS);
        backoff.reset();
        assert_eq!(backoff.next(Some(ms(7))), Some(ms(7)));
        assert_eq!(backoff.attempt(), 1);
    }
}
