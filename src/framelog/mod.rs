//! The frame log: one JSON Lines file per proxy run, a record per relayed frame.

pub mod record;

pub use record::{
    BatchItem, Direction, ExitStatus, Frame, FrameKind, Header, LineEnding, LogLine, PerDirection,
    Trailer, FORMAT_VERSION,
};
