//! The frame log: one JSON Lines file per proxy run, a record per relayed frame.
//!
//! # Layout
//! - [`record`]: the line types (a public format, see `docs/frame-log.md`).
//! - [`writer`]: the 0600, append-only file and its failure accounting.
//! - [`reader`]: the streaming reader (a line at a time, constant memory in the log's size).
//! - [`exchanges`]: the pairing iterator over a log (each answer with its request), which
//!   every reader of logs uses: `report`, `audit`, `gap`, `ingest`.
//! - [`accounting`]: a relayed frame in, its record out (kind, pairing, tokens).
//! - [`classify`], [`pairing`], [`meta_strip`], [`json_scan`]: the pieces accounting uses,
//!   all working on spans of the original frame text.

pub mod accounting;
pub(crate) mod classify;
pub(crate) mod exchanges;
pub mod json_scan;
pub mod meta_strip;
pub(crate) mod pairing;
pub(crate) mod reader;
pub mod record;
pub mod writer;

pub use record::{
    BatchItem, Direction, ExitStatus, Frame, FrameKind, Header, HttpFacts, HttpVia, Identity,
    LeftWhole, LeftWholeReason, LineEnding, LogLine, PerDirection, Pins, Trailer, FORMAT_VERSION,
};
