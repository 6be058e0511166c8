//! The tap: the relay hands a copy of each frame it wrote to the accounting thread, which
//! classifies, counts and logs it. The relay never waits on the tap.
//!
//! The channel is unbounded, with a byte budget instead of a length bound: when a frame
//! would bring the bytes queued for accounting over [`TAP_BUDGET_BYTES`] (and the queue is
//! not empty), it is still relayed but not queued; they are counted and reported in the trailer
//! (`frames_unlogged` and a line in `errors`). Blocking the relay is never an option.
//!
//! Order: each direction takes a [`Ticket`] (sequence number and time) just before it
//! writes a frame on, holding the outlet ([`TapSender::ticket_writing`]), and the tap
//! processes frames in ticket order: the log's order on each outlet is its reader's order. A response can only
//! be read after its request's write began, so it always comes after its request in the
//! log, even when the two relay threads hand their copies over in the other order.
//!
//! Lines reach the file when the tap has caught up with the relay (at most a millisecond or
//! so after the frame), and at the end of the run.
//!
//! Sinks: after a frame is logged, its accounted record goes to every [`FrameSink`] (the
//! ingestion of tool results into the store), in log order, here on the tap thread.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::outlet::FrameWriter;
use super::remote::TransportNotes;
use super::sink::{FrameSink, LogPlace};
use super::stats::RelayStats;
use crate::framelog::accounting::{rfc3339, Accountant, Tapped};
use crate::framelog::writer::LogWriter;
use crate::framelog::{
    Direction, ExitStatus, Frame, Header, HttpFacts, LeftWhole, LogLine, Trailer,
};
use crate::tokenizer::Tokenizer;

/// Bytes of frames that may wait for accounting before new frames skip the log.
pub(crate) const TAP_BUDGET_BYTES: usize = 256 << 20;

/// While traffic flows, the tap looks for new frames this often instead of sleeping on
/// the channel, so handing a frame over never costs the relay a wake-up system call.
const POLL_TICK: Duration = Duration::from_millis(1);

/// Empty polls (of [`POLL_TICK`]) before the tap sleeps on the channel until the next frame.
const IDLE_POLLS: u32 = 100;

/// How much nicer the tap thread is than the relay threads: below them, so that on a busy machine a
/// relay thread woken by a frame runs before the tap's counting and logging, and above
/// nothing else. Not `SCHED_IDLE`: the tap must still get its share under sustained load,
/// or frames would wait past [`TAP_BUDGET_BYTES`] and go unlogged, and injected calls
/// (which wait for the tap) would stall.
const TAP_NICER_BY: libc::c_int = 10;

/// Makes the calling thread [`TAP_NICER_BY`] nicer (at most 19; Linux: nice values are
/// per thread). Failure only leaves the thread at the process's priority.
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: gettid, getpriority and setpriority take no pointers.
    unsafe {
        let tid = libc::gettid() as libc::id_t;
        let nice = libc::getpriority(libc::PRIO_PROCESS, tid);
        libc::setpriority(libc::PRIO_PROCESS, tid, (nice + TAP_NICER_BY).min(19));
    }
}

/// Other platforms set priorities per process, not per thread: leave the tap as it is.
#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// The next message; flushes the log whenever it has caught up.
fn next_message(rx: &mpsc::Receiver<TapMsg>, writer: &mut LogWriter) -> Option<TapMsg> {
    for poll in 0..IDLE_POLLS {
        match rx.try_recv() {
            Ok(msg) => return Some(msg),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) => {
                if poll == 0 {
                    writer.flush();
                }
                std::thread::sleep(POLL_TICK);
            }
        }
    }
    rx.recv().ok()
}

/// A frame's place in the relay order, and when it was relayed.
#[derive(Debug)]
pub(crate) struct Ticket {
    order: u64,
    at: SystemTime,
    instant: Instant,
}

/// What the log adds to a relayed frame's record beyond its own accounting.
#[derive(Debug)]
pub(crate) enum Note {
    /// The server's original text, when the proxy rewrote the frame (`server_raw`).
    ServerRaw(String),
    /// Why a `tools/call` result over the compaction limit was relayed whole
    /// (`left_whole`).
    LeftWhole(LeftWhole),
}

enum Item {
    /// A frame, and what its record adds.
    Frame(Tapped, Option<Note>),
    /// A server frame (logged as it came) and the frame written in its place (logged right
    /// after it, naming it in `compacts`).
    Replacement(Tapped, Tapped),
    /// A frame relayed this way but not logged (accounting fell behind).
    Skipped(Direction),
    /// A frame read this way but not written on.
    NotRelayed(Direction),
}

enum TapMsg {
    Item(u64, Item),
    Finish(ExitStatus),
}

