//! Frames longer than one read are written on as they arrive (see `src/relay/pump.rs`):
//! still byte-exact and whole on the client's side, never interleaved with the proxy's own
//! answers, still rewritten when they answer a `tools/list`, and logged once, after they
//! end, even when the server dies in the middle of one. Their bodies go from pipe to pipe by
//! `tee`/`splice` where both ends allow it and are copied where they do not (files).

use ctxopt::framelog::{Direction, FrameKind, LineEnding};
use serde_json::{json, Value};

use crate::support::frames::big_response;
use crate::support::log::read_log;
use crate::support::proxy::{ProxyCmd, Session};

/// The injected tools the proxy appends to a `tools/list` result by default.
const SIX: usize = 6;

#[test]
fn an_injected_answer_waits_for_the_frame_being_streamed_to_end() {
    const BIG: usize = 8 << 20;
    // The server writes the first 2 MB of an 8 MB frame, then waits for a marker line. The
    // client reads those 2 MB (the frame is being streamed: the proxy holds the client's
    // outlet), then calls an injected tool and sends the marker, which the proxy forwards
    // only after it has taken the call. The answer is ready while the frame is still
    // under way, and must come after it, whole.
    let scratch = tempfile::tempdir().unwrap();
    let big = big_response(7, BIG);
    let (head, tail) = big.split_at(2 << 20);
    let (head_file, tail_file) = (scratch.path().join("head"), scratch.path().join("tail"));
    std::fs::write(&head_file, head).unwrap();
    std::fs::write(&tail_file, tail).unwrap();
    let cmd = ProxyCmd::fixture(&[
        format!("emit:{}", head_file.display()),
        "await-line".into(),
        format!("emit:{}", tail_file.display()),
        "drain".into(),
    ])
    .option(&["--tokenizer", "chars/4"]);
    let mut session = Session::start(&cmd);
    let mut got = vec![0; head.len()];
    session.read_exact(&mut got);
    assert!(got == head, "the frame's start");
    let call = b"{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/call\",\"params\":{\"name\":\"get_decisions\",\"arguments\":{}}}\n";
    let marker = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/marker\"}\n";
    session.send(call);
    session.send(marker);
    let (rest, status) = session.close();
    assert!(status.success());
    assert!(
        rest.starts_with(tail),
        "the 8 MB frame arrives whole, before the answer: answer at {:?}",
        memchr::memmem::find(&rest, b"\"id\":99")
    );
    let answer: Value = serde_json::from_slice(&rest[tail.len()..]).expect("one answer line");
    assert_eq!(answer["id"], 99);
    assert!(rest.ends_with(b"\n"));

    let log = read_log(cmd.log_path());
    let dirs: Vec<(Direction, u64)> = log.frames.iter().map(|f| (f.dir, f.bytes)).collect();
    assert_eq!(
        dirs,
        [
            (Direction::S2c, BIG as u64),
            (Direction::C2p, call.len() as u64),
            (Direction::C2s, marker.len() as u64),
            (Direction::P2c, (rest.len() - tail.len()) as u64),
        ]
    );
}

