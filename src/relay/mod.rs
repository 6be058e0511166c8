//! The relay: bytes in, the same bytes out, a copy of each frame to the tap.
//!
//! # Layout
//! - [`line_reader`]: a byte stream cut into frames (`\n`-terminated lines, and a last
//!   unterminated chunk), without looking inside them.
//! - [`pump`]: one direction's loop: read a frame, write it on, count it, tap it.
//! - [`outlet`]: the writable end of a direction, closable from the other direction.
//! - [`tap`]: the never-blocking hand-off to the accounting thread that writes the log and
//!   hands each accounted frame to the sinks.
//! - [`sink`]: the [`FrameSink`] trait: what receives a copy of each frame (ingestion into the
//!   store, implemented in `bridge`).
//! - [`handler`]: the [`FrameHandler`] trait: what may take and answer a client frame or
//!   replace a server frame (the injected tools, implemented in `bridge`).
//! - [`answers`]: the proxy's own frames to the client, and the worker pool that answers.
//! - [`blocking`]: reads and writes that wait on a non-blocking descriptor.
//! - [`zero_copy`]: a long frame's body moved from pipe to outlet without a copy.
//! - [`child`]: starting the server in its own process group, and its exit status.
//! - [`signals`]: `SIGINT`/`SIGTERM`/`SIGHUP`/`SIGCHLD` collected synchronously.
//! - [`stats`]: per-direction counters for the trailer.
//! - [`server_name`]: a short name for the server, for the log file name.
//! - [`remote`]: the [`Remote`] trait: a server reached other than as a child process (over
//!   HTTP), relayed through two pipes standing in for the child's.
//!
//! # Threads
//! The binary blocks the signals ([`Signals::block`]) before it starts any thread, so every
//! thread inherits the mask; the thread that calls [`run`] starts the server and then only
//! supervises it (signals, exit, grace period). `c2s` and `s2c` each run a [`pump::Pump`];
//! the `tap` thread does all parsing, counting, log writing and runs the sinks; answers that
//! take work run on at most [`answers::WORKERS`] `injected-call` threads.
//!
//! # The end of a run
//! When the server exits, the grace period is for its stdout to close (whatever it left in
//! its process group gets `SIGTERM`, then `SIGKILL`). Everything it wrote before is then
//! relayed, however slowly the client reads: the proxy waits for the `s2c` pump to write
//! the last byte (a forwarded signal ends that wait), then for its own answers. Its last
//! look for a pending signal is just before the trailer: a signal collected after the
//! server's exit goes to what the server left in its group and is named in the trailer,
//! the status staying the server's; with a [`Remote`], any signal collected up to then
//! makes the exit 128 + the signal (docs/exit-codes.md).
//!
//! The relay knows nothing of the store, the optimizer or the injected tools: what it is
//! given through [`ProxyConfig::sinks`] and [`ProxyConfig::handler`] is all it sees of them.

pub(crate) mod answers;
pub(crate) mod blocking;
pub(crate) mod child;
pub mod handler;
pub(crate) mod line_reader;
pub(crate) mod outlet;
pub(crate) mod pump;
pub mod remote;
pub mod server_name;
pub(crate) mod signals;
pub mod sink;
pub(crate) mod stats;
pub(crate) mod tap;
pub(crate) mod zero_copy;

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime};

use crate::framelog::accounting::rfc3339;
use crate::framelog::writer::{create_log_dir, default_log_dir, default_log_name, LogWriter};
use crate::framelog::FORMAT_VERSION;
use crate::framelog::{Direction, ExitStatus, Header, LogLine, PerDirection, Trailer};
use crate::redact::Redactor;
use crate::tokenizer::Tokenizer;
use answers::Answers;
pub use handler::FrameHandler;
use outlet::Outlet;
use pump::{Intercept, Pump};
use remote::{Frame, Handoff, TransportNotes};
pub use remote::{Remote, RemoteLink, ServerFrames};
pub use signals::Signals;
pub use sink::FrameSink;
use stats::RelayStats;
use tap::{Tap, TapSender};

/// Where the frame log goes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LogTarget {
    /// A new file in the default log directory (see [`default_log_dir`]).
    Default,
    /// This file (appended to if it exists; its directory must exist).
    Path(PathBuf),
    /// No log.
    Disabled,
}

