//! Benchmark: the peak resident memory of `ctxopt ingest` on a generated frame log of about
//! 1 GB, which must stay under 100 MB (the log streams by a line at a time).
//!
//! ```text
//! cargo bench --bench ingest_memory
//! ```
//!
//! `CTXOPT_BENCH_LOG_MB` sets the log size (default 1024) and `CTXOPT_BENCH_RSS_MB` the bound
//! (default 100). The log (see `benches/common/frame_log.rs`) and the store are written in a
//! temporary directory and removed afterwards. The peak is the child's `ru_maxrss`, read with
//! `getrusage(RUSAGE_CHILDREN)` once it has been waited for.

use std::process::{Command, ExitCode};
use std::time::Instant;

#[path = "common/frame_log.rs"]
mod frame_log;

use frame_log::{env_number, generate, peak_rss_mb};

fn main() -> ExitCode {
    let size_mb = env_number("CTXOPT_BENCH_LOG_MB", 1024.0) as u64;
    let bound_mb = env_number("CTXOPT_BENCH_RSS_MB", 100.0);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let log = dir.path().join("bench-frame-log.jsonl");
    let started = Instant::now();
    let bytes = generate(&log, size_mb << 20).expect("generating the log");
    println!(
        "generated {:.1} MB in {:.1} s",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .arg("ingest")
        .arg("--store")
        .arg(dir.path().join("store.sqlite3"))
        .arg("--workspace")
        .arg(dir.path())
        .arg(&log)
        .env_remove("CTXOPT_LOG")
        .output()
        .expect("running ctxopt ingest");
    let elapsed = started.elapsed().as_secs_f64();
    let peak = peak_rss_mb(libc::RUSAGE_CHILDREN);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        eprintln!("ctxopt ingest failed ({}): {stderr}", out.status);
        return ExitCode::from(2);
    }
    println!(
        "ingest: {:.1} MB in {elapsed:.1} s ({:.1} MB/s), peak RSS {peak:.1} MB (bound {bound_mb} MB); {}",
        bytes as f64 / 1e6,
        bytes as f64 / 1e6 / elapsed,
        stderr.trim()
    );
    if peak > bound_mb {
        eprintln!("peak RSS above the bound");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
