//! The relay's pumps with a trivial [`FrameHandler`] and [`FrameSink`] (no store, no
//! injected tools): what a handler decides is what the client, the server and the log see.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::answers::Answers;
use super::handler::{ClientVerdict, FrameHandler, Replaced, ServerVerdict};
use super::outlet::Outlet;
use super::pump::{Intercept, Pump};
use super::sink::{FrameSink, LogPlace};
use super::stats::RelayStats;
use super::tap::{tests::header, Tap};
use crate::framelog::writer::LogWriter;
use crate::framelog::{Direction, ExitStatus, Frame};
use crate::tokenizer::Tokenizer;

/// Decides by a word in the frame: `now` and `later` are answered (`later` on a worker),
/// `mine` is taken without an answer, `swap` and `edit` (server frames) are replaced.
#[derive(Debug)]
struct ByWord;

fn has(frame: &[u8], word: &str) -> bool {
    memchr::memmem::find(frame, word.as_bytes()).is_some()
}

impl FrameHandler for ByWord {
    fn sees_whole(&self, _dir: Direction) -> bool {
        true
    }

    fn on_client_frame(&self, frame: &[u8]) -> ClientVerdict {
        if has(frame, "now") {
            ClientVerdict::Answer(br#"{"answer":"now"}"#.to_vec())
        } else if has(frame, "later") {
            ClientVerdict::AnswerLater(Box::new(|| Some(br#"{"answer":"later"}"#.to_vec())))
        } else if has(frame, "mine") {
            ClientVerdict::Take
        } else {
            ClientVerdict::Pass
        }
    }

    fn on_server_frame(&self, frame: &[u8]) -> ServerVerdict {
        if has(frame, "swap") {
            ServerVerdict::Replace {
                frame: b"{\"swapped\":true}\n".to_vec(),
                log: Replaced::Separately,
            }
        } else if has(frame, "edit") {
            ServerVerdict::Replace {
                frame: b"{\"edited\":true}\n".to_vec(),
                log: Replaced::WithServerRaw(String::from_utf8_lossy(frame).trim().into()),
            }
        } else {
            ServerVerdict::Pass
        }
    }
}

/// What a sink saw: each frame's direction, text and `server_raw`, and whether it was
/// logged.
type Seen = Arc<Mutex<Vec<(Direction, String, Option<String>, bool)>>>;

#[derive(Debug, Default)]
struct Collect(Seen);

impl FrameSink for Collect {
    fn frame(&mut self, frame: &Frame, logged: Option<LogPlace<'_>>) {
        self.0.lock().unwrap().push((
            frame.dir,
            frame.raw.clone().unwrap_or_default(),
            frame.server_raw.clone(),
            logged.is_some_and(|p| p.path == "/log" && p.seq == frame.seq),
        ));
    }

    fn trailer_errors(&self) -> Vec<String> {
        vec!["collected".into()]
    }
}

/// A pipe's two ends as files.
fn pipe() -> (File, File) {
    let (r, w) = std::io::pipe().unwrap();
    (File::from(OwnedFd::from(r)), File::from(OwnedFd::from(w)))
}

/// Everything a reader end gets until the writers close.
fn read_all(mut r: File) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut out = String::new();
        r.read_to_string(&mut out).unwrap();
        out
    })
}

#[test]
fn what_a_handler_decides_is_what_client_server_and_sinks_see() {
    let stats = Arc::new(RelayStats::default());
    let seen = Seen::default();
    let dir = tempfile::tempdir().unwrap();
    let (tap, sender) = Tap::start(
        header(),
        LogWriter::open(&dir.path().join("log.jsonl")),
        Tokenizer::CharsDiv4,
        stats.clone(),
        vec![Box::new(Collect(seen.clone()))],
        Some("/log".into()),
        None,
    )
    .unwrap();
    let (client_in, mut client_writes) = pipe();
    let (server_reads, to_server) = pipe();
    let (server_out, mut server_writes) = pipe();
    let (client_reads, to_client) = pipe();
    let to_client = Arc::new(Outlet::for_fd(to_client));
    let intercept = Intercept {
        handler: Arc::new(ByWord),
        answers: Arc::new(Answers::new(
            to_client.clone(),
            sender.clone(),
            stats.clone(),
            Duration::ZERO,
        )),
    };
    let pump = |dir, outlet, input: File| {
        let pump = Pump {
            dir,
            outlet,
            on_break_close: None,
            tap: sender.clone(),
            stats: stats.clone(),
            intercept: Some(intercept.clone()),
        };
        std::thread::spawn(move || pump.run(input))
    };
    let c2s = pump(
        Direction::C2s,
        Arc::new(Outlet::for_fd(to_server)),
        client_in,
    );
    let s2c = pump(Direction::S2c, to_client, server_out);
    let (server_got, client_got) = (read_all(server_reads), read_all(client_reads));

    client_writes
        .write_all(
            b"{\"to\":\"server\"}\n{\"ask\":\"now\"}\n{\"ask\":\"mine\"}\n{\"ask\":\"later\"}\n",
        )
        .unwrap();
    drop(client_writes);
    c2s.join().unwrap();
    server_writes
        .write_all(b"{\"plain\":1}\n{\"please\":\"swap\"}\n{\"please\":\"edit\"}\n")
        .unwrap();
    drop(server_writes);
    s2c.join().unwrap();
    intercept.answers.finish(Duration::from_secs(30));
    tap.finish(ExitStatus {
        code: Some(0),
        signal: None,
    });

    assert_eq!(server_got.join().unwrap(), "{\"to\":\"server\"}\n");
    let client = client_got.join().unwrap();
    let mut lines: Vec<&str> = client.lines().collect();
    // The worker's answer may come at any point after its call was taken.
    let later = lines
        .iter()
        .position(|l| *l == r#"{"answer":"later"}"#)
        .expect("the later answer arrives");
    lines.remove(later);
    assert_eq!(
        lines,
        [
            r#"{"answer":"now"}"#,
            r#"{"plain":1}"#,
            r#"{"swapped":true}"#,
            r#"{"edited":true}"#
        ]
    );
    let seen = seen.lock().unwrap();
    let dirs: Vec<Direction> = seen.iter().map(|s| s.0).collect();
    assert_eq!(dirs.iter().filter(|d| **d == Direction::P2c).count(), 3);
    let by_text = |text: &str| seen.iter().find(|s| s.1 == text).unwrap().clone();
    assert_eq!(by_text(r#"{"to":"server"}"#).0, Direction::C2s);
    for taken in [
        r#"{"ask":"now"}"#,
        r#"{"ask":"mine"}"#,
        r#"{"ask":"later"}"#,
    ] {
        assert_eq!(by_text(taken).0, Direction::C2p, "{taken}");
    }
    assert_eq!(by_text(r#"{"please":"swap"}"#).0, Direction::S2c);
    assert_eq!(by_text(r#"{"swapped":true}"#).0, Direction::P2c);
    let edited = by_text(r#"{"edited":true}"#);
    assert_eq!(
        (edited.0, edited.2.as_deref()),
        (Direction::S2c, Some(r#"{"please":"edit"}"#))
    );
    assert!(
        seen.iter().all(|s| s.3),
        "every sink call names its log line"
    );
    assert_eq!(
        stats.c2s.frames.load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(
        stats.s2c.frames.load(std::sync::atomic::Ordering::Relaxed),
        3
    );
    let log = std::fs::read_to_string(dir.path().join("log.jsonl")).unwrap();
    let logged: Vec<Frame> = log
        .lines()
        .filter_map(|l| match serde_json::from_str(l) {
            Ok(crate::framelog::LogLine::Frame(f)) => Some(*f),
            _ => None,
        })
        .collect();
    let line_of = |text: &str| logged.iter().find(|f| f.raw.as_deref() == Some(text));
    let (swap, swapped) = (
        line_of(r#"{"please":"swap"}"#).unwrap(),
        line_of(r#"{"swapped":true}"#).unwrap(),
    );
    assert_eq!(swapped.seq, swap.seq + 1, "logged right after the server's");
    assert_eq!(
        swapped.compacts,
        Some(swap.seq),
        "names the frame it replaces"
    );
    let trailer = log.lines().last().unwrap();
    assert!(trailer.contains("\"collected\""), "{trailer}");
    assert!(trailer.contains("\"frames_unlogged\":0"), "{trailer}");
}
