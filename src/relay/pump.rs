//! One direction of the relay: read, write the very same bytes on, count each frame, hand
//! each frame's bytes to the tap. This loop is the hot path; nothing here parses a frame
//! (a [`FrameHandler`], when there is one, sees each whole frame and decides whether it
//! passes untouched, is taken and answered, or is replaced).
//!
//! # Whole frames and streamed frames
//! A frame is gathered whole while it is at most [`STREAM_AFTER`] bytes long, then written
//! on in one call. A longer one is written on piece by piece as it arrives (so reading
//! from one pipe and writing to the other overlap), holding the outlet until its last
//! byte so that nothing else is written in between, when no part of the proxy may need to
//! see it whole:
//! - without a handler: always;
//! - with one: when [`FrameHandler::sees_whole`] says it need not see this frame (the
//!   injected tools: server → client while no `tools/list` or handshake request
//!   forwarded by the proxy awaits its answer, nor, with `--compact-results`, a forwarded
//!   `tools/call`, since only those answers are ever rewritten; client → server never,
//!   since any client frame may be a call the proxy answers itself, which takes the whole
//!   frame to tell).
//!
//! Either way the frame's bytes are gathered once, for the tap, which gets them when the
//! frame ends; its `ts` is when its first byte was written on.
//!
//! # Zero copy
//! Once a frame streams, the rest of it goes from the input pipe to the outlet by
//! `tee`/`splice` ([`zero_copy`]): the relay reads a duplicate once (the tap's copy, and
//! where it finds the frame's end) instead of reading and writing every byte. Where either
//! end is not a pipe or descriptor that allows it, the pump copies, as it does for whole
//! frames.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::{mpsc, Arc};

use super::answers::Answers;
use super::blocking::Blocking;
use super::handler::{ClientVerdict, FrameHandler, Replaced, ServerVerdict};
use super::line_reader::{LineReader, READ_CHUNK};
use super::outlet::{FrameWriter, Outlet};
use super::remote::Frame;
use super::stats::{DirStats, RelayStats};
use super::tap::{Note, TapSender, Ticket};
use super::zero_copy::{self, Moved, Peeker};
use crate::framelog::Direction;

/// A frame longer than this, still unfinished, is written on as it arrives when it may be;
/// shorter frames are written whole.
pub(crate) const STREAM_AFTER: usize = READ_CHUNK;

/// A relay direction and what it needs.
#[derive(Debug)]
pub(crate) struct Pump {
    /// Which way this pump relays.
    pub(crate) dir: Direction,
    /// Where it writes.
    pub(crate) outlet: Arc<Outlet>,
    /// An outlet to close when ours breaks (the client vanishing closes the server's stdin).
    pub(crate) on_break_close: Option<Arc<Outlet>>,
    /// The tap.
    pub(crate) tap: TapSender,
    /// The shared counters.
    pub(crate) stats: Arc<RelayStats>,
    /// The proxy's part in the conversation, when it takes part.
    pub(crate) intercept: Option<Intercept>,
}

/// What takes part in the conversation, and how its answers reach the client.
#[derive(Debug, Clone)]
pub(crate) struct Intercept {
    /// Decides what becomes of each whole frame.
    pub(crate) handler: Arc<dyn FrameHandler>,
    /// Writes the answers to the frames it takes (the `c2s` pump uses it).
    pub(crate) answers: Arc<Answers>,
}

/// How a frame moved on by zero copy ended.
enum ZeroCopyEnd {
    /// Its `\n` was moved on; what follows is still in the input.
    Frame,
    /// The input ended (or failed) first.
    Input,
    /// The frame goes on by copying (zero copy is not possible here, or no longer).
    Copying,
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
    pub(crate) fn run(self, input: File) {
        let mut peeker = Peeker::new().ok();
        let mut reader = LineReader::new(Blocking(&input));
        // The frame being read: the tap's copy, and the only one.
        let mut frame = Vec::new();
        let mut stream: Option<Stream<'_>> = None;
        loop {
            let piece = match reader.next_piece() {
                Ok(Some(piece)) => piece,
                Ok(None) => break,
                Err(err) => {
                    self.read_failed(&err);
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
                    let mut s = self.start_stream(&frame);
                    // A piece that does not end its frame empties the reader's buffer:
                    // the rest of the frame is still in the input.
                    match self.zero_copy(&mut peeker, input.as_fd(), &mut s, &mut frame) {
                        ZeroCopyEnd::Frame => self.end_stream(s, std::mem::take(&mut frame)),
                        ZeroCopyEnd::Input => {
                            stream = Some(s);
                            break;
                        }
                        ZeroCopyEnd::Copying => stream = Some(s),
                    }
                }
            }
        }
        // A frame unfinished at end of stream ends there.
        match stream {
            Some(s) => self.end_stream(s, frame),
            None if !frame.is_empty() => self.relay_whole(frame),
            None => {}
        }
        self.finish();
    }

