//! The replay benchmark: a 10,000-request session recorded from the live
//! `@modelcontextprotocol/server-everything` through `ctxopt-proxy`, then served by
//! `ctxopt replay` to the same input; prints, for both, the start-up time (to the first
//! answer: starting the server, or reading the log) and the answering time (first to last
//! answer), and the ratio of the answering times, as Markdown. `cargo bench --bench replay` (after `./proxy-tests/run-all --install-only`);
//! `CTXOPT_BENCH_REPLAY_REQUESTS` changes the number of requests. Each run writes every
//! request at once and reads until every answer has come (the same client both times), so
//! the times compare answering, not a client's think time. Then verify's overhead: the same
//! requests sent one at a time straight to the live server (each waiting for its answer, as
//! `ctxopt verify` does: the server's own time), against `ctxopt verify` of the recorded log
//! with the same server, both from the start of the process to the last answer, taking
//! turns `CTXOPT_BENCH_VERIFY_ROUNDS` times (default 5).
//! `docs/replay.md` and `docs/benchmarks.md` record runs.

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
    let mut child = spawn_piped(argv);
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

/// `argv` started with its stdin and stdout piped (stderr dropped).
fn spawn_piped(argv: &[String]) -> std::process::Child {
    Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start")
}

/// Runs `argv` and sends `input` one line at a time, waiting after each request for its
/// answer; returns the time from the start of the process to the last answer.
fn one_at_a_time(argv: &[String], input: &[u8]) -> Duration {
    let started = Instant::now();
    let mut child = spawn_piped(argv);
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
    for line in input.split_inclusive(|b| *b == b'\n') {
        stdin.write_all(line).expect("write");
        stdin.flush().expect("flush");
        if !line.starts_with(br#"{"jsonrpc":"2.0","id""#) {
            continue;
        }
        loop {
            let answer = stdout.next().expect("an answer").expect("read");
            if answer.contains("\"result\"") || answer.contains("\"error\"") {
                break;
            }
        }
    }
    let done = started.elapsed();
    drop(stdin);
    child.wait().expect("wait");
    done
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

    // Verify against the server's own time, taking turns `rounds` times (the machine's load
    // moves between runs): medians, and every run.
    let rounds: usize = std::env::var("CTXOPT_BENCH_VERIFY_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    let server_argv = vec!["node".to_owned(), s(&server), "stdio".to_owned()];
    let verify_once = || {
        let started = Instant::now();
        let verified = Command::new(CTXOPT)
            .args(["verify", &s(&log), "--format", "json", "--"])
            .args(&server_argv)
            .output()
            .expect("run ctxopt verify");
        let took = started.elapsed();
        assert_eq!(
            verified.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&verified.stderr)
        );
        took
    };
    let (mut direct, mut verify): (Vec<f64>, Vec<f64>) = (0..rounds)
        .map(|_| (ms(one_at_a_time(&server_argv, &input)), ms(verify_once())))
        .unzip();
    let runs = |v: &[f64]| {
        v.iter()
            .map(|t| format!("{t:.0}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (direct_runs, verify_runs) = (runs(&direct), runs(&verify));
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (direct_ms, verify_ms) = (median(&mut direct), median(&mut verify));
    println!("\n| requests | one at a time | median ms (start to last answer) | runs |");
    println!("|---|---|---|---|");
    println!("| {requests} | straight to the live server | {direct_ms:.0} | {direct_runs} |");
    println!("| {requests} | ctxopt verify LOG -- server | {verify_ms:.0} | {verify_runs} |");
    println!(
        "\nverify's overhead (medians): {:.0} ms, {:.1} µs per request",
        verify_ms - direct_ms,
        (verify_ms - direct_ms) * 1000.0 / requests as f64
    );
}