/// The relay's end of the tap. Cheap to clone; nothing on it ever blocks.
#[derive(Debug, Clone)]
pub(crate) struct TapSender {
    tx: mpsc::Sender<TapMsg>,
    order: Arc<AtomicU64>,
    queued: Arc<AtomicUsize>,
    skipped: Arc<AtomicU64>,
    processed: Arc<AtomicU64>,
}

impl TapSender {
    /// The place in the relay order a ticket holds.
    pub(crate) fn order_of(ticket: &Ticket) -> u64 {
        ticket.order
    }

    /// Waits (up to `limit`) until the tap has processed every frame ordered before
    /// `order`: logged it and ingested it. An injected tool answers after this, so it sees
    /// every tool result the client saw before calling it.
    pub(crate) fn wait_processed(&self, order: u64, limit: Duration) {
        let start = Instant::now();
        while self.processed.load(Ordering::Acquire) < order && start.elapsed() < limit {
            std::thread::sleep(POLL_TICK);
        }
    }

    /// Takes the next place in the relay order for a frame about to be written through
    /// `writer`. Taken while the outlet is held, so that frames written to one outlet by
    /// several threads (relayed frames and the proxy's answers) are logged in the order in
    /// which they reach the reader.
    pub(crate) fn ticket_writing(&self, writer: &FrameWriter<'_>) -> Ticket {
        let _held = writer;
        self.ticket()
    }

    /// Takes the next place in the relay order for a frame that is not written to an
    /// outlet (one the proxy took), or that only one thread writes.
    pub(crate) fn ticket(&self) -> Ticket {
        Ticket {
            order: self.order.fetch_add(1, Ordering::Relaxed),
            at: SystemTime::now(),
            instant: Instant::now(),
        }
    }

    fn send(&self, order: u64, item: Item) {
        // A closed channel means the tap has finished; nothing is left to count into.
        let _ = self.tx.send(TapMsg::Item(order, item));
    }

    /// Hands a frame that was just written on to the accounting thread.
    pub(crate) fn relayed(&self, ticket: Ticket, dir: Direction, bytes: Vec<u8>) {
        self.relayed_as(ticket, dir, bytes, None);
    }

    /// Hands a frame that was just written on to the accounting thread, with what its
    /// record adds (the server's original text when the proxy rewrote the frame, why a
    /// result was left whole).
    pub(crate) fn relayed_as(
        &self,
        ticket: Ticket,
        dir: Direction,
        bytes: Vec<u8>,
        note: Option<Note>,
    ) {
        if self.admit(&ticket, dir, bytes.len()) {
            let tapped = tapped(&ticket, dir, bytes);
            self.send(ticket.order, Item::Frame(tapped, note));
        }
    }

    /// Hands a server frame that was replaced to the accounting thread: the server's
    /// `original` (logged `s2c` as it came) and the `replacement` written on in its place
    /// (logged `p2c` right after it, with the original's pairing and its `seq` in
    /// `compacts`).
    pub(crate) fn replaced(&self, ticket: Ticket, original: Vec<u8>, replacement: Vec<u8>) {
        if self.admit(&ticket, Direction::S2c, original.len() + replacement.len()) {
            let item = Item::Replacement(
                tapped(&ticket, Direction::S2c, original),
                tapped(&ticket, Direction::P2c, replacement),
            );
            self.send(ticket.order, item);
        }
    }

    /// Counts `len` bytes into the queue waiting for accounting, or, when they would bring
    /// it over [`TAP_BUDGET_BYTES`], hands the ticket back as skipped and returns false. An
    /// empty queue takes any frame, however large.
    fn admit(&self, ticket: &Ticket, dir: Direction, len: usize) -> bool {
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && queued + len > TAP_BUDGET_BYTES {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            self.send(ticket.order, Item::Skipped(dir));
            return false;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        true
    }

    /// Gives back a ticket whose frame, read going `dir`, could not be written on.
    pub(crate) fn not_relayed(&self, ticket: Ticket, dir: Direction) {
        self.send(ticket.order, Item::NotRelayed(dir));
    }
}

/// A frame relayed under `ticket`, for the accounting thread.
fn tapped(ticket: &Ticket, dir: Direction, bytes: Vec<u8>) -> Tapped {
    Tapped {
        dir,
        bytes,
        at: ticket.at,
        instant: ticket.instant,
    }
}

/// The accounting thread; [`Tap::finish`] makes it write the trailer and waits for it.
#[derive(Debug)]
pub(crate) struct Tap {
    tx: mpsc::Sender<TapMsg>,
    handle: JoinHandle<()>,
}

struct TapState {
    waiting: BTreeMap<u64, Item>,
    next: u64,
    writer: LogWriter,
    accountant: Accountant,
    queued: Arc<AtomicUsize>,
    skipped: Arc<AtomicU64>,
    processed: Arc<AtomicU64>,
    stats: Arc<RelayStats>,
    sinks: Vec<Box<dyn FrameSink>>,
    /// The log file as sinks name it (absolute), when there is a log.
    log_path: Option<String>,
    /// Frame lines written for frames the proxy consumed or originated (`c2p`, `p2c`).
    proxy_lines: u64,
    /// The transport facts of server frames, for a remote server.
    notes: Option<Arc<TransportNotes>>,
}

impl TapState {
    /// Takes an item in any order; processes items in ticket order.
    fn item(&mut self, order: u64, item: Item) {
        self.waiting.insert(order, item);
        while let Some(item) = self.waiting.remove(&self.next) {
            self.next += 1;
            self.process(item);
        }
        self.processed.store(self.next, Ordering::Release);
    }

