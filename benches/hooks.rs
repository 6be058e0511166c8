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
use std::time::{Duration, Instant};

#[path = "common/hook_run.rs"]
mod hook_run;

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");

fn run_hook(dir: &Path, payload: &[u8]) -> (Duration, bool) {
    let started = Instant::now();
    let (child, writer) = hook_run::spawn(CTXOPT, dir, payload);
    let out = child.wait_with_output().expect("wait for the hook");
    writer.join().expect("the payload writer");
    assert!(out.status.success());
    (started.elapsed(), !out.stdout.is_empty())
}

fn main() {
    let runs: usize = std::env::var("CTXOPT_BENCH_HOOK_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(200);
    let real = std::fs::read(hook_run::real_transcript()).unwrap();
    let turn: Vec<u8> = real
        .split_inclusive(|b| *b == b'\n')
        .take(6)
        .flatten()
        .copied()
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let (mut file, size) = hook_run::repeated_transcript(&transcript, 10 * 1024 * 1024);
    let payload = hook_run::prompt_payload(&transcript, dir.path());
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
