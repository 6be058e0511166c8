//! Frames longer than one read are written on as they arrive (see `src/relay/pump.rs`):
//! still byte-exact and whole on the client's side, never interleaved with the proxy's own
//! answers, still rewritten when they answer a `tools/list`, and logged once, after they
//! end, even when the server dies in the middle of one.

use ctxopt::framelog::{Direction, FrameKind, LineEnding};
use serde_json::{json, Value};

use crate::support::frames::big_response;
use crate::support::log::read_log;
use crate::support::proxy::ProxyCmd;

/// The injected tools the proxy appends to a `tools/list` result by default.
const SIX: usize = 6;

#[test]
fn an_injected_answer_waits_for_the_frame_being_streamed_to_end() {
    const BIG: usize = 8 << 20;
    // The server starts a paced 8 MB frame (128 writes 25 ms apart: over 3 s) 300 ms after
    // start, so the proxy has consumed the call before the frame begins (the answer then
    // waits for nothing logged after it). The answer is held back 1.5 s: it is ready in
    // the middle of the frame.
    let call = b"{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"tools/call\",\"params\":{\"name\":\"get_decisions\",\"arguments\":{}}}\n";
    let run = ProxyCmd::fixture(&[
        "sleep-ms:300".to_string(),
        "chunk:65536".into(),
        "pace-ms:25".into(),
        format!("big:7:{BIG}"),
        "drain".into(),
    ])
    .option(&["--tokenizer", "chars/4", "--answer-delay-ms", "1500"])
    .run(call);
    assert!(run.status.success(), "{}", run.stderr);
    let big = big_response(7, BIG);
    assert!(
        run.stdout.starts_with(&big),
        "the 8 MB frame arrives whole, before the answer: {} bytes, answer at {:?}",
        run.stdout.len(),
        memchr::memmem::find(&run.stdout, b"\"id\":99")
    );
    let answer: Value = serde_json::from_slice(&run.stdout[BIG..]).expect("one answer line");
    assert_eq!(answer["id"], 99);
    assert!(run.stdout.ends_with(b"\n"));

    let log = read_log(&run.log);
    let dirs: Vec<(Direction, u64)> = log.frames.iter().map(|f| (f.dir, f.bytes)).collect();
    assert_eq!(
        dirs,
        [
            (Direction::C2p, call.len() as u64),
            (Direction::S2c, BIG as u64),
            (Direction::P2c, (run.stdout.len() - BIG) as u64),
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
