//! What receives a copy of each frame: the relay's interface to the sides that consume the
//! traffic after the fact (ingestion of tool results into the store today).
//!
//! The tap accounts each relayed frame (kind, id, pairing, tokens), writes its log line and
//! then hands the accounted [`Frame`] to every [`FrameSink`] in turn, in log order, on the
//! tap thread: never on the relay's path, so a slow sink delays the log and injected
//! answers (which wait for the tap), never a relayed frame.

use crate::framelog::{ExitStatus, Frame, Header, Pins};

/// Where a frame's line was written in the frame log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogPlace<'a> {
    /// The log file, absolute.
    pub path: &'a str,
    /// The line's `seq`.
    pub seq: u64,
}

/// Takes in each accounted frame, in log order.
pub trait FrameSink: std::fmt::Debug + Send {
    /// The session's header, once, before any frame (whether or not a log is written).
    fn session_started(&mut self, _header: &Header) {}

    /// One frame; `logged` says where its line is when it was written to the log (`None`
    /// without a log, or when the line could not be written).
    fn frame(&mut self, frame: &Frame, logged: Option<LogPlace<'_>>);

    /// The session ended at `ts` (the trailer's) with `exit`, after its last frame and
    /// before [`FrameSink::trailer_errors`].
    fn session_ended(&mut self, _ts: &str, _exit: &ExitStatus) {}

    /// Lines for the log trailer's `errors`, asked once at the end of the run.
    fn trailer_errors(&self) -> Vec<String>;

    /// The session's pins for the log trailer, asked once at the end of the run: the
    /// first sink that gives some is written (`None`: this sink does not pin).
    fn pins(&self) -> Option<Pins> {
        None
    }
}
