//! The tap: the relay hands a copy of each frame it wrote to the accounting thread, which
//! classifies, counts and logs it. The relay never waits on the tap.
//!
//! The channel is unbounded, with a byte budget instead of a length bound: when a frame
//! would bring the bytes queued for accounting over [`TAP_BUDGET_BYTES`] (and the queue is
//! not empty), it is still relayed but not queued; they are counted and reported in the trailer
//! (`frames_unlogged` and a line in `errors`). Blocking the relay is never an option.
//!
//! Order: each direction takes a [`Ticket`] (sequence number and time) just before it
//! writes a frame on, and the tap processes frames in ticket order. A response can only
//! be read after its request's write began, so it always comes after its request in the
//! log, even when the two relay threads hand their copies over in the other order.
//!
//! Lines reach the file when the tap has caught up with the relay (at most a millisecond or
//! so after the frame), and at the end of the run.
//!
//! Ingestion: with a [`Bridge`], every relayed `tools/call` request and its response go to
//! [`Bridge::on_frame_pair`] here, after the response is logged (see [`Ingestion`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::stats::RelayStats;
use crate::bridge::ingest::FramePair;
use crate::bridge::{Bridge, BridgeError};
use crate::framelog::accounting::{rfc3339, Accountant, Tapped};
use crate::framelog::writer::LogWriter;
use crate::framelog::{Direction, ExitStatus, Frame, FrameKind, Header, LogLine, Trailer};
use crate::tokenizer::Tokenizer;

/// Bytes of frames that may wait for accounting before new frames skip the log.
pub const TAP_BUDGET_BYTES: usize = 256 << 20;

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
pub struct Ticket {
    order: u64,
    at: SystemTime,
    instant: Instant,
}

enum Item {
    /// A frame, and the server's original text when the proxy rewrote it.
    Frame(Tapped, Option<String>),
    /// A server frame the proxy compacted (`s2c`, as received) and the frame the client
    /// got instead (`p2c`), logged one after the other.
    Compaction(Tapped, Tapped),
    Skipped,
    NotRelayed,
}

enum TapMsg {
    Item(u64, Item),
    Finish(ExitStatus),
}

/// The relay's end of the tap. Cheap to clone; nothing on it ever blocks.
#[derive(Debug, Clone)]
pub struct TapSender {
    tx: mpsc::Sender<TapMsg>,
    order: Arc<AtomicU64>,
    queued: Arc<AtomicUsize>,
    skipped: Arc<AtomicU64>,
    processed: Arc<AtomicU64>,
}

impl TapSender {
    /// The place in the relay order a ticket holds.
    pub fn order_of(ticket: &Ticket) -> u64 {
        ticket.order
    }

    /// Waits (up to `limit`) until the tap has processed every frame ordered before
    /// `order`: logged it and ingested it. An injected tool answers after this, so it sees
    /// every tool result the client saw before calling it.
    pub fn wait_processed(&self, order: u64, limit: Duration) {
        let start = Instant::now();
        while self.processed.load(Ordering::Acquire) < order && start.elapsed() < limit {
            std::thread::sleep(POLL_TICK);
        }
    }