#[test]
fn a_tools_list_answer_longer_than_one_read_is_still_extended() {
    // About 100 kB (one argument's limit is 128 kB), arriving in 4 kB writes.
    let description = "d".repeat(100_000);
    let list = json!({"tools": [{"name": "echo", "description": description,
                                 "inputSchema": {"type": "object"}}]});
    let run = ProxyCmd::fixture(&[
        "chunk:4096".to_string(),
        format!("method-result:tools/list:{list}"),
        "respond".into(),
    ])
    .option(&["--tokenizer", "chars/4"])
    .run(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n");
    assert!(run.status.success(), "{}", run.stderr);
    let got: Value = serde_json::from_slice(&run.stdout).expect("one JSON line");
    let tools = got["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 1 + SIX, "the injected tools were appended");
    assert_eq!(
        tools[0]["description"].as_str().map(str::len),
        Some(100_000)
    );

    let log = read_log(&run.log);
    let answer = &log.dir(Direction::S2c)[0];
    assert!(answer.bytes as usize > 100_000);
    let raw = answer
        .server_raw
        .as_deref()
        .expect("the server's own list kept");
    assert_eq!(serde_json::from_str::<Value>(raw).unwrap()["result"], list);
}

#[test]
fn a_streamed_frame_cut_by_the_servers_death_is_relayed_and_logged_as_far_as_it_came() {
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("partial.bin");
    let mut partial = big_response(3, 1 << 20);
    partial.truncate(700_000);
    std::fs::write(&file, &partial).unwrap();
    for inject in ["all", "none"] {
        let run = ProxyCmd::fixture(&[
            "chunk:4096".to_string(),
            format!("emit:{}", file.display()),
            format!("signal:{}", libc::SIGKILL),
        ])
        .option(&["--tokenizer", "chars/4", "--inject", inject])
        .run(b"");
        assert_eq!(run.status.code(), Some(128 + libc::SIGKILL), "{inject}");
        assert!(run.stdout == partial, "{inject}: every byte that came");
        let log = read_log(&run.log);
        assert_eq!(log.frames.len(), 1, "{inject}");
        let frame = &log.frames[0];
        assert_eq!(frame.bytes, partial.len() as u64);
        assert_eq!(frame.kind, FrameKind::Unparseable);
        assert_eq!(frame.line_ending, LineEnding::None);
        assert_eq!(log.trailer.bytes.s2c, partial.len() as u64);
    }
}

/// Long and short frames back to back, so that long frames end in the middle of a read
/// with the next frames' bytes behind them: 100 kB, 3 MB and 70 kB frames among small ones,
/// CRLF, a blank line, and a last frame with no line ending.
fn mixed_long_traffic() -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    t.extend(big_response(2, 100_000));
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n");
    t.extend(big_response(3, 3 << 20));
    t.extend(big_response(4, 70_000));
    t.extend_from_slice(b"\n");
    t.extend(big_response(5, 200_000));
    t.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"unterminated\"}");
    t
}

/// The wire sizes of the frames in `traffic` (each `\n`-terminated line, and the rest).
fn frame_sizes(traffic: &[u8]) -> Vec<u64> {
    traffic
        .split_inclusive(|&b| b == b'\n')
        .map(|line| line.len() as u64)
        .collect()
}

#[test]
fn long_frames_among_short_ones_pass_pipe_to_pipe_byte_exact_both_ways() {
    let input = mixed_long_traffic();
    // An echo server writing in 77,777-byte chunks: frame ends fall inside reads.
    // Without injected tools both directions stream.
    let run = ProxyCmd::fixture(&["chunk:77777", "echo"])
        .option(&["--tokenizer", "chars/4", "--inject", "none"])
        .run(&input);
    assert!(run.status.success(), "{}", run.stderr);
    assert!(
        run.stdout == input,
        "byte-exact: {} of {} bytes",
        run.stdout.len(),
        input.len()
    );
    let log = read_log(&run.log);
    let sizes = |dir| log.dir(dir).iter().map(|f| f.bytes).collect::<Vec<_>>();
    assert_eq!(sizes(Direction::C2s), frame_sizes(&input));
    assert_eq!(sizes(Direction::S2c), frame_sizes(&input));
    assert_eq!(log.trailer.frames_unlogged, 0);
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
}

#[test]
fn long_frames_pass_when_stdin_is_a_file_and_stdout_a_file_opened_to_append() {
    // A shell's `ctxopt-proxy … < in.jsonl >> out.jsonl`: a file is not a pipe to `tee`
    // from, and a file opened to append takes no `splice`, so the relay copies.
    let scratch = tempfile::tempdir().unwrap();
    let input = mixed_long_traffic();
    let (in_path, out_path) = (scratch.path().join("in"), scratch.path().join("out"));
    std::fs::write(&in_path, &input).unwrap();
    std::fs::write(&out_path, b"earlier\n").unwrap();
    let cmd = ProxyCmd::fixture(&["chunk:77777", "echo"]).option(&[
        "--tokenizer",
        "chars/4",
        "--inject",
        "none",
    ]);
    let out = std::fs::OpenOptions::new()
        .append(true)
        .open(&out_path)
        .unwrap();
    let status = cmd
        .command()
        .stdin(std::fs::File::open(&in_path).unwrap())
        .stdout(out)
        .status()
        .unwrap();
    assert!(status.success());
    let written = std::fs::read(&out_path).unwrap();
    assert!(
        written.strip_prefix(b"earlier\n".as_slice()) == Some(input.as_slice()),
        "byte-exact after what was there"
    );
    let log = read_log(cmd.log_path());
    assert_eq!(log.dir(Direction::S2c).len(), frame_sizes(&input).len());
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
}
