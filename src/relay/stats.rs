//! Counters the relay keeps per direction, read by the trailer. Relaxed atomics: the relay
//! only adds, and the trailer reads after the relay has stopped.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::framelog::PerDirection;

/// Counters for one direction.
#[derive(Debug, Default)]
pub(crate) struct DirStats {
    /// Frames written on.
    pub(crate) frames: AtomicU64,
    /// Bytes written on.
    pub(crate) bytes: AtomicU64,
    /// Frames read but not written on (the receiving side had gone).
    pub(crate) discarded_frames: AtomicU64,
    /// Bytes of those frames.
    pub(crate) discarded_bytes: AtomicU64,
    /// Bytes moved on without a copy (`splice`; see [`super::zero_copy`]), part of `bytes`.
    pub(crate) spliced_bytes: AtomicU64,
}

impl DirStats {
    /// Counts a frame written on.
    pub(crate) fn relayed(&self, len: usize) {
        self.frames.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(len as u64, Ordering::Relaxed);
    }

    /// Counts a frame that could not be written on.
    pub(crate) fn discarded(&self, len: usize) {
        self.discarded_frames.fetch_add(1, Ordering::Relaxed);
        self.discarded_bytes
            .fetch_add(len as u64, Ordering::Relaxed);
    }
}

/// Counters for both directions plus the relay's own errors.
#[derive(Debug, Default)]
pub(crate) struct RelayStats {
    /// Client to server.
    pub(crate) c2s: DirStats,
    /// Server to client.
    pub(crate) s2c: DirStats,
    /// The proxy's own answers that could not be delivered (the client's end had closed,
    /// or the run ended first).
    pub(crate) undelivered: AtomicU64,
    errors: Mutex<Vec<String>>,
}

impl RelayStats {
    /// Frames relayed each way.
    pub(crate) fn frames(&self) -> PerDirection {
        PerDirection {
            c2s: self.c2s.frames.load(Ordering::Relaxed),
            s2c: self.s2c.frames.load(Ordering::Relaxed),
        }
    }

    /// Bytes relayed each way.
    pub(crate) fn bytes(&self) -> PerDirection {
        PerDirection {
            c2s: self.c2s.bytes.load(Ordering::Relaxed),
            s2c: self.s2c.bytes.load(Ordering::Relaxed),
        }
    }

    /// Counts answers of the proxy that could not be delivered.
    pub(crate) fn undelivered_answers(&self, count: u64) {
        self.undelivered.fetch_add(count, Ordering::Relaxed);
    }

    /// The line for the trailer and stderr when answers of the proxy were not delivered.
    pub(crate) fn undelivered_line(&self) -> Option<String> {
        let count = self.undelivered.load(Ordering::Relaxed);
        (count > 0).then(|| {
            format!(
                "{count} answers of the proxy (injected tools) not delivered: the client's end had closed or the run ended first"
            )
        })
    }

    /// Records a relay error (a failed read or write) for the trailer.
    pub(crate) fn error(&self, line: String) {
        if let Ok(mut errors) = self.errors.lock() {
            errors.push(line);
        }
    }

    /// The relay's errors, plus a line per direction that discarded frames and one for
    /// undelivered answers.
    pub(crate) fn error_lines(&self) -> Vec<String> {
        let mut lines = self.errors.lock().map(|e| e.clone()).unwrap_or_default();
        lines.extend(self.undelivered_line());
        for (name, d) in [("c2s", &self.c2s), ("s2c", &self.s2c)] {
            let frames = d.discarded_frames.load(Ordering::Relaxed);
            if frames > 0 {
                let bytes = d.discarded_bytes.load(Ordering::Relaxed);
                lines.push(format!(
                    "{name}: {frames} frames ({bytes} bytes) read but not relayed: the receiving side had closed"
                ));
            }
        }
        lines
    }
}