/// How to run the proxy.
#[derive(Debug)]
pub struct ProxyConfig {
    /// The server's command and arguments (unused with [`ProxyConfig::remote`]).
    pub command: Vec<OsString>,
    /// A server reached other than by starting `command` (over HTTP); `None`: start
    /// `command`.
    pub remote: Option<Box<dyn Remote>>,
    /// A short name for the server (the log file name and header use it).
    pub server_name: String,
    /// Where the frame log goes.
    pub log: LogTarget,
    /// The tokenizer for `tokens` and `meta_tokens`.
    pub tokenizer: Tokenizer,
    /// How long a server may take to exit after a forwarded signal before `SIGKILL`.
    pub grace: Duration,
    /// What receives a copy of each frame, after it is logged (ingestion into the store).
    pub(crate) sinks: Vec<Box<dyn FrameSink>>,
    /// What takes part in the conversation (the injected tools); `None`: every frame
    /// passes untouched.
    pub handler: Option<Arc<dyn FrameHandler>>,
    /// How long each answer that takes work is held back (zero; tests of cancellation set
    /// it).
    pub(crate) answer_delay: Duration,
    /// Redacts the log's raw copies (never the relayed bytes); `None` keeps them raw
    /// (`--no-redact`).
    pub redactor: Option<Arc<Redactor>>,
}

/// What stops the proxy before it can relay anything.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RelayError {
    /// The signal mask, a pipe or a thread could not be set up.
    #[error("cannot set up the relay: {0}")]
    Setup(#[from] io::Error),
}

/// How often the supervisor re-checks the server when no signal arrives.
const POLL: Duration = Duration::from_millis(200);

/// How long to wait for the server's stdout to close after its process group was killed,
/// and the least time to wait for it after the server exited.
const LAST_DRAIN: Duration = Duration::from_secs(1);

/// How long the proxy, once the server is gone, still waits for the next of its own answers
/// to be written (as long as they keep coming, it waits for all).
const ANSWER_LIMIT: Duration = Duration::from_secs(10);

fn open_log(config: &ProxyConfig, started: SystemTime) -> LogWriter {
    let writer = match &config.log {
        LogTarget::Disabled => LogWriter::disabled(),
        LogTarget::Path(path) => LogWriter::open(path),
        LogTarget::Default => {
            let dir = default_log_dir().unwrap_or_else(|| PathBuf::from("."));
            // A failure here surfaces as the open failure below.
            let _ = create_log_dir(&dir);
            let name = default_log_name(started, &config.server_name, std::process::id());
            LogWriter::open(&dir.join(name))
        }
    };
    writer.redacting(config.redactor.clone())
}

fn header(config: &ProxyConfig, started: SystemTime, server_pid: Option<u32>) -> Header {
    Header {
        format_version: FORMAT_VERSION,
        proxy_version: env!("CARGO_PKG_VERSION").to_string(),
        tokenizer: config.tokenizer.name().to_string(),
        started: rfc3339(started),
        server_name: config.server_name.clone(),
        server_argv: config
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        cwd: std::env::current_dir()
            .map(|d| d.to_string_lossy().into_owned())
            .unwrap_or_default(),
        server_pid,
        proxy_pid: std::process::id(),
        transport: None,
    }
}

