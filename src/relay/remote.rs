//! A server the relay does not start but reaches some other way (a remote server over
//! HTTP): the relay's interface to it.
//!
//! The relay runs as it does for a child process, with two stand-ins for the child's pipes:
//! the `c2s` pump writes the client's frames into a pipe, whose other end the [`Remote`] reads
//! ([`RemoteLink::from_client`]); the remote hands each whole server message to the `s2c`
//! pump through [`ServerFrames`] (a queue of frames, not a pipe: a remote has each message
//! whole already, so the pump writes it on as it is, without reading it back from a pipe or
//! looking for its end). From there every frame takes the same path as over stdio (the
//! handler, the tap, the sinks), and the stdio relay runs no code of this module.
//!
//! What the transport knows about a server frame (the HTTP status, content type, session
//! and event id) goes with it to the tap: [`ServerFrames::send`] queues it as it hands the
//! frame over, and the tap takes one per `s2c` frame, in the order the `s2c` pump took them.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};

use super::stats::RelayStats;
use crate::framelog::HttpFacts;
use crate::sync::lock;

/// A server reached other than through a child process's pipes.
pub trait Remote: std::fmt::Debug + Send {
    /// What the log's header shows as `server_argv` (nothing secret: no header values).
    fn describe(&self) -> Vec<String>;

    /// The transport's name for the log's header (`streamable-http`, `sse`): the one it
    /// speaks, or when it [detects](Remote::detects_transport) the transport, the one it
    /// tries first.
    fn transport(&self) -> &'static str;

    /// Whether the remote finds its transport out on the first exchange and names it
    /// through [`ServerFrames::transport_found`]: the log's header waits for it.
    fn detects_transport(&self) -> bool {
        false
    }

    /// Starts serving the client's frames from `link.from_client` until that ends (or
    /// `link.stop` is set), writing the server's through `link.to_client`, on threads of
    /// its own; returns at once. Dropping every clone of `link.finished` says it is done:
    /// nothing more will be written.
    fn start(self: Box<Self>, link: RemoteLink) -> io::Result<()>;
}

/// What a [`Remote`] is given to serve the client with.
#[derive(Debug)]
pub struct RemoteLink {
    /// The client's frames as the relay forwards them, one per line, until end of stream
    /// (the client closed its end).
    pub from_client: File,
    /// Where the server's messages go.
    pub to_client: ServerFrames,
    /// Set when the proxy is asked to stop (a signal): give up what is under way.
    pub stop: Arc<AtomicBool>,
    /// Dropped when the remote is done.
    pub finished: mpsc::Sender<()>,
}

/// What the transport tells the tap: the facts of the server frames written and not yet
/// logged, oldest first, and the transport's name once it is known.
#[derive(Debug)]
pub(crate) struct TransportNotes {
    facts: Mutex<VecDeque<HttpFacts>>,
    /// The transport's name: set from the start, or when the remote has found it out.
    name: Mutex<Option<&'static str>>,
    found: Condvar,
    /// The name when the remote never says (it exchanged nothing).
    otherwise: &'static str,
}

impl TransportNotes {
    /// Notes for `remote`'s frames.
    pub(crate) fn for_remote(remote: &dyn Remote) -> Self {
        TransportNotes {
            facts: Mutex::default(),
            name: Mutex::new((!remote.detects_transport()).then(|| remote.transport())),
            found: Condvar::new(),
            otherwise: remote.transport(),
        }
    }

    /// The facts of the next server frame the tap logs.
    pub(crate) fn next(&self) -> Option<HttpFacts> {
        lock(&self.facts).pop_front()
    }

    /// The transport's name, waiting until it is known (the remote has found it out, or
    /// the run [is ending](TransportNotes::settle)).
    pub(crate) fn transport(&self) -> &'static str {
        let mut name = lock(&self.name);
        loop {
            if let Some(name) = *name {
                return name;
            }
            name = self
                .found
                .wait(name)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }

    /// Names the transport, unless it is named already.
    fn found(&self, transport: &'static str) {
        lock(&self.name).get_or_insert(transport);
        self.found.notify_all();
    }

    /// The run is ending: a transport the remote never named is the one it tried first.
    pub(crate) fn settle(&self) {
        self.found(self.otherwise);
    }
}

/// A server message handed to the `s2c` pump: its text without a line ending, shared with
/// the remote, which may still be reading it (for the requests it answers) while the pump
/// writes it on.
pub(crate) type Frame = Arc<Vec<u8>>;

/// The queue from a remote to the `s2c` pump, which takes its frames in the order they were
/// sent until every sender is gone.
#[derive(Debug)]
pub(crate) struct Handoff {
    sender: Mutex<Option<mpsc::SyncSender<Frame>>>,
    close_requested: AtomicBool,
}

impl Handoff {
    /// A queue holding at most one frame besides the one the pump is writing: a remote
    /// whose client reads slowly waits, as it would on a full pipe.
    pub(crate) fn new() -> (Arc<Handoff>, mpsc::Receiver<Frame>) {
        let (sender, frames) = mpsc::sync_channel(1);
        let handoff = Handoff {
            sender: Mutex::new(Some(sender)),
            close_requested: AtomicBool::new(false),
        };
        (Arc::new(handoff), frames)
    }

    /// Takes no more frames: the pump writes on those handed over and ends. Never waits for
    /// a hand-off under way (it closes once that is done).
    pub(crate) fn close(&self) {
        self.close_requested.store(true, Ordering::Relaxed);
        if let Ok(mut sender) = self.sender.try_lock() {
            *sender = None;
        }
    }
}

/// The server's side of the relay, as the remote writes to it. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ServerFrames {
    handoff: Arc<Handoff>,
    notes: Arc<TransportNotes>,
    stats: Arc<RelayStats>,
}

impl ServerFrames {
    pub(crate) fn new(
        handoff: Arc<Handoff>,
        notes: Arc<TransportNotes>,
        stats: Arc<RelayStats>,
    ) -> Self {
        ServerFrames {
            handoff,
            notes,
            stats,
        }
    }

    /// Hands one server message to the relay (`message` without a line ending and holding
    /// no `\n`; the caller may keep a reference to read it meanwhile), its `facts` going to
    /// its log line. Waits while the relay holds a frame not yet written on. `false` when
    /// the relay no longer takes frames (the run is ending).
    pub fn send(&self, message: Arc<Vec<u8>>, facts: HttpFacts) -> bool {
        debug_assert!(memchr::memchr(b'\n', &message).is_none());
        let mut sender = lock(&self.handoff.sender);
        if self.handoff.close_requested.load(Ordering::Relaxed) {
            *sender = None;
        }
        // Queued before the pump can take the frame, under the lock that orders the frames:
        // the tap finds the facts of each frame in the frames' order.
        let sent = sender.as_ref().is_some_and(|to_pump| {
            lock(&self.notes.facts).push_back(facts);
            to_pump.send(message).is_ok()
        });
        if self.handoff.close_requested.load(Ordering::Relaxed) {
            *sender = None;
        }
        if !sent {
            // The facts (if queued) are never asked for: no frame follows them.
            self.stats
                .error("remote: a server message could not be handed to the relay".into());
        }
        sent
    }

    /// Names the transport the remote found out it speaks (for the log's header; see
    /// [`Remote::detects_transport`]). Only the first name counts.
    pub fn transport_found(&self, transport: &'static str) {
        self.notes.found(transport);
    }

    /// A line for the log trailer's `errors` (a transport fault with no request to answer).
    pub fn error(&self, line: String) {
        self.stats.error(line);
    }
}
