//! The proxy's live export: [`OtlpSink`], a relay [`FrameSink`] that turns each frame, as
//! the tap accounts it, through [`SessionSpans`] into spans for the [`Exporter`]'s queue,
//! which it never waits on.

use std::sync::Arc;
use std::time::Duration;

use super::spans::SessionSpans;
use super::{ExportConfig, Exporter, OtelError};
use crate::framelog::{ExitStatus, Frame, Header};
use crate::redact::Redactor;
use crate::relay::sink::{FrameSink, LogPlace};

/// How long the proxy, at the end of a session, waits for the collector to take what is
/// still queued; what it has not taken by then is counted as dropped.
pub(crate) const FINISH_LIMIT: Duration = Duration::from_secs(2);

/// One session's live export, as a sink of the relay.
#[derive(Debug)]
pub(crate) struct OtlpSink {
    /// What redacts tool arguments and results, when they go into spans.
    content: Option<Arc<Redactor>>,
    /// The session's spans, from its header on.
    spans: Option<SessionSpans>,
    /// Running until the session ends.
    exporter: Option<Exporter>,
    /// What the export lost, for the trailer (said on stderr when the session ends).
    problem: Option<String>,
}

impl OtlpSink {
    /// Starts the exporter thread for `config` (it opens a connection only when it has
    /// something to send); `redactor` redacts tool arguments and results when the config
    /// puts them into spans.
    pub(crate) fn new(
        config: &ExportConfig,
        redactor: Arc<Redactor>,
    ) -> Result<OtlpSink, OtelError> {
        Ok(OtlpSink {
            content: config.capture_content.then_some(redactor),
            spans: None,
            exporter: Some(Exporter::start(config)?),
            problem: None,
        })
    }
}

impl FrameSink for OtlpSink {
    fn session_started(&mut self, header: &Header) {
        self.spans = Some(SessionSpans::new(header, self.content.clone()));
    }

    /// Takes one accounted frame; a span it finishes is queued (or dropped and counted).
    fn frame(&mut self, frame: &Frame, _logged: Option<LogPlace<'_>>) {
        let (Some(spans), Some(exporter)) = (&mut self.spans, &self.exporter) else {
            return;
        };
        for span in spans.frame(frame) {
            exporter.offer(span);
        }
    }

    /// Queues the last spans and the metrics, and waits at most [`FINISH_LIMIT`] for them
    /// to be sent.
    fn session_ended(&mut self, ts: &str, exit: &ExitStatus) {
        let Some(exporter) = self.exporter.take() else {
            return;
        };
        if let Some(spans) = &mut self.spans {
            for span in spans.finish(Some(ts), Some(exit)) {
                exporter.offer(span);
            }
            exporter.offer_metrics(spans.metrics(Some(ts)));
        }
        self.problem = exporter.finish(Some(FINISH_LIMIT)).problem();
        if let Some(line) = &self.problem {
            tracing::warn!("ctxopt-proxy: {line}");
        }
    }

    fn trailer_errors(&self) -> Vec<String> {
        self.problem.iter().cloned().collect()
    }
}