    /// Relays the frames a remote server hands over whole (each without its line ending)
    /// until the remote is done, then closes the outlet as [`Pump::run`] does. A long frame
    /// the handler need not see is written on as it is, as a long frame from a pipe streams
    /// (the tap then gets the remote's own bytes, or a copy if the remote is still reading
    /// them); any other is relayed as a whole frame read from a pipe is.
    pub(crate) fn run_frames(self, frames: mpsc::Receiver<Frame>) {
        for frame in frames {
            if frame.len() >= STREAM_AFTER && self.may_stream() {
                let mut writer = self.outlet.lock();
                let ticket = self.tap.ticket_writing(&writer);
                let written = self.write(&mut writer, &frame) && self.write(&mut writer, b"\n");
                drop(writer);
                self.tap_frame(ticket, line(frame), written, None);
            } else {
                self.relay_whole(line(frame));
            }
        }
        self.finish();
    }

    /// Closes the outlet once the input is done (see below for the client's outlet when tools
    /// are injected).
    fn finish(&self) {
        // With a handler the client's outlet stays open for answers still being written;
        // [`Answers::finish`] closes it.
        if !(self.dir == Direction::S2c && self.intercept.is_some()) {
            self.outlet.close();
        }
    }

    fn read_failed(&self, err: &std::io::Error) {
        self.stats
            .error(format!("{}: read failed: {err}", self.dir.as_str()));
    }

    /// Moves the rest of a streamed frame from `input` to the outlet by zero copy,
    /// appending the tap's copy to `frame`, up to and including its `\n`. Drops the
    /// peeker (copying from then on, this frame and the next) when the input is not a pipe
    /// or the outlet takes no splice.
    fn zero_copy(
        &self,
        peeker: &mut Option<Peeker>,
        input: BorrowedFd<'_>,
        stream: &mut Stream<'_>,
        frame: &mut Vec<u8>,
    ) -> ZeroCopyEnd {
        loop {
            let Some(p) = peeker else {
                return ZeroCopyEnd::Copying;
            };
            let start = frame.len();
            match p.peek(input, frame) {
                Ok(0) => return ZeroCopyEnd::Input,
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::InvalidInput => {
                    *peeker = None;
                    return ZeroCopyEnd::Copying;
                }
                Err(err) => {
                    self.read_failed(&err);
                    return ZeroCopyEnd::Input;
                }
            }
            let (len, ends_frame) = match memchr::memchr(b'\n', &frame[start..]) {
                Some(i) => (i + 1, true),
                None => (frame.len() - start, false),
            };
            // The bytes looked at beyond the frame's end stay in the input.
            frame.truncate(start + len);
            match self.move_on(input, stream, &frame[start..], len) {
                None => return ZeroCopyEnd::Input,
                Some(false) => *peeker = None,
                Some(true) => {}
            }
            if ends_frame {
                return ZeroCopyEnd::Frame;
            }
        }
    }

    /// Moves the next `len` bytes of `input` (whose copy is `copy`) on by splicing, or by
    /// writing the copy where the outlet takes no splice; when the frame is no longer
    /// being written on, only takes them out of the input. `None` when the input failed;
    /// `Some(false)` when the outlet took no splice.
    fn move_on(
        &self,
        input: BorrowedFd<'_>,
        stream: &mut Stream<'_>,
        copy: &[u8],
        len: usize,
    ) -> Option<bool> {
        let mut left = len;
        let mut splices = true;
        if stream.written {
            match stream.writer.splice_from(input, len) {
                Some(Moved::All) => {
                    left = 0;
                    self.dir_stats()
                        .spliced_bytes
                        .fetch_add(len as u64, std::sync::atomic::Ordering::Relaxed);
                }
                Some(Moved::Unsupported) => {
                    splices = false;
                    stream.written = self.write(&mut stream.writer, copy);
                }
                Some(Moved::Failed { moved, error }) => {
                    self.write_failed(&error);
                    stream.written = false;
                    left -= moved;
                }
                None => stream.written = false,
            }
        }
        match zero_copy::discard(input, left) {
            Ok(()) => Some(splices),
            Err(err) => {
                self.read_failed(&err);
                None
            }
        }
    }

    /// Whether an unfinished frame may be written on before its end (see the module
    /// documentation).
    fn may_stream(&self) -> bool {
        match &self.intercept {
            None => true,
            Some(intercept) => !intercept.handler.sees_whole(self.dir),
        }
    }

