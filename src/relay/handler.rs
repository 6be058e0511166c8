//! What may answer or rewrite a frame: the relay's interface to the parts of the proxy that
//! take part in the conversation (the injected tools and the `tools/list` extension today).
//!
//! A [`FrameHandler`] sees each whole frame on the relay thread that read it, before it is
//! written on, and decides per frame ([`ClientVerdict`], [`ServerVerdict`]): pass it
//! untouched (the common case; the frame then goes on exactly as it would without a
//! handler), take it and answer it (a client frame; the answer is written to the client
//! by the relay, now or on a worker), or replace it by another frame (a server frame).
//! It decides, the relay does the writing, the ordering and the logging: a frame a handler
//! takes is logged `c2p`, its answer `p2c`, and a replacement as the handler asks
//! ([`Replaced`]).
//!
//! A handler also says which frames it must see whole ([`FrameHandler::sees_whole`]): a
//! long frame is otherwise written on as it arrives and never reaches the handler (see
//! [`super::pump`]).

use crate::framelog::{Direction, LeftWhole};

/// Work that answers a client frame a handler took, run on one of the relay's answer
/// workers once the tap has logged every frame relayed before the taken one: the answer
/// (one JSON-RPC message, without its line ending), or `None` when there is nothing to
/// send any more (the call was cancelled meanwhile).
pub type Answer = Box<dyn FnOnce() -> Option<Vec<u8>> + Send>;

/// What becomes of a client frame.
#[non_exhaustive]
pub enum ClientVerdict {
    /// Forward it to the server untouched.
    Pass,
    /// The proxy takes it (logged `c2p`, never forwarded) and sends nothing back (a
    /// cancellation of a call the proxy answers).
    Take,
    /// The proxy takes it and answers it at once with this message (without line ending).
    Answer(Vec<u8>),
    /// The proxy takes it and answers it later, off the relay thread.
    AnswerLater(Answer),
}

impl std::fmt::Debug for ClientVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientVerdict::Pass => f.write_str("Pass"),
            ClientVerdict::Take => f.write_str("Take"),
            ClientVerdict::Answer(bytes) => f
                .debug_tuple("Answer")
                .field(&String::from_utf8_lossy(bytes))
                .finish(),
            ClientVerdict::AnswerLater(_) => f.write_str("AnswerLater(..)"),
        }
    }
}

/// What becomes of a server frame.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ServerVerdict {
    /// Relay it to the client untouched.
    Pass,
    /// Relay it to the client untouched, and log why it was not compacted (a `tools/call`
    /// result over the compaction limit the proxy could not cut down: `left_whole`).
    LeftWhole(LeftWhole),
    /// Write this frame (line ending included) to the client instead.
    Replace {
        /// The frame the client receives.
        frame: Vec<u8>,
        /// How the log keeps the two.
        log: Replaced,
    },
}

/// How the log records a server frame that was replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Replaced {
    /// One `s2c` line for the frame the client received, with the server's original text
    /// (this, without its line ending) in its `server_raw`: for a small edit of the
    /// server's own answer (the `tools/list` extension).
    WithServerRaw(String),
    /// The server's frame logged `s2c` as it came, then the frame the client received
    /// logged `p2c` right after it, naming the `s2c` line's `seq` in `compacts` and carrying
    /// its pairing (`method`, `tool`, `latency_us`, `protocol`): for a frame the proxy
    /// substitutes with one of its own (a compacted tool result).
    Separately,
}

/// The relay's interface to what takes part in the conversation. Called on the relay
/// threads: keep each call short, and decide with byte searches before parsing anything.
pub trait FrameHandler: std::fmt::Debug + Send + Sync {
    /// Whether the next frame read in `dir` must be gathered whole and shown to this
    /// handler, however long it is. `false` lets a long frame be written on as it arrives
    /// (it then never reaches [`on_client_frame`](Self::on_client_frame) or
    /// [`on_server_frame`](Self::on_server_frame)). Asked for every long frame, so it
    /// must be cheap.
    fn sees_whole(&self, dir: Direction) -> bool;

    /// A whole client frame (line ending included), before it is forwarded.
    fn on_client_frame(&self, frame: &[u8]) -> ClientVerdict;

    /// A whole server frame (line ending included), before it is relayed.
    fn on_server_frame(&self, frame: &[u8]) -> ServerVerdict;
}