    /// Processes what is left, in order, skipping tickets never handed back.
    fn flush(&mut self) {
        while let Some((_, item)) = self.waiting.pop_first() {
            self.process(item);
        }
    }

    /// The transport facts of the next frame the server sent, when it reached the proxy
    /// through a remote transport and `dir` is the server's.
    fn facts(&self, dir: Direction) -> Option<HttpFacts> {
        match (&self.notes, dir) {
            (Some(notes), Direction::S2c) => notes.next(),
            _ => None,
        }
    }

    fn process(&mut self, item: Item) {
        match item {
            Item::Frame(tapped, note) => {
                let http = self.facts(tapped.dir);
                self.record(tapped, |frame| {
                    frame.http = http;
                    match note {
                        Some(Note::ServerRaw(raw)) => frame.server_raw = Some(raw),
                        Some(Note::LeftWhole(left)) => frame.left_whole = Some(left),
                        None => {}
                    }
                });
            }
            Item::Replacement(original, replacement) => {
                let http = self.facts(Direction::S2c);
                let server = self.record(original, |frame| frame.http = http);
                self.record(replacement, |frame| {
                    if let Some(server) = server {
                        frame.method = server.method;
                        frame.tool = server.tool;
                        frame.latency_us = server.latency_us;
                        frame.protocol = server.protocol;
                        frame.compacts = Some(server.seq);
                    }
                });
            }
            Item::Skipped(dir) => {
                self.facts(dir);
                self.accountant.skip();
            }
            Item::NotRelayed(dir) => {
                self.facts(dir);
            }
        }
    }

    /// Accounts a frame, amends its record, logs it and hands it to the sinks; returns the
    /// record (when it was accounted).
    fn record(&mut self, tapped: Tapped, amend: impl FnOnce(&mut Frame)) -> Option<Box<Frame>> {
        let len = tapped.bytes.len();
        let mut out = None;
        if self.writer.is_open() || !self.sinks.is_empty() {
            let mut frame = self.accountant.frame(tapped);
            amend(&mut frame);
            let line = LogLine::Frame(Box::new(frame));
            let logged = self.writer.write(&line);
            let LogLine::Frame(frame) = line else {
                unreachable!("built as a frame line above")
            };
            if logged && matches!(frame.dir, Direction::C2p | Direction::P2c) {
                self.proxy_lines += 1;
            }
            let place = self
                .log_path
                .as_deref()
                .filter(|_| logged)
                .map(|path| LogPlace {
                    path,
                    seq: frame.seq,
                });
            for sink in &mut self.sinks {
                sink.frame(&frame, place);
            }
            out = Some(frame);
        }
        self.queued.fetch_sub(len, Ordering::Relaxed);
        out
    }

