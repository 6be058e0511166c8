//! The tap: the relay hands a copy of each frame it wrote to the accounting thread, which
//! classifies, counts and logs it. The relay never waits on the tap.
//!
//! The channel is unbounded, with a byte budget instead of a length bound: while the
//! frames queued for accounting hold more than [`TAP_BUDGET_BYTES`], further frames are
//! still relayed but not queued; they are counted and reported in the trailer
//! (`frames_unlogged` and a line in `errors`). Blocking the relay is never an option.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime};

use super::stats::RelayStats;
use crate::framelog::accounting::{rfc3339, Accountant, Tapped};
use crate::framelog::writer::LogWriter;
use crate::framelog::{Direction, ExitStatus, Header, LogLine, Trailer};
use crate::tokenizer::Tokenizer;

/// Bytes of frames that may wait for accounting before new frames skip the log.
pub const TAP_BUDGET_BYTES: usize = 256 << 20;

enum TapMsg {
    Frame(Tapped),
    Finish(ExitStatus),
}

/// The relay's end of the tap. Cheap to clone; [`TapSender::send`] never blocks.
#[derive(Debug, Clone)]
pub struct TapSender {
    tx: mpsc::Sender<TapMsg>,
    queued: Arc<AtomicUsize>,
    skipped: Arc<AtomicU64>,
}

impl std::fmt::Debug for TapMsg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TapMsg::Frame(t) => write!(f, "Frame({:?}, {} bytes)", t.dir, t.bytes.len()),
            TapMsg::Finish(e) => write!(f, "Finish({e:?})"),
        }
    }
}

impl TapSender {
    /// Hands a frame that was just written on to the accounting thread.
    pub fn send(&self, dir: Direction, bytes: Vec<u8>) {
        let len = bytes.len();
        if self.queued.load(Ordering::Relaxed) + len > TAP_BUDGET_BYTES {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        let tapped = Tapped {
            dir,
            bytes,
            at: SystemTime::now(),
            instant: Instant::now(),
        };
        if self.tx.send(TapMsg::Frame(tapped)).is_err() {
            self.skipped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The accounting thread; [`Tap::finish`] makes it write the trailer and waits for it.
#[derive(Debug)]
pub struct Tap {
    tx: mpsc::Sender<TapMsg>,
    handle: JoinHandle<()>,
}

struct TapState {
    writer: LogWriter,
    accountant: Accountant,
    queued: Arc<AtomicUsize>,
    skipped: Arc<AtomicU64>,
    stats: Arc<RelayStats>,
}

impl TapState {
    fn frame(&mut self, tapped: Tapped) {
        let len = tapped.bytes.len();
        if self.writer.is_open() {
            let frame = self.accountant.frame(tapped);
            self.writer.write(&LogLine::Frame(Box::new(frame)));
        }
        self.queued.fetch_sub(len, Ordering::Relaxed);
    }

    fn trailer(&mut self, exit: ExitStatus) {
        let frames_relayed = self.stats.frames();
        let frames_logged = self.writer.written_frames();
        let mut errors = self.stats.error_lines();
        let skipped = self.skipped.load(Ordering::Relaxed);
        if skipped > 0 {
            errors.push(format!(
                "{skipped} frames relayed but not logged: more than {TAP_BUDGET_BYTES} bytes were waiting for accounting"
            ));
        }
        errors.extend(self.writer.errors().iter().cloned());
        let trailer = Trailer {
            ts: rfc3339(SystemTime::now()),
            exit,
            frames_relayed,
            frames_logged,
            frames_unlogged: (frames_relayed.c2s + frames_relayed.s2c)
                .saturating_sub(frames_logged),
            bytes: self.stats.bytes(),
            errors,
        };
        self.writer.write(&LogLine::Trailer(trailer));
    }
}

impl Tap {
    /// Starts the accounting thread: it writes `header` first, then loads the tokenizer
    /// (frames queue meanwhile; the relay does not wait), then logs frames as they come.
    pub fn start(
        header: Header,
        writer: LogWriter,
        tokenizer: Tokenizer,
        stats: Arc<RelayStats>,
    ) -> std::io::Result<(Tap, TapSender)> {
        let (tx, rx) = mpsc::channel();
        let sender = TapSender {
            tx: tx.clone(),
            queued: Arc::new(AtomicUsize::new(0)),
            skipped: Arc::new(AtomicU64::new(0)),
        };
        let mut state = TapState {
            writer,
            accountant: Accountant::new(tokenizer),
            queued: sender.queued.clone(),
            skipped: sender.skipped.clone(),
            stats,
        };
        let handle = std::thread::Builder::new()
            .name("tap".into())
            .spawn(move || {
                state.writer.write(&LogLine::Header(header));
                if state.writer.is_open() {
                    tokenizer.warm();
                }
                let mut exit = ExitStatus {
                    code: None,
                    signal: None,
                };
                for msg in &rx {
                    match msg {
                        TapMsg::Frame(t) => state.frame(t),
                        TapMsg::Finish(e) => {
                            exit = e;
                            break;
                        }
                    }
                }
                while let Ok(TapMsg::Frame(t)) = rx.try_recv() {
                    state.frame(t);
                }
                state.trailer(exit);
            })?;
        Ok((Tap { tx, handle }, sender))
    }

    /// Logs what is still queued, writes the trailer with `exit`, and waits for it.
    pub fn finish(self, exit: ExitStatus) {
        let _ = self.tx.send(TapMsg::Finish(exit));
        let _ = self.handle.join();
    }
}
