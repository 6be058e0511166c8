//! Ingestion on the proxy's tap thread: [`IngestSink`], the relay's
//! [`FrameSink`] that keeps the raw text of each relayed
//! `tools/call` request until its response comes, then hands both to
//! [`Bridge::on_frame_pair`].

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::framelog::{Direction, Frame, FrameKind};
use crate::import::mcp::FramePair;
use crate::injected::{Bridge, BridgeError};
use crate::relay::sink::{FrameSink, LogPlace};

/// Tool results of the relayed traffic into the bridge's store.
#[derive(Debug)]
pub(crate) struct IngestSink {
    bridge: Arc<Bridge>,
    requests: HashMap<String, VecDeque<String>>,
    /// The last write failed (said once on stderr, until one succeeds again).
    failing: bool,
}

impl IngestSink {
    /// Ingestion into `bridge`.
    pub(crate) fn new(bridge: Arc<Bridge>) -> IngestSink {
        IngestSink {
            bridge,
            requests: HashMap::new(),
            failing: false,
        }
    }
}

impl FrameSink for IngestSink {
    fn frame(&mut self, frame: &Frame, logged: Option<LogPlace<'_>>) {
        if frame.method.as_deref() != Some("tools/call") {
            return;
        }
        let (Some(id), Some(raw)) = (&frame.id, &frame.raw) else {
            return;
        };
        match (frame.dir, frame.kind) {
            (Direction::C2s, FrameKind::Request) => {
                self.requests
                    .entry(id.clone())
                    .or_default()
                    .push_back(raw.clone());
            }
            (Direction::S2c, FrameKind::Response | FrameKind::Error) => {
                let Some(queue) = self.requests.get_mut(id) else {
                    return;
                };
                let request = queue.pop_front();
                if queue.is_empty() {
                    self.requests.remove(id);
                }
                let Some(request) = request else { return };
                let pair = FramePair {
                    request: &request,
                    response: raw,
                    log_path: logged.map(|place| place.path),
                    seq: logged.map(|place| place.seq),
                    timestamp: Some(&frame.ts),
                };
                match self.bridge.on_frame_pair(&pair) {
                    Ok(_) if self.failing => {
                        self.failing = false;
                        tracing::warn!("ctxopt-proxy: store: writes succeed again");
                    }
                    Err(BridgeError::Store { error, .. }) if !self.failing => {
                        self.failing = true;
                        tracing::warn!(
                            "ctxopt-proxy: store: {error}; this tool result was not stored (relaying goes on; the next ones are tried)"
                        );
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }

    fn trailer_errors(&self) -> Vec<String> {
        self.bridge.failure_summary().into_iter().collect()
    }
}