    /// Writes a piece on; `false` when it could not be (the outlet closed or broke).
    fn write(&self, writer: &mut FrameWriter<'_>, bytes: &[u8]) -> bool {
        writer.write(bytes).unwrap_or_else(|err| {
            self.write_failed(&err);
            false
        })
    }

    /// Reports a broken outlet, and closes the other one when it should follow.
    fn write_failed(&self, err: &std::io::Error) {
        self.stats.error(format!(
            "{}: write failed: {err}; no longer relaying this way",
            self.dir.as_str()
        ));
        if let Some(other) = &self.on_break_close {
            other.close();
        }
    }

    /// Relays a whole frame, unless the handler takes or replaces it.
    fn relay_whole(&self, frame: Vec<u8>) {
        let Some(intercept) = &self.intercept else {
            return self.write_whole(frame, None);
        };
        match self.dir {
            Direction::C2s => match intercept.handler.on_client_frame(&frame) {
                ClientVerdict::Pass => self.write_whole(frame, None),
                verdict => self.take(intercept, frame, verdict),
            },
            Direction::S2c => match intercept.handler.on_server_frame(&frame) {
                ServerVerdict::Pass => self.write_whole(frame, None),
                ServerVerdict::LeftWhole(left) => {
                    self.write_whole(frame, Some(Note::LeftWhole(left)))
                }
                ServerVerdict::Replace {
                    frame: replacement,
                    log: Replaced::WithServerRaw(original),
                } => self.write_whole(replacement, Some(Note::ServerRaw(original))),
                ServerVerdict::Replace {
                    frame: replacement,
                    log: Replaced::Separately,
                } => self.substitute(frame, replacement),
            },
            _ => self.write_whole(frame, None),
        }
    }

    /// Writes a whole frame on and hands it to the tap (with what its record adds).
    fn write_whole(&self, frame: Vec<u8>, note: Option<Note>) {
        // The ticket is taken holding the outlet, so the log's order is the order in which
        // frames reach the reader, whoever else writes to this outlet.
        let mut writer = self.outlet.lock();
        let ticket = self.tap.ticket_writing(&writer);
        let written = self.write(&mut writer, &frame);
        drop(writer);
        self.tap_frame(ticket, frame, written, note);
    }

    /// Writes `replacement` on instead of the server's `frame`: the tap gets the server's
    /// frame (`s2c`) and then the replacement (`p2c`).
    fn substitute(&self, frame: Vec<u8>, replacement: Vec<u8>) {
        let mut writer = self.outlet.lock();
        let ticket = self.tap.ticket_writing(&writer);
        let written = self.write(&mut writer, &replacement);
        drop(writer);
        if written {
            self.dir_stats().relayed(replacement.len());
            self.tap.replaced(ticket, frame, replacement);
        } else {
            self.dir_stats().discarded(frame.len());
            self.tap.not_relayed(ticket, self.dir);
        }
    }

    /// A client frame the handler took: logged `c2p`, then answered as the verdict says.
    fn take(&self, intercept: &Intercept, frame: Vec<u8>, verdict: ClientVerdict) {
        // The taken frame's place in the log comes before anything the proxy answers.
        let ticket = self.tap.ticket();
        let order = TapSender::order_of(&ticket);
        self.tap.relayed(ticket, Direction::C2p, frame);
        match verdict {
            ClientVerdict::Answer(message) => intercept.answers.answer_now(message),
            ClientVerdict::AnswerLater(answer) => intercept.answers.later(order, answer),
            ClientVerdict::Pass | ClientVerdict::Take => {}
        }
    }

    /// Holds the outlet and writes the frame's first bytes on.
    fn start_stream(&self, head: &[u8]) -> Stream<'_> {
        let mut writer = self.outlet.lock();
        let ticket = self.tap.ticket_writing(&writer);
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
    fn tap_frame(&self, ticket: Ticket, frame: Vec<u8>, written: bool, note: Option<Note>) {
        if written {
            self.dir_stats().relayed(frame.len());
            self.tap.relayed_as(ticket, self.dir, frame, note);
        } else {
            self.dir_stats().discarded(frame.len());
            self.tap.not_relayed(ticket, self.dir);
        }
    }
}

