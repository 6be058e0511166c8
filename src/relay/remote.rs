//! A server the relay does not start but reaches some other way (a remote server over
//! HTTP): the relay's interface to it.
//!
//! The relay runs exactly as it does for a child process, with a pipe standing in for each
//! of the child's: the `c2s` pump writes the client's frames into one pipe, whose other end
//! the [`Remote`] reads ([`RemoteLink::from_client`]); the remote writes the server's
//! messages through [`ServerFrames`] into the other, which the `s2c` pump reads. So every
//! frame takes the same path as over stdio (the pumps, the handler, the tap, the sinks) and
//! the stdio relay runs no code of this module.
//!
//! What the transport knows about a server frame (the HTTP status, content type, session
//! and event id) goes with it to the tap: [`ServerFrames::send`] queues it as it writes the
//! frame, and the tap takes one per `s2c` frame, in the order the `s2c` pump read them.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Condvar, Mutex};

use super::outlet::Outlet;
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

/// The write end of the server's side of the relay. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ServerFrames {
    outlet: Arc<Outlet>,
    notes: Arc<TransportNotes>,
    stats: Arc<RelayStats>,
}

impl ServerFrames {
    pub(crate) fn new(
        outlet: Arc<Outlet>,
        notes: Arc<TransportNotes>,
        stats: Arc<RelayStats>,
    ) -> Self {
        ServerFrames {
            outlet,
            notes,
            stats,
        }
    }

    /// Writes one server message toward the client (`message` without a line ending and
    /// holding no `\n`), its `facts` going to its log line. `false` when the relay no
    /// longer takes frames (the run is ending).
    pub fn send(&self, message: &[u8], facts: HttpFacts) -> bool {
        debug_assert!(memchr::memchr(b'\n', message).is_none());
        let mut writer = self.outlet.lock();
        // Queued before the first byte can reach the `s2c` pump, under the lock that
        // orders the frames: the tap finds the facts of each frame in the frames' order.
        lock(&self.notes.facts).push_back(facts);
        let written =
            matches!(writer.write(message), Ok(true)) && matches!(writer.write(b"\n"), Ok(true));
        if !written {
            // Nothing (or a part that the pump ends as a frame of its own) went on: the
            // facts stay queued for what the pump reads, or are never asked for.
            self.stats
                .error("remote: a server message could not be handed to the relay".into());
        }
        written
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
