//! One direction of the relay: read, write the very same bytes on, count each frame, hand
//! each frame's bytes to the tap. This loop is the hot path; nothing here parses a frame
//! (the [`Interceptor`], when tools are injected, byte-searches each whole frame and parses
//! only the few it takes part in).
//!
//! # Whole frames and streamed frames
//! A frame is gathered whole while it is at most [`STREAM_AFTER`] bytes long, then written
//! on in one call. A longer one is written on piece by piece as it arrives (so reading
//! from one pipe and writing to the other overlap), holding the outlet until its last
//! byte so that nothing else is written in between, when no part of the proxy may need to
//! see it whole:
//! - without injected tools: always;
//! - server → client: while no `tools/list` or handshake request forwarded by the proxy
//!   awaits its answer (only those answers are ever rewritten);
//! - client → server with injected tools: never (any client frame may be a call the
//!   proxy answers itself or a request whose answer it rewrites, which takes the whole
//!   frame to tell).
//!
//! Either way the frame's bytes are gathered once, for the tap, which gets them when the
//! frame ends; its `ts` is when its first byte was written on.

use std::io::Read;
use std::sync::Arc;

use super::intercept::Interceptor;
use super::line_reader::{LineReader, READ_CHUNK};
use super::outlet::{FrameWriter, Outlet};
use super::spin::Poke;
use super::stats::{DirStats, RelayStats};
use super::tap::{TapSender, Ticket};
use crate::framelog::Direction;

/// A frame longer than this, still unfinished, is written on as it arrives when it may be;
/// shorter frames are written whole.
pub const STREAM_AFTER: usize = READ_CHUNK;

/// A relay direction and what it needs.
#[derive(Debug)]
pub struct Pump {
    /// Which way this pump relays.
    pub dir: Direction,
    /// Where it writes.
    pub outlet: Arc<Outlet>,
    /// An outlet to close when ours breaks (the client vanishing closes the server's stdin).
    pub on_break_close: Option<Arc<Outlet>>,
    /// The tap.
    pub tap: TapSender,
    /// The shared counters.
    pub stats: Arc<RelayStats>,
    /// The proxy's part in the conversation, when it injects tools.
    pub intercept: Option<Arc<Interceptor>>,
    /// Starts the other direction's busy-polling window after each frame relayed
    /// (`--spin-us`).
    pub poke: Option<Poke>,
}

/// A frame being written on as it arrives.
struct Stream<'a> {
    writer: FrameWriter<'a>,
    ticket: Ticket,
    /// Every piece so far was written.
    written: bool,
}

impl Pump {
    fn dir_stats(&self) -> &DirStats {
        match self.dir {
            Direction::S2c | Direction::P2c => &self.stats.s2c,
            Direction::C2s | Direction::C2p => &self.stats.c2s,
        }
    }

    /// Relays `input` until end of stream, then closes the outlet (see below for the
    /// client's outlet when tools are injected).
    pub fn run(self, input: impl Read) {
        let mut reader = LineReader::new(input);
        // The frame being read: the tap's copy, and the only one.
        let mut frame = Vec::new();
        let mut stream: Option<Stream<'_>> = None;
        loop {
            let piece = match reader.next_piece() {
                Ok(Some(piece)) => piece,
                Ok(None) => break,
                Err(err) => {
                    self.stats
                        .error(format!("{}: read failed: {err}", self.dir.as_str()));
                    break;
                }
            };
            if let Some(s) = &mut stream {
                s.written = s.written && self.write(&mut s.writer, piece.bytes);
                frame.extend_from_slice(piece.bytes);
                if piece.ends_frame {
                    if let Some(s) = stream.take() {
                        self.end_stream(s, std::mem::take(&mut frame));
                    }
                }
            } else if piece.ends_frame {
                let whole = if frame.is_empty() {
                    piece.bytes.to_vec()
                } else {
                    frame.extend_from_slice(piece.bytes);
                    std::mem::take(&mut frame)
                };
                self.relay_whole(whole);
            } else {
                frame.extend_from_slice(piece.bytes);
                if frame.len() > STREAM_AFTER && self.may_stream() {
                    stream = Some(self.start_stream(&frame));
                }
            }
        }
        // A frame unfinished at end of stream ends there.
        match stream {
            Some(s) => self.end_stream(s, frame),
            None if !frame.is_empty() => self.relay_whole(frame),
            None => {}
        }
        // With injected tools the client's outlet stays open for answers still being
        // written; [`Interceptor::finish`] closes it.
        if !(self.dir == Direction::S2c && self.intercept.is_some()) {
            self.outlet.close();
        }
    }

    /// Whether an unfinished frame may be written on before its end (see the module
    /// documentation).
    fn may_stream(&self) -> bool {
        match &self.intercept {
            None => true,
            Some(intercept) => self.dir == Direction::S2c && !intercept.awaits_server_answer(),
        }
    }

    /// Writes a piece on; `false` when it could not be (the outlet closed or broke).
    fn write(&self, writer: &mut FrameWriter<'_>, bytes: &[u8]) -> bool {
        writer.write(bytes).unwrap_or_else(|err| {
            self.stats.error(format!(
                "{}: write failed: {err}; no longer relaying this way",
                self.dir.as_str()
            ));
            if let Some(other) = &self.on_break_close {
                other.close();
            }
            false
        })
    }

    /// Relays a whole frame, unless the interceptor consumes or rewrites it.
    fn relay_whole(&self, frame: Vec<u8>) {
        let mut frame = frame;
        let mut server_raw = None;
        if let Some(intercept) = &self.intercept {
            match self.dir {
                Direction::C2s if intercept.on_client_frame(&frame) => return,
                Direction::S2c => {
                    if let Some((rewritten, original)) = intercept.on_server_frame(&frame) {
                        frame = rewritten;
                        server_raw = Some(original);
                    }
                }
                _ => {}
            }
        }
        let ticket = self.tap.ticket();
        let written = self.write(&mut self.outlet.lock(), &frame);
        self.tap_frame(ticket, frame, written, server_raw);
    }

    /// Holds the outlet and writes the frame's first bytes on.
    fn start_stream(&self, head: &[u8]) -> Stream<'_> {
        let mut writer = self.outlet.lock();
        let ticket = self.tap.ticket();
        let written = self.write(&mut writer, head);
        Stream {
            writer,
            ticket,
            written,
        }
    }

    /// Releases the outlet and hands the whole frame to the tap.
    fn end_stream(&self, stream: Stream<'_>, frame: Vec<u8>) {
        let Stream {
            writer,
            ticket,
            written,
        } = stream;
        drop(writer);
        self.tap_frame(ticket, frame, written, None);
    }

    /// Counts a frame and hands it to the tap (or gives its ticket back when it could not
    /// be written on).
    fn tap_frame(&self, ticket: Ticket, frame: Vec<u8>, written: bool, server_raw: Option<String>) {
        if let Some(poke) = &self.poke {
            poke.poke();
        }
        if written {
            self.dir_stats().relayed(frame.len());
            self.tap.relayed_as(ticket, self.dir, frame, server_raw);
        } else {
            self.dir_stats().discarded(frame.len());
            self.tap.not_relayed(ticket);
        }
    }
}