/// A remote's frame as a frame read from a pipe: its own bytes (copied only when the remote
/// still holds them), its line ending added.
fn line(frame: Frame) -> Vec<u8> {
    let mut line = Arc::try_unwrap(frame).unwrap_or_else(|shared| shared.as_ref().clone());
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};
    use std::os::fd::OwnedFd;
    use std::sync::atomic::Ordering;

    use super::*;
    use crate::framelog::writer::LogWriter;
    use crate::framelog::ExitStatus;
    use crate::relay::tap::{tests::header, Tap};
    use crate::tokenizer::Tokenizer;

    /// A server-to-client pump writing to `outlet`, with a tap that logs nothing, and the
    /// relay's counters.
    fn s2c_pump(outlet: Outlet) -> (Tap, Pump, Arc<RelayStats>) {
        let stats = Arc::new(RelayStats::default());
        let (tap, sender) = Tap::start(
            header(),
            LogWriter::disabled(),
            Tokenizer::CharsDiv4,
            stats.clone(),
            Vec::new(),
            None,
            None,
        )
        .unwrap();
        let pump = Pump {
            dir: Direction::S2c,
            outlet: Arc::new(outlet),
            on_break_close: None,
            tap: sender,
            stats: stats.clone(),
            intercept: None,
        };
        (tap, pump, stats)
    }

    /// Relays a 1 MB frame between two small ones server to client into `outlet`, checks
    /// that the outlet's reader got every byte, and returns the relay's counters.
    fn relay(outlet: impl FnOnce(OwnedFd) -> Outlet) -> Arc<RelayStats> {
        let mut input = b"{\"id\":1}\n".to_vec();
        input.extend(std::iter::repeat_n(b'x', 1 << 20));
        input.extend_from_slice(b"\n{\"id\":2}\n");
        let (in_r, mut in_w) = std::io::pipe().unwrap();
        let (mut out_r, out_w) = std::io::pipe().unwrap();
        let (tap, pump, stats) = s2c_pump(outlet(OwnedFd::from(out_w)));
        let writer = {
            let input = input.clone();
            std::thread::spawn(move || in_w.write_all(&input).unwrap())
        };
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            out_r.read_to_end(&mut out).unwrap();
            out
        });
        pump.run(File::from(OwnedFd::from(in_r)));
        writer.join().unwrap();
        tap.finish(ExitStatus {
            code: Some(0),
            signal: None,
        });
        let out = reader.join().unwrap();
        assert!(
            out == input,
            "byte-exact: {} of {} bytes",
            out.len(),
            input.len()
        );
        stats
    }

    #[test]
    fn a_long_frame_between_pipes_is_spliced_and_arrives_byte_exact() {
        let stats = relay(|fd| Outlet::for_fd(File::from(fd)));
        assert_eq!(stats.s2c.frames.load(Ordering::Relaxed), 3);
        let spliced = stats.s2c.spliced_bytes.load(Ordering::Relaxed);
        // All but the part read before the frame turned out long went without a copy.
        assert!(
            spliced > (1 << 20) - 2 * STREAM_AFTER as u64 && spliced <= 1 << 20,
            "spliced {spliced} bytes"
        );
    }

    #[test]
    fn an_outlet_that_takes_no_splice_gets_the_same_bytes_copied() {
        let stats = relay(|fd| Outlet::new(File::from(fd)));
        assert_eq!(stats.s2c.spliced_bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_remotes_frames_arrive_byte_exact_each_with_its_line_ending_and_are_tapped() {
        let frames: Vec<Vec<u8>> = vec![
            b"{\"id\":1}".to_vec(),
            vec![b'x'; 1 << 20],
            b"{\"id\":2}".to_vec(),
        ];
        let (out_r, out_w) = std::io::pipe().unwrap();
        let (tap, pump, stats) = s2c_pump(Outlet::for_fd(File::from(OwnedFd::from(out_w))));
        let reader = std::thread::spawn(move || {
            let mut out = Vec::new();
            let mut out_r = out_r;
            out_r.read_to_end(&mut out).unwrap();
            out
        });
        let (to_pump, from_remote) = mpsc::sync_channel(1);
        let held = Arc::new(frames[1].clone());
        let feeder = {
            let (frames, held) = (frames.clone(), held.clone());
            std::thread::spawn(move || {
                to_pump.send(Arc::new(frames[0].clone())).unwrap();
                // The remote still holds the long one while the pump writes it.
                to_pump.send(held).unwrap();
                to_pump.send(Arc::new(frames[2].clone())).unwrap();
            })
        };
        pump.run_frames(from_remote);
        feeder.join().unwrap();
        drop(held);
        tap.finish(ExitStatus {
            code: Some(0),
            signal: None,
        });
        let expected: Vec<u8> = frames
            .iter()
            .flat_map(|f| [&f[..], b"\n"].concat())
            .collect();
        let out = reader.join().unwrap();
        assert!(out == expected, "{} of {} bytes", out.len(), expected.len());
        assert_eq!(stats.s2c.frames.load(Ordering::Relaxed), 3);
        assert_eq!(
            stats.s2c.bytes.load(Ordering::Relaxed),
            expected.len() as u64,
            "the tap's frames are the written bytes"
        );
    }
}
