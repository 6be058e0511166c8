//! The proxy's live export: each frame record, as the tap accounts it, through
//! [`SessionSpans`] to the [`Exporter`]'s queue, which it never waits on.

use std::time::Duration;

use super::spans::SessionSpans;
use super::{ExportConfig, ExportReport, Exporter, OtelError};
use crate::framelog::{ExitStatus, Frame, Header};

/// How long the proxy, at the end of a session, waits for the collector to take what is
/// still queued; what it has not taken by then is counted as dropped.
pub const FINISH_LIMIT: Duration = Duration::from_secs(2);

/// One session's live export.
#[derive(Debug)]
pub struct LiveExport {
    spans: SessionSpans,
    exporter: Exporter,
}

impl LiveExport {
    /// Starts exporting the session `header` opens.
    pub fn start(config: &ExportConfig, header: &Header) -> Result<LiveExport, OtelError> {
        Ok(LiveExport {
            spans: SessionSpans::new(header, config.capture_content),
            exporter: Exporter::start(config)?,
        })
    }

    /// Takes one accounted frame; a span it finishes is queued (or dropped and counted).
    pub fn frame(&mut self, frame: &Frame) {
        if let Some(span) = self.spans.frame(frame) {
            self.exporter.offer(span);
        }
    }

    /// Ends the session at `end_ts`: queues the last spans and the metrics, and waits at
    /// most [`FINISH_LIMIT`] for them to be sent.
    pub fn finish(mut self, end_ts: &str, exit: &ExitStatus) -> ExportReport {
        for span in self.spans.finish(Some(end_ts), Some(exit)) {
            self.exporter.offer(span);
        }
        self.exporter
            .offer_metrics(self.spans.metrics(Some(end_ts)));
        self.exporter.finish(Some(FINISH_LIMIT))
    }
}
