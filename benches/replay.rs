//! The replay benchmark: a 10,000-request session recorded from the live
//! `@modelcontextprotocol/server-everything` through `ctxopt-proxy`, then served by
//! `ctxopt replay` to the same input; prints, for both, the start-up time (to the first
//! answer: starting the server, or reading the log) and the answering time (first to last
//! answer), and the ratio of the answering times, as Markdown. `cargo bench --bench replay` (after `./proxy-tests/run-all --install-only`);
//! `CTXOPT_BENCH_REPLAY_REQUESTS` changes the number of requests. Each run writes every
//! request at once and reads until every answer has come (the same client both times), so
//! the times compare answering, not a client's think time. `docs/replay.md` records a run.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");
const PROXY: &str = env!("CARGO_BIN_EXE_ctxopt-proxy");

/// The session: initialize, initialized, then `requests` distinct `tools/call echo`.
fn session(requests: usize) -> Vec<u8> {
    let mut input = String::from(concat!(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"replay-bench","version":"1"}}}"#,
        "\n",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        "\n"
    ));
    for i in 1..=requests {
        input.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"echo\",\"arguments\":{{\"message\":\"request {i}\"}}}}}}\n"
        ));
    }
    input.into_bytes()
}

/// Runs `argv` with `input` on stdin; returns the time until the first answer (starting
/// up: the server's start, or the replay's reading of its log) and from the first answer to
/// the last of `answers` (answering).
fn answer_time(argv: &[String], input: &[u8], answers: usize) -> (Duration, Duration) {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let started = Instant::now();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        stdin.write_all(&input).expect("write the session");
        stdin
    });
    let mut seen = 0;
    let mut first = None;
    for line in stdout.lines() {
        let line = line.expect("read");
        if line.contains("\"result\"") || line.contains("\"error\"") {
            seen += 1;
            first.get_or_insert_with(Instant::now);
            if seen == answers {
                break;
            }
        }
    }
    let last = Instant::now();
    assert_eq!(seen, answers, "{argv:?} answered {seen} of {answers}");
    drop(writer.join().expect("writer"));
    child.wait().expect("wait");
    let first = first.expect("an answer");
    (first - started, last - first)
}

fn main() {
    let requests: usize = std::env::var("CTXOPT_BENCH_REPLAY_REQUESTS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10_000);
    let server: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join(
        "proxy-tests/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
    );
    if !server.is_file() {
        eprintln!(
            "{} is missing: ./proxy-tests/run-all --install-only",
            server.display()
        );
        std::process::exit(2);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("session.jsonl");
    let input = session(requests);
    let s = |p: &Path| p.display().to_string();
    let live = answer_time(
        &[
            PROXY.into(),
            "--log".into(),
            s(&log),
            "--inject".into(),
            "none".into(),
            "--store".into(),
            ":memory:".into(),
            "--".into(),
            "node".into(),
            s(&server),
            "stdio".into(),
        ],
        &input,
        requests + 1,
    );
    let replay = answer_time(
        &[CTXOPT.into(), "replay".into(), s(&log)],
        &input,
        requests + 1,
    );
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("| requests | server | start-up ms (to the first answer) | answering ms (first to last answer) |");
    println!("|---|---|---|---|");
    println!(
        "| {requests} | live, through the proxy | {:.0} | {:.0} |",
        ms(live.0),
        ms(live.1)
    );
    println!(
        "| {requests} | ctxopt replay | {:.0} | {:.0} |",
        ms(replay.0),
        ms(replay.1)
    );
    println!(
        "\nanswering, live / replay: {:.1} (1 or more: replay answers at least as fast as the live server did)",
        ms(live.1) / ms(replay.1)
    );
}
