//! Regression tests for the relay defects of issue 16 (D1–D4): nothing the server wrote is
//! lost to a slow reader, no depth of nesting crashes the proxy, the log's order is the
//! client's order, and an injected answer that cannot be delivered is counted.

use std::io::{Read, Write};
use std::process::Stdio;
use std::time::Duration;

use ctxopt::framelog::{Direction, FrameKind};
use serde_json::{json, Value};

use crate::support::log::read_log;
use crate::support::proxy::{wait_with_watchdog, ProxyCmd};

fn call(id: u64, name: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": {}}})
    .to_string()
        + "\n"
}

#[test]
fn d1_a_client_reading_slowly_after_the_server_exited_gets_every_response() {
    // 20,000 responses (about 800 kB): they fit in the server's pipe, so the server has
    // written them all and exited long before the client reads.
    let scratch = tempfile::tempdir().unwrap();
    let file = scratch.path().join("responses.jsonl");
    let responses: String = (0..20_000)
        .map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}\n"))
        .collect();
    std::fs::write(&file, &responses).unwrap();
    let cmd = ProxyCmd::fixture(&[format!("emit:{}", file.display()), "exit:0".into()]).option(&[
        "--grace-period",
        "0",
        "--tokenizer",
        "chars/4",
    ]);
    let mut child = cmd
        .command()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    // The client is slower than the proxy's whole drain period after the server's exit
    // (1 s, and 1 s more after killing its group, with --grace-period 0): what was
    // written must still come.
    std::thread::sleep(Duration::from_secs(3));
    let mut got = String::new();
    out.read_to_string(&mut got).unwrap();
    assert!(wait_with_watchdog(&mut child).success());
    assert_eq!(got.lines().count(), 20_000);
    assert!(got == responses, "byte-exact");
    let log = read_log(cmd.log_path());
    assert_eq!(log.trailer.frames_relayed.s2c, 20_000);
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
}

/// A request whose `params` nests `arrays` arrays (`arrays + 1` levels deep).
fn nested(id: u64, arrays: usize) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\",\"params\":{}{}}}\n",
        "[".repeat(arrays),
        "]".repeat(arrays)
    )
}

#[test]
fn d2_frames_nested_10000_deep_either_way_are_relayed_untouched_and_logged_unparseable() {
    let input = [
        nested(1, 10_000),
        nested(2, 127),
        nested(3, 126),
        call(4, "echo"),
    ]
    .concat();
    for options in [&["--inject", "all"][..], &["--inject", "none"]] {
        // The echo server sends every frame back: both directions carry them.
        let run = ProxyCmd::fixture(&["echo"])
            .option(options)
            .option(&["--tokenizer", "chars/4"])
            .run(input.as_bytes());
        assert!(run.status.success(), "{options:?}: {}", run.stderr);
        assert!(run.stdout == input.as_bytes(), "{options:?}: byte-exact");
        let log = read_log(&run.log);
        for dir in [Direction::C2s, Direction::S2c] {
            let kinds: Vec<FrameKind> = log.dir(dir).iter().map(|f| f.kind).collect();
            assert_eq!(
                kinds,
                [
                    FrameKind::Unparseable,
                    FrameKind::Unparseable,
                    FrameKind::Request,
                    FrameKind::Request
                ],
                "{options:?} {dir:?}: from 128 levels on a frame is unparseable"
            );
        }
        assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
    }
}

/// The ids of response lines, in order.
fn ids(text: &str) -> Vec<u64> {
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["id"].as_u64().unwrap()
        })
        .collect()
}

#[test]
fn d3_the_logs_order_of_the_proxys_answers_is_the_order_the_client_received_them() {
    let calls = 2_000;
    let input: String = (1..=calls).map(|id| call(id, "get_decisions")).collect();
    let run = ProxyCmd::fixture(&["respond"])
        .option(&["--tokenizer", "chars/4"])
        .run(input.as_bytes());
    assert!(run.status.success(), "{}", run.stderr);
    let received = ids(&String::from_utf8(run.stdout).unwrap());
    assert_eq!(received.len(), calls as usize);
    let log = read_log(&run.log);
    let mut p2c = log.dir(Direction::P2c);
    p2c.sort_by_key(|f| f.seq);
    let logged: Vec<u64> = p2c
        .iter()
        .map(|f| serde_json::from_str::<Value>(f.id.as_deref().unwrap()).unwrap())
        .map(|id| id.as_u64().unwrap())
        .collect();
    assert!(
        logged == received,
        "seq order differs from the client's order at position {:?}",
        logged.iter().zip(&received).position(|(a, b)| a != b)
    );
}

#[test]
fn d4_injected_answers_that_cannot_be_delivered_are_counted_in_the_trailer() {
    let calls = 50;
    let cmd = ProxyCmd::fixture(&["respond"]).option(&["--tokenizer", "chars/4"]);
    let mut child = cmd.spawn();
    // The client stops reading before it asks: no answer can reach it.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    let input: String = (1..=calls).map(|id| call(id, "get_decisions")).collect();
    stdin.write_all(input.as_bytes()).unwrap();
    drop(stdin);
    let mut stderr = child.stderr.take().unwrap();
    let mut err = String::new();
    stderr.read_to_string(&mut err).unwrap();
    assert!(wait_with_watchdog(&mut child).success(), "{err}");
    let log = read_log(cmd.log_path());
    assert_eq!(log.dir(Direction::C2p).len(), calls as usize);
    let expected = format!("{calls} answers of the proxy (injected tools) not delivered");
    assert!(
        log.trailer.errors.iter().any(|e| e.starts_with(&expected)),
        "{:?}",
        log.trailer.errors
    );
}
