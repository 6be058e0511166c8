//! Resuming a POST's event stream that ended before it answered every request, where the
//! server gave event ids (the specification's resumability): a GET with `Last-Event-ID`
//! asks for the rest, read as the stream's continuation.

use super::{Connection, Exchange, ServerMessage};
use crate::framelog::{HttpFacts, HttpVia};
use crate::upstream::http::fault::Fault;

/// How many times in a row a stream is re-opened without a new event before the fault
/// that ended it is given.
const ATTEMPTS: u32 = 3;

impl Connection {
    /// After a POST's event stream ended (`ended`: closed, or the fault that cut it), with
    /// `last_id` the id of its last event: while requests of `exchange` are unanswered and
    /// the server gave ids, GETs the rest with `Last-Event-ID` and reads it like the POST's
    /// stream (its messages logged `via: post`). What ended the last stream when it cannot
    /// be resumed (no id, a GET refused, no new event [`ATTEMPTS`] times in a row).
    pub(super) fn resume(
        &self,
        exchange: &mut Exchange<'_, '_>,
        mut ended: Result<(), Fault>,
        mut last_id: Option<String>,
        each: &mut dyn FnMut(&ServerMessage) -> bool,
    ) -> Result<(), Fault> {
        let mut attempts = 0;
        while !exchange.unanswered.is_empty() && !exchange.abandoned && attempts < ATTEMPTS {
            // A timeout or an oversized event is not a broken connection: it would recur.
            if matches!(&ended, Err(Fault::Timeout(_) | Fault::TooLarge(_))) {
                break;
            }
            let Some(from) = last_id.clone() else { break };
            attempts += 1;
            let timeout = self.config.timeout;
            let request = self
                .agent
                .get(&self.config.url)
                .header("Accept", "text/event-stream")
                .header("Last-Event-ID", &from);
            // The token in use now (the POST's may have been renewed since).
            let bearer = self.auth.as_ref().and_then(|auth| auth.header());
            let (request, _) = self.common_headers(request, bearer.as_deref(), None);
            let sent = std::time::Instant::now();
            let Ok(response) = request
                .config()
                .timeout_recv_response(Some(timeout))
                .timeout_per_read(Some(timeout))
                .build()
                .call()
            else {
                break;
            };
            let status = response.status().as_u16();
            // The time to the first byte of the resumed answer: from the resuming GET.
            let facts = HttpFacts {
                ttfb_us: u64::try_from(sent.elapsed().as_micros()).ok(),
                ..self.facts(HttpVia::Post, &response)
            };
            if !(200..300).contains(&status)
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
            ended = self.read_stream(body.as_reader(), facts, timeout, &mut last_id, &mut |m| {
                self.answered(exchange, m, each)
            });
            if last_id.as_deref() != Some(from.as_str()) {
                attempts = 0;
            }
        }
        ended
    }
}