/// Runs the proxy until the server has exited and its output is drained; returns the
/// proxy's exit code (the server's code, 128 + its signal, or 127/126 when it could not be
/// started).
///
/// `signals` is the set blocked by [`Signals::block`] before the process started any
/// thread: a forwarded signal is then collected here (and forwarded) whenever it arrives,
/// never taken by a thread that lets it end the process.
pub fn run(mut config: ProxyConfig, signals: &Signals) -> Result<u8, RelayError> {
    let started = SystemTime::now();
    let mut writer = open_log(&config, started);
    if config.remote.is_some() {
        return run_remote(config, signals, started, writer);
    }
    let mut server = match child::spawn(&config.command) {
        Ok(server) => server,
        Err(err) => {
            tracing::error!("ctxopt-proxy: {err}");
            log_start_failure(&mut writer, header(&config, started, None), &err);
            return Ok(err.exit_code());
        }
    };
    let pid = server.id();
    let stats = Arc::new(RelayStats::default());
    let log_path = writer.is_open().then(|| absolute(writer.path()));
    let (tap, tap_sender) = Tap::start(
        header(&config, started, Some(pid)),
        writer,
        config.tokenizer,
        stats.clone(),
        std::mem::take(&mut config.sinks),
        log_path,
        None,
    )?;

    let (server_in, server_out) = match (server.stdin.take(), server.stdout.take()) {
        (Some(i), Some(o)) => (OwnedFd::from(i), OwnedFd::from(o)),
        _ => return Err(io::Error::other("server pipes missing").into()),
    };
    let server_out = File::from(server_out);
    let watched = server_out.as_fd().try_clone_to_owned()?;
    // The server may write up to 1 MiB ahead of the relay, and each zero-copy step moves up to
    // that much (16 MB results: 0.82 of direct on average against 0.71 with 64 KiB, ahead in
    // 14 of 15 side-by-side pairs; docs/benchmarks.md).
    zero_copy::widen(server_out.as_fd());
    let (drained, answers) = start_pumps(
        server_in,
        FromServer::Pipe(server_out),
        tap_sender,
        &stats,
        &config,
    )?;
    let server_out = watched;
    let status = supervise(&mut server, signals, config.grace)?;
    let mut late = AfterExit {
        pid,
        signals,
        first: None,
    };
    // Whatever the server left running in its group is an orphan now: ask it to go.
    child::signal_group(pid, libc::SIGTERM);
    // The grace period is for the server's stdout to close; what it wrote before is relayed
    // whole, however slowly the client reads.
    let drain = config.grace.max(LAST_DRAIN);
    let mut closed = late.wait_hangup(&server_out, drain);
    if !closed {
        stats.error(format!(
            "the server's stdout stayed open {drain:?} after it exited; its process group was killed"
        ));
        child::signal_group(pid, libc::SIGKILL);
        closed = blocking::wait_hangup(&server_out, LAST_DRAIN);
    }
    drop(server_out);
    if closed {
        if let Some(sig) = wait_drained(&drained, signals, &stats) {
            late.forward(sig);
        }
    } else {
        let _ = drained.recv_timeout(LAST_DRAIN);
    }
    if let Some(answers) = answers {
        answers.finish(ANSWER_LIMIT);
    }
    // The last look, just before the trailer: a signal that came while the server's last
    // output or the proxy's answers were written.
    late.check();
    late.report(&stats);
    if let Some(line) = stats.undelivered_line() {
        tracing::warn!("ctxopt-proxy: {line}");
    }
    let (exit, code) = child::exit_of(status);
    tap.finish(exit);
    Ok(code)
}

/// [`run`] for a [`Remote`] server: the relay between the client and two pipes, the remote
/// serving the other ends, until the client has closed its end and the remote is done. A
/// forwarded signal collected at any point before the trailer (the last look is just before
/// it) stops the run; the exit is then `{signal}` and the code 128 + the signal. The
/// remote's own faults are answers to the client and lines in the log, never the proxy's
/// exit status: it exits 0.
fn run_remote(
    mut config: ProxyConfig,
    signals: &Signals,
    started: SystemTime,
    writer: LogWriter,
) -> Result<u8, RelayError> {
    let Some(remote) = config.remote.take() else {
        return Err(io::Error::other("no remote server").into());
    };
    let header = Header {
        server_argv: remote.describe(),
        ..header(&config, started, None)
    };
    let stats = Arc::new(RelayStats::default());
    let log_path = writer.is_open().then(|| absolute(writer.path()));
    let notes = Arc::new(TransportNotes::for_remote(remote.as_ref()));
    let (tap, tap_sender) = Tap::start(
        header,
        writer,
        config.tokenizer,
        stats.clone(),
        std::mem::take(&mut config.sinks),
        log_path,
        Some(notes.clone()),
    )?;
    let settle = notes.clone();
    let (from_client, to_remote) = io::pipe()?;
    let (handoff, frames) = Handoff::new();
    let (drained, answers) = start_pumps(
        OwnedFd::from(to_remote),
        FromServer::Remote(frames),
        tap_sender,
        &stats,
        &config,
    )?;
    let stop = Arc::new(AtomicBool::new(false));
    let (finished, done) = mpsc::channel();
    remote.start(RemoteLink {
        from_client: File::from(OwnedFd::from(from_client)),
        to_client: ServerFrames::new(handoff.clone(), notes, stats.clone()),
        stop: stop.clone(),
        finished,
    })?;
    let stopped = supervise_remote(&done, signals, &stop, config.grace);
    // Whatever the remote still holds, nothing more reaches the client: the `s2c` pump
    // relays what was handed over and ends.
    handoff.close();
    let cut = wait_drained(&drained, signals, &stats);
    if let Some(answers) = answers {
        answers.finish(ANSWER_LIMIT);
    }
    // The last look before the exit status is chosen: a signal that came while the remote
    // finished (the client's end closed just after it), while the client read the last
    // frames or while the proxy's answers were written ends the run as a signal too.
    let signal = stopped.or(cut).or_else(|| signals.pending_forwarded());
    if let Some(line) = stats.undelivered_line() {
        tracing::warn!("ctxopt-proxy: {line}");
    }
    let (exit, code) = match signal {
        Some(sig) => (
            ExitStatus {
                code: None,
                signal: Some(sig),
            },
            128u8.saturating_add(u8::try_from(sig).unwrap_or(u8::MAX)),
        ),
        None => (
            ExitStatus {
                code: Some(0),
                signal: None,
            },
            0,
        ),
    };
    // The header waits for the transport's name: a remote that never named it will not now.
    settle.settle();
    tap.finish(exit);
    Ok(code)
}

