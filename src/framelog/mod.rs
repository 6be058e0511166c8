//! The frame log: one JSON Lines file per proxy run, a record per relayed frame.
//!
//! # Layout
//! - [`record`]: the line types (a public format, see `docs/frame-log.md`).
//! - [`writer`]: the 0600, append-only file and its failure accounting.
//! - [`accounting`]: a relayed frame in, its record out (kind, pairing, tokens).
//! - [`classify`], [`pairing`], [`meta_strip`], [`json_scan`]: the pieces accounting uses,
//!   all working on spans of the original frame text.

pub mod accounting;
pub mod classify;
pub mod json_scan;
pub mod meta_strip;
pub mod pairing;
pub mod record;
pub mod writer;

pub use record::{
    BatchItem, Direction, ExitStatus, Frame, FrameKind, Header, LineEnding, LogLine, PerDirection,
    Trailer, FORMAT_VERSION,
};
