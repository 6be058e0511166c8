//! The hook benchmark: `ctxopt hook claude-code` answering `UserPromptSubmit` on a 10 MB
//! transcript, run as a client runs it (a child process, the payload on stdin).
//!
//! `cargo bench --bench hooks` builds a 10 MB transcript from a real one
//! (`fixtures/real-world/agent-transcripts/claude-code/d-kimuson__…jsonl`, repeated), runs
//! the hook once to import it (the first run, timed on its own), then runs it
//! `CTXOPT_BENCH_HOOK_RUNS` times (default 200), each time after appending one more turn
//! (the real transcript's first six lines) as a live session would, and prints the
//! wall-clock latency of those runs (p50, p99, max) as Markdown. `docs/benchmarks.md`
//! records a run.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");
const TRANSCRIPT: &str = "fixtures/real-world/agent-transcripts/claude-code/d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";

fn run_hook(dir: &Path, payload: &[u8]) -> (Duration, bool) {
    let started = Instant::now();
    let mut child = Command::new(CTXOPT)
        .args(["hook", "claude-code", "--store"])
        .arg(dir.join("store.sqlite3"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("run ctxopt hook");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload)
        .expect("write the payload");
    let out = child.wait_with_output().expect("wait for the hook");
    assert!(out.status.success());
    (started.elapsed(), !out.stdout.is_empty())
}

fn main() {
    let runs: usize = std::env::var("CTXOPT_BENCH_HOOK_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let real = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(TRANSCRIPT)).unwrap();
    let turn: Vec<u8> = real
        .split_inclusive(|b| *b == b'\n')
        .take(6)
        .flatten()
        .copied()
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let mut file = std::fs::File::create(&transcript).unwrap();
    let mut size = 0;
    while size < 10 * 1024 * 1024 {
        file.write_all(&real).unwrap();
        size += real.len();
    }
    let payload = serde_json::json!({"session_id": "bench", "hook_event_name": "UserPromptSubmit",
        "transcript_path": transcript, "cwd": dir.path(),
        "prompt": "the todo app build fails with TypeError: generate is not a function"})
    .to_string()
    .into_bytes();
    let (first, _) = run_hook(dir.path(), &payload);
    let mut times = Vec::with_capacity(runs);
    let mut answered = 0;
    for _ in 0..runs {
        file.write_all(&turn).unwrap();
        file.flush().unwrap();
        let (t, said) = run_hook(dir.path(), &payload);
        times.push(t);
        answered += usize::from(said);
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let pick = |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
    println!("| transcript | first run ms | runs | answered | p50 ms | p99 ms | max ms |");
    println!("|---|---|---|---|---|---|---|");
    println!(
        "| {:.1} MB | {:.0} | {runs} | {answered} | {:.1} | {:.1} | {:.1} |",
        size as f64 / 1_048_576.0,
        ms(first),
        ms(pick(0.5)),
        ms(pick(0.99)),
        ms(*times.last().unwrap()),
    );
}