/// Waits until the remote is done; a forwarded signal asks it to stop, and after `grace`
/// the wait ends whether it is done or not. The signal, when one was collected during the
/// wait (one still pending when the remote is done is the caller's to collect).
fn supervise_remote(
    done: &mpsc::Receiver<()>,
    signals: &Signals,
    stop: &AtomicBool,
    grace: Duration,
) -> Option<libc::c_int> {
    let mut stopped: Option<(libc::c_int, Instant)> = None;
    loop {
        match done.recv_timeout(POLL) {
            Ok(()) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => return stopped.map(|(sig, _)| sig),
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if let Some((sig, at)) = stopped {
            if at.elapsed() >= grace {
                return Some(sig);
            }
        } else if let Some(sig) = signals.wait(Duration::ZERO) {
            if signals::FORWARDED.contains(&sig) {
                stop.store(true, Ordering::Relaxed);
                stopped = Some((sig, Instant::now()));
            }
        }
    }
}

/// A log for a server that never started: its header, and a trailer naming the reason.
fn log_start_failure(writer: &mut LogWriter, header: Header, err: &child::SpawnError) {
    writer.write(&LogLine::Header(header));
    writer.write(&LogLine::Trailer(Trailer {
        ts: rfc3339(SystemTime::now()),
        exit: ExitStatus {
            code: None,
            signal: None,
        },
        frames_relayed: PerDirection::default(),
        frames_logged: 0,
        frames_unlogged: 0,
        bytes: PerDirection::default(),
        errors: vec![err.to_string()],
        pins: None,
    }));
}

/// The log path as the store's provenance names it: absolute, so that `ctxopt ingest` of
/// the same log finds the same frames.
fn absolute(path: &std::path::Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// What [`start_pumps`] hands back: when the server's output is drained, and the proxy's
/// answers when there is a handler.
type Started = (mpsc::Receiver<()>, Option<Arc<Answers>>);

/// Where the `s2c` pump reads the server's frames.
enum FromServer {
    /// The server's stdout.
    Pipe(File),
    /// The frames a [`Remote`] hands over whole.
    Remote(mpsc::Receiver<Frame>),
}

/// Starts the `c2s` and `s2c` threads between the client and the server's stdin
/// (`server_in`) and output (`server_out`); the receiver hears when the server's output is
/// drained and everything read from it was written on.
fn start_pumps(
    server_in: OwnedFd,
    server_out: FromServer,
    tap: TapSender,
    stats: &Arc<RelayStats>,
    config: &ProxyConfig,
) -> io::Result<Started> {
    let client_in = File::from(io::stdin().as_fd().try_clone_to_owned()?);
    let client_out = File::from(io::stdout().as_fd().try_clone_to_owned()?);
    // A client's pipe holds 64 KiB unless it asked for more: raised to 1 MiB, a long frame
    // reaches the client in 16 steps per 16 MB instead of 256, each a wake-up of the client
    // and of the `s2c` pump (docs/benchmarks.md).
    zero_copy::widen(client_out.as_fd());
    let to_server = Arc::new(Outlet::for_fd(File::from(server_in)));
    let to_client = Arc::new(Outlet::for_fd(client_out));
    let intercept = config.handler.as_ref().map(|handler| Intercept {
        handler: handler.clone(),
        answers: Arc::new(Answers::new(
            to_client.clone(),
            tap.clone(),
            stats.clone(),
            config.answer_delay,
        )),
    });
    let c2s = Pump {
        dir: Direction::C2s,
        outlet: to_server.clone(),
        on_break_close: None,
        tap: tap.clone(),
        stats: stats.clone(),
        intercept: intercept.clone(),
    };
    let answers = intercept.as_ref().map(|i| i.answers.clone());
    let s2c = Pump {
        dir: Direction::S2c,
        outlet: to_client,
        on_break_close: Some(to_server),
        tap,
        stats: stats.clone(),
        intercept,
    };
    std::thread::Builder::new()
        .name("c2s".into())
        .spawn(move || c2s.run(client_in))?;
    let (drained_tx, drained_rx) = mpsc::channel::<()>();
    std::thread::Builder::new()
        .name("s2c".into())
        .spawn(move || {
            match server_out {
                FromServer::Pipe(pipe) => s2c.run(pipe),
                FromServer::Remote(frames) => s2c.run_frames(frames),
            }
            let _ = drained_tx.send(());
        })?;
    Ok((drained_rx, answers))
}

/// Waits until the `s2c` pump has written on everything the server wrote, for as long as the
/// client takes to read it; a forwarded signal (the user asking the proxy to stop) ends the
/// wait. That signal, when one did.
fn wait_drained(
    drained: &mpsc::Receiver<()>,
    signals: &Signals,
    stats: &RelayStats,
) -> Option<libc::c_int> {
    loop {
        match drained.recv_timeout(POLL) {
            Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some(sig) = signals.pending_forwarded() {
                    stats.error(format!(
                        "signal {sig} while the client was still reading the server's last output; not all of it was relayed"
                    ));
                    return Some(sig);
                }
            }
        }
    }
}

/// The forwarded signals collected after the proxy has seen the server exit. The server's
/// status is then the proxy's, whatever comes: each such signal goes to what the server left
/// in its process group, and the first is named in the trailer.
struct AfterExit<'a> {
    /// The server's pid, its process group's id.
    pid: u32,
    signals: &'a Signals,
    /// The first signal collected.
    first: Option<libc::c_int>,
}