    /// Takes the next place in the relay order; call it just before writing a frame on.
    pub fn ticket(&self) -> Ticket {
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
    pub fn relayed(&self, ticket: Ticket, dir: Direction, bytes: Vec<u8>) {
        self.relayed_as(ticket, dir, bytes, None);
    }

    /// Hands a frame that was just written on to the accounting thread, with the server's
    /// original text when the proxy rewrote the frame (logged as `server_raw`).
    pub fn relayed_as(
        &self,
        ticket: Ticket,
        dir: Direction,
        bytes: Vec<u8>,
        server_raw: Option<String>,
    ) {
        let len = bytes.len();
        let queued = self.queued.load(Ordering::Relaxed);
        // An empty queue takes any frame, however large.
        if queued > 0 && queued + len > TAP_BUDGET_BYTES {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            self.send(ticket.order, Item::Skipped);
            return;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        let tapped = Tapped {
            dir,
            bytes,
            at: ticket.at,
            instant: ticket.instant,
        };
        self.send(ticket.order, Item::Frame(tapped, server_raw));
    }

    /// Hands a compacted server frame to the accounting thread: the server's `original`
    /// (logged `s2c`, ingested whole) and the `compacted` frame just written on in its place
    /// (logged `p2c` right after it, naming it in `compacts`).
    pub fn compacted(&self, ticket: Ticket, original: Vec<u8>, compacted: Vec<u8>) {
        let len = original.len() + compacted.len();
        let queued = self.queued.load(Ordering::Relaxed);
        if queued > 0 && queued + len > TAP_BUDGET_BYTES {
            self.skipped.fetch_add(1, Ordering::Relaxed);
            self.send(ticket.order, Item::Skipped);
            return;
        }
        self.queued.fetch_add(len, Ordering::Relaxed);
        let tapped = |dir, bytes| Tapped {
            dir,
            bytes,
            at: ticket.at,
            instant: ticket.instant,
        };
        let item = Item::Compaction(
            tapped(Direction::S2c, original),
            tapped(Direction::P2c, compacted),
        );
        self.send(ticket.order, item);
    }

    /// Gives back a ticket whose frame could not be written on.
    pub fn not_relayed(&self, ticket: Ticket) {
        self.send(ticket.order, Item::NotRelayed);
    }
}

/// The accounting thread; [`Tap::finish`] makes it write the trailer and waits for it.
#[derive(Debug)]
pub struct Tap {
    tx: mpsc::Sender<TapMsg>,
    handle: JoinHandle<()>,
}

/// Ingestion on the tap thread: the raw text of each relayed `tools/call` request, until its
/// response comes, then both to the bridge.
#[derive(Debug)]
pub struct Ingestion {
    bridge: Arc<Bridge>,
    log_path: Option<String>,
    requests: HashMap<String, VecDeque<String>>,
}

impl Ingestion {
    /// Ingestion into `bridge`, with provenance naming `log_path` (absolute; `None` without
    /// a log).
    pub fn new(bridge: Arc<Bridge>, log_path: Option<String>) -> Ingestion {
        Ingestion {
            bridge,
            log_path,
            requests: HashMap::new(),
        }
    }

    /// Takes in one accounted frame (`logged`: whether its line was written, so that its
    /// `seq` names a frame of the log).
    fn frame(&mut self, frame: &Frame, logged: bool) {
        if frame.method.as_deref() != Some("tools/call") {
            return;
        }
        let (Some(id), Some(raw)) = (&frame.id, &frame.raw) else {
            return;
        };
        match (frame.dir, frame.kind) {
            (Direction::C2s, FrameKind::Request) => {
                self.requests
                    .entry(id.clone())
                    .or_default()
                    .push_back(raw.clone());
            }
            (Direction::S2c, FrameKind::Response | FrameKind::Error) => {
                let Some(queue) = self.requests.get_mut(id) else {
                    return;
                };
                let request = queue.pop_front();
                if queue.is_empty() {
                    self.requests.remove(id);
                }
                let Some(request) = request else { return };
                let pair = FramePair {
                    request: &request,
                    response: raw,
                    log_path: self.log_path.as_deref().filter(|_| logged),
                    seq: logged.then_some(frame.seq),
                    timestamp: Some(&frame.ts),
                };
                if let Err(BridgeError::Store { error, first: true }) =
                    self.bridge.on_frame_pair(&pair)
                {
                    eprintln!("ctxopt-proxy: store: {error}; relaying continues without storing");
                }
            }
            _ => {}
        }
    }
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
    ingestion: Option<Ingestion>,
    /// Frame lines written for frames the proxy consumed or originated (`c2p`, `p2c`).
    proxy_lines: u64,
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

    fn process(&mut self, item: Item) {
        match item {
            Item::Frame(tapped, server_raw) => {
                self.frame(tapped, server_raw);
            }
            Item::Compaction(original, compacted) => {
                let server = self.frame(original, None);
                self.compacted_frame(compacted, server);
            }
            Item::Skipped => self.accountant.skip(),
            Item::NotRelayed => {}
        }
    }

    /// Accounts, logs and ingests a frame; returns its record (when it was accounted).
    fn frame(&mut self, tapped: Tapped, server_raw: Option<String>) -> Option<Box<Frame>> {
        self.record(tapped, |frame| frame.server_raw = server_raw)
    }

    /// Accounts and logs the frame the client got in place of `server` (the server's
    /// compacted frame): its pairing is the server frame's.
    fn compacted_frame(&mut self, tapped: Tapped, server: Option<Box<Frame>>) {
        self.record(tapped, |frame| {
            if let Some(server) = server {
                frame.method = server.method;
                frame.tool = server.tool;
                frame.latency_us = server.latency_us;
                frame.protocol = server.protocol;
                frame.compacts = Some(server.seq);
            }
        });
    }

    fn record(&mut self, tapped: Tapped, amend: impl FnOnce(&mut Frame)) -> Option<Box<Frame>> {
        let len = tapped.bytes.len();
        let mut out = None;
        if self.writer.is_open() || self.ingestion.is_some() {
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
            if let Some(ingestion) = &mut self.ingestion {
                ingestion.frame(&frame, logged);
            }
            out = Some(frame);
        }
        self.queued.fetch_sub(len, Ordering::Relaxed);
        out
    }

    fn trailer(&mut self, exit: ExitStatus) {
        self.writer.flush();
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
        if let Some(line) = self
            .ingestion
            .as_ref()
            .and_then(|i| i.bridge.failure_summary())
        {
            errors.push(line);
        }
        let trailer = Trailer {
            ts: rfc3339(SystemTime::now()),
            exit,
            frames_relayed,
            frames_logged,
            frames_unlogged: (frames_relayed.c2s + frames_relayed.s2c)
                .saturating_sub(frames_logged.saturating_sub(self.proxy_lines)),
            bytes: self.stats.bytes(),
            errors,
        };
        self.writer.write(&LogLine::Trailer(trailer));
    }
}

impl Tap {
    /// Starts the accounting thread: it writes `header` first, then loads the tokenizer
    /// (frames queue meanwhile; the relay does not wait), then logs frames as they come,
    /// and hands `tools/call` pairs to `ingestion` when there is one.
    pub fn start(
        header: Header,
        writer: LogWriter,
        tokenizer: Tokenizer,
        stats: Arc<RelayStats>,
        ingestion: Option<Ingestion>,
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
            ingestion,
            proxy_lines: 0,
        };
        let handle = std::thread::Builder::new()
            .name("tap".into())
            .spawn(move || {
                lower_priority();
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
    pub fn finish(self, exit: ExitStatus) {
        let _ = self.tx.send(TapMsg::Finish(exit));
        let _ = self.handle.join();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::framelog::{Frame, Trailer};

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
        sender.send(t0.order, Item::Skipped);
        sender.not_relayed(t3);
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
