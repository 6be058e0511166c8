//! One direction of the relay: read a frame, write the very same bytes on, count it, hand
//! the bytes to the tap. This loop is the hot path; nothing here parses a frame (the
//! [`Interceptor`], when tools are injected, byte-searches each frame and parses only the
//! few it takes part in).

use std::io::Read;
use std::sync::Arc;

use super::intercept::Interceptor;
use super::line_reader::LineReader;
use super::outlet::Outlet;
use super::stats::{DirStats, RelayStats};
use super::tap::TapSender;
use crate::framelog::Direction;

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
        let dir = self.dir.as_str();
        let mut reader = LineReader::new(input);
        loop {
            let frame = match reader.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                Err(err) => {
                    self.stats.error(format!("{dir}: read failed: {err}"));
                    break;
                }
            };
            let mut server_raw = None;
            let mut frame = frame;
            if let Some(intercept) = &self.intercept {
                match self.dir {
                    Direction::C2s if intercept.on_client_frame(&frame) => continue,
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
            let written = self.outlet.write_frame(&frame).unwrap_or_else(|err| {
                self.stats.error(format!(
                    "{dir}: write failed: {err}; no longer relaying this way"
                ));
                if let Some(other) = &self.on_break_close {
                    other.close();
                }
                false
            });
            if written {
                self.dir_stats().relayed(frame.len());
                self.tap.relayed_as(ticket, self.dir, frame, server_raw);
            } else {
                self.dir_stats().discarded(frame.len());
                self.tap.not_relayed(ticket);
            }
        }
        // With injected tools the client's outlet stays open for answers still being
        // written; [`Interceptor::finish`] closes it.
        if !(self.dir == Direction::S2c && self.intercept.is_some()) {
            self.outlet.close();
        }
    }
}
