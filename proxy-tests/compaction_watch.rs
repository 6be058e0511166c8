//! `--compact-results` watches each forwarded `tools/call` until its answer passes, and
//! gathers long server frames whole while one is watched (so that a result can be compacted
//! before its first byte reaches the client). Here the watch must end however the call
//! ends — an answer that is not UTF-8, a JSON-RPC error, a cancellation the server never
//! answers — and a long server frame after it is then written on as it arrives: the client
//! reads its first megabyte while the fixture server still holds back the rest until the
//! client sends a marker line. Were the call still watched, the proxy would wait for the
//! whole frame and the first megabyte would never come (the watchdog then fails the test).

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout};
use std::sync::mpsc;

use ctxopt::framelog::Direction;
use serde_json::{json, Value};

use crate::support::frames::big_response;
use crate::support::log::{read_log, wire_bytes};
use crate::support::proxy::{signal, wait_with_watchdog, ProxyCmd, WATCHDOG};

const LIMIT: &str = "2000";

/// The long frame the server writes after the call ended: 4 MB, its first megabyte first.
const LONG: usize = 4 << 20;
const HEAD: usize = 1 << 20;

/// A `tools/call` of the fixture's `dump` with id 1.
fn call() -> Vec<u8> {
    let mut line = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "dump", "arguments": {}}})
    .to_string()
    .into_bytes();
    line.push(b'\n');
    line
}

/// The line the client sends once it has the long frame's head.
const MARKER: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/marker\"}\n";

/// How the call ends.
enum End {
    /// The server answers with these bytes (a whole line).
    Answer(Vec<u8>),
    /// The client cancels it with this notification; the server never answers.
    Cancel(Vec<u8>),
}

/// A proxy with a deadline: killed (its reads then fail) when the test has not finished
/// by [`WATCHDOG`].
struct Guarded {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    done: mpsc::Sender<()>,
}

impl Guarded {
    fn start(cmd: &ProxyCmd) -> Guarded {
        let mut child = cmd.spawn();
        let pid = child.id();
        let (done, finished) = mpsc::channel::<()>();
        std::thread::spawn(move || {
            if finished.recv_timeout(WATCHDOG) == Err(mpsc::RecvTimeoutError::Timeout) {
                signal(pid, libc::SIGKILL);
            }
        });
        Guarded {
            stdin: child.stdin.take(),
            stdout: child.stdout.take().expect("stdout"),
            child,
            done,
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write to proxy");
        stdin.flush().expect("flush");
    }

    fn read_exact(&mut self, n: usize, what: &str) -> Vec<u8> {
        let mut buf = vec![0; n];
        self.stdout
            .read_exact(&mut buf)
            .unwrap_or_else(|e| panic!("{what} never came ({e}): the call is still watched"));
        buf
    }

    /// Closes stdin; the rest of stdout.
    fn close(mut self) -> Vec<u8> {
        drop(self.stdin.take());
        let mut rest = Vec::new();
        let _ = self.stdout.read_to_end(&mut rest);
        assert!(wait_with_watchdog(&mut self.child).success());
        let _ = self.done.send(());
        rest
    }
}

/// Calls `dump`, ends the call as `end` says, then reads a long server frame as it comes.
fn after_the_call_ends_long_frames_stream(end: End) -> crate::support::log::Log {
    let scratch = tempfile::tempdir().unwrap();
    let long = big_response(7, LONG);
    let (head, tail) = long.split_at(HEAD);
    let file = |name: &str, bytes: &[u8]| {
        let path = scratch.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        format!("emit:{}", path.display())
    };
    // The server reads the call, answers it or reads the cancellation, writes the head,
    // waits for the marker, writes the tail.
    let mut steps = vec!["await-line".to_string()];
    match &end {
        End::Answer(answer) => steps.push(file("answer", answer)),
        End::Cancel(_) => steps.push("await-line".into()),
    }
    steps.extend([
        file("head", head),
        "await-line".into(),
        file("tail", tail),
        "drain".into(),
    ]);
    let cmd = ProxyCmd::fixture(&steps).option(&[
        "--compact-results",
        LIMIT,
        "--inject",
        "none",
        "--tokenizer",
        "chars/4",
    ]);
    let mut proxy = Guarded::start(&cmd);
    proxy.send(&call());
    match &end {
        End::Answer(answer) => {
            let got = proxy.read_exact(answer.len(), "the answer");
            assert!(got == *answer, "the answer, byte for byte");
        }
        End::Cancel(cancel) => proxy.send(cancel),
    }
    assert!(proxy.read_exact(HEAD, "the long frame's head") == head);
    proxy.send(MARKER);
    let rest = proxy.close();
    assert!(rest == tail, "the rest of the long frame, and nothing else");
    let log = read_log(cmd.log_path());
    let long_frame = log.dir(Direction::S2c).last().map(|f| f.bytes);
    assert_eq!(long_frame, Some(LONG as u64), "logged once, whole");
    log
}

#[test]
fn an_answer_that_is_not_utf8_ends_the_watch_and_passes_byte_for_byte() {
    // Over the limit, in Latin-1: nothing the proxy can compact, so it passes as it came.
    let mut answer =
        br#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":""#.to_vec();
    for i in 0..2_000 {
        answer.extend_from_slice(format!("line {i}: caf").as_bytes());
        answer.extend_from_slice(&[0xE9, b'\\', b'n']);
    }
    answer.extend_from_slice(b"\"}]}}\n");
    assert!(std::str::from_utf8(&answer).is_err());
    assert!(answer.len() / 4 > 2000, "canary: over the limit");
    let log = after_the_call_ends_long_frames_stream(End::Answer(answer.clone()));
    let s2c = &log.dir(Direction::S2c)[0];
    assert!(s2c.raw.is_none() && s2c.raw_b64.is_some());
    assert_eq!(wire_bytes(s2c), answer, "logged as it came");
    assert!(log.dir(Direction::P2c).is_empty(), "not compacted");
}

#[test]
fn an_error_answer_ends_the_watch() {
    let answer =
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"message\":\"dump failed\"}}\n";
    let log = after_the_call_ends_long_frames_stream(End::Answer(answer.to_vec()));
    assert_eq!(log.dir(Direction::S2c)[0].error_code, Some(-32603));
}

#[test]
fn a_cancellation_the_server_never_answers_ends_the_watch_and_reaches_the_server() {
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 1, "reason": "the user pressed Esc"}});
    let mut line = cancel.to_string().into_bytes();
    line.push(b'\n');
    let log = after_the_call_ends_long_frames_stream(End::Cancel(line));
    let forwarded: Vec<Value> = log
        .dir(Direction::C2s)
        .iter()
        .filter_map(|f| f.json())
        .filter(|v| v["method"] == "notifications/cancelled")
        .collect();
    assert_eq!(forwarded, [cancel], "forwarded to the server, as sent");
    assert!(log.dir(Direction::C2p).is_empty(), "not taken by the proxy");
}