    fn trailer(&mut self, exit: ExitStatus) {
        self.writer.flush();
        let ts = rfc3339(SystemTime::now());
        for sink in &mut self.sinks {
            sink.session_ended(&ts, &exit);
        }
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
        for sink in &self.sinks {
            errors.extend(sink.trailer_errors());
        }
        let trailer = Trailer {
            ts,
            exit,
            frames_relayed,
            frames_logged,
            frames_unlogged: (frames_relayed.c2s + frames_relayed.s2c)
                .saturating_sub(frames_logged.saturating_sub(self.proxy_lines)),
            bytes: self.stats.bytes(),
            errors,
            pins: self.sinks.iter().find_map(|sink| sink.pins()).map(Box::new),
        };
        self.writer.write(&LogLine::Trailer(trailer));
    }
}

impl Tap {
    /// Starts the accounting thread: it writes `header` first, then loads the tokenizer
    /// (frames queue meanwhile; the relay does not wait), then logs frames as they come,
    /// and hands each to the `sinks`, telling them where it was logged (`log_path`:
    /// the log file as they should name it).
    pub(crate) fn start(
        header: Header,
        writer: LogWriter,
        tokenizer: Tokenizer,
        stats: Arc<RelayStats>,
        sinks: Vec<Box<dyn FrameSink>>,
        log_path: Option<String>,
        notes: Option<Arc<TransportNotes>>,
    ) -> std::io::Result<(Tap, TapSender)> {
        let (tx, rx) = mpsc::channel();
        let sender = TapSender {
            tx: tx.clone(),
            order: Arc::new(AtomicU64::new(0)),
            queued: Arc::new(AtomicUsize::new(0)),
            skipped: Arc::new(AtomicU64::new(0)),
            processed: Arc::new(AtomicU64::new(0)),
        };
        let mut state = TapState {
            waiting: BTreeMap::new(),
            next: 0,
            writer,
            accountant: Accountant::new(tokenizer),
            queued: sender.queued.clone(),
            skipped: sender.skipped.clone(),
            processed: sender.processed.clone(),
            stats,
            sinks,
            log_path,
            proxy_lines: 0,
            notes,
        };
        let handle = std::thread::Builder::new()
            .name("tap".into())
            .spawn(move || {
                lower_priority();
                let mut header = header;
                if let Some(notes) = &state.notes {
                    // Frames queue meanwhile, as while the tokenizer loads.
                    header.transport = Some(notes.transport().to_string());
                }
                for sink in &mut state.sinks {
                    sink.session_started(&header);
                }
                state.writer.write(&LogLine::Header(header));
                if state.writer.is_open() {
                    tokenizer.warm();
                }
                let mut exit = ExitStatus {
                    code: None,
                    signal: None,
                };
                while let Some(msg) = next_message(&rx, &mut state.writer) {
                    match msg {
                        TapMsg::Item(order, item) => state.item(order, item),
                        TapMsg::Finish(e) => {
                            exit = e;
                            break;
                        }
                    }
                }
                while let Ok(TapMsg::Item(order, item)) = rx.try_recv() {
                    state.item(order, item);
                }
                state.flush();
                state.trailer(exit);
            })?;
        Ok((Tap { tx, handle }, sender))
    }

    /// Logs what is still queued, writes the trailer with `exit`, and waits for it.
    pub(crate) fn finish(self, exit: ExitStatus) {
        let _ = self.tx.send(TapMsg::Finish(exit));
        let _ = self.handle.join();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::framelog::Trailer;

    /// A header for tests that start a tap.
    pub(crate) fn header() -> Header {
        Header {
            format_version: crate::framelog::FORMAT_VERSION,
            proxy_version: "test".into(),
            tokenizer: "chars/4".into(),
            started: rfc3339(SystemTime::UNIX_EPOCH),
            server_name: "t".into(),
            server_argv: vec!["t".into()],
            cwd: "/".into(),
            server_pid: Some(1),
            proxy_pid: 1,
            transport: None,
        }
    }

    #[test]
    fn frames_are_logged_in_ticket_order_and_skips_leave_counted_gaps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log.jsonl");
        let stats = Arc::new(RelayStats::default());
        let (tap, sender) = Tap::start(
            header(),
            LogWriter::open(&path),
            Tokenizer::CharsDiv4,
            stats.clone(),
            Vec::new(),
            None,
            None,
        )
        .unwrap();
        let (t0, t1, t2, t3) = (
            sender.ticket(),
            sender.ticket(),
            sender.ticket(),
            sender.ticket(),
        );
        // Handed over out of order: the response's copy arrives before the request's.
        stats.s2c.relayed(8);
        sender.relayed(t2, Direction::S2c, b"{\"id\":1,\"result\":{}}\n".to_vec());
        stats.c2s.relayed(8);
        sender.relayed(
            t1,
            Direction::C2s,
            b"{\"id\":1,\"method\":\"m\"}\n".to_vec(),
        );
        stats.c2s.relayed(8);
        sender.send(t0.order, Item::Skipped(Direction::C2s));
        sender.not_relayed(t3, Direction::S2c);
        tap.finish(ExitStatus {
            code: Some(0),
            signal: None,
        });

        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<LogLine> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let frames: Vec<&Frame> = lines
            .iter()
            .filter_map(|l| match l {
                LogLine::Frame(f) => Some(&**f),
                _ => None,
            })
            .collect();
        let seqs: Vec<u64> = frames.iter().map(|f| f.seq).collect();
        assert_eq!(seqs, [1, 2], "seq 0 was skipped");
        assert_eq!(frames[1].method.as_deref(), Some("m"), "response paired");
        let Some(LogLine::Trailer(Trailer {
            frames_logged,
            frames_unlogged,
            ..
        })) = lines.last()
        else {
            panic!("no trailer")
        };
        assert_eq!((*frames_logged, *frames_unlogged), (2, 1));
    }
}