impl AfterExit<'_> {
    /// Forwards `sig`, collected after the server exited, to its process group.
    fn forward(&mut self, sig: libc::c_int) {
        child::signal_group(self.pid, sig);
        self.first.get_or_insert(sig);
    }

    /// Forwards the signal pending now, if one is, without waiting.
    fn check(&mut self) {
        if let Some(sig) = self.signals.pending_forwarded() {
            self.forward(sig);
        }
    }

    /// [`blocking::wait_hangup`], forwarding each signal as it comes (what the server left
    /// holds its stdout open; the signal may be what makes it let go).
    fn wait_hangup(&mut self, fd: &impl AsFd, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if blocking::wait_hangup(fd, left.min(POLL)) {
                return true;
            }
            self.check();
            if Instant::now() >= deadline {
                return false;
            }
        }
    }

    /// Names the first signal in the trailer's errors and on stderr.
    fn report(&self, stats: &RelayStats) {
        if let Some(sig) = self.first {
            let line = format!(
                "signal {sig} after the server had exited: forwarded to what it left in its process group; the exit status is the server's"
            );
            tracing::warn!("ctxopt-proxy: {line}");
            stats.error(line);
        }
    }
}

/// Waits for the server to exit, forwarding signals and killing it when it outlives the
/// grace period after one.
fn supervise(
    server: &mut Child,
    signals: &Signals,
    grace: Duration,
) -> io::Result<std::process::ExitStatus> {
    let pid = server.id();
    let mut deadline: Option<Instant> = None;
    loop {
        if let Some(status) = server.try_wait()? {
            return Ok(status);
        }
        let timeout = deadline
            .map(|d| d.saturating_duration_since(Instant::now()).min(POLL))
            .unwrap_or(POLL);
        match signals.wait(timeout) {
            Some(sig) if signals::FORWARDED.contains(&sig) => {
                child::signal_group(pid, sig);
                deadline.get_or_insert_with(|| Instant::now() + grace);
            }
            _ => {}
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            child::signal_group(pid, libc::SIGKILL);
            deadline = Some(Instant::now() + POLL * 50);
        }
    }
}

#[cfg(test)]
mod tests;
