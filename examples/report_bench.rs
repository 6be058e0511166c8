//! Benchmark: `ctxopt report` over a generated frame log of about 1 GB, in bounded memory.
//!
//! ```text
//! cargo run --release --example report_bench -- [SIZE_MB] [BOUND_MB]
//! ```
//!
//! Writes a log of SIZE_MB (default 1024) into a temporary directory (see
//! `examples/common/frame_log.rs`). Then it builds the report and prints the time, the
//! throughput and the process's peak resident set size; it exits 1 when the peak exceeds
//! BOUND_MB (default 256).

use std::process::ExitCode;
use std::time::Instant;

use ctxopt::measure::report;

#[path = "common/frame_log.rs"]
mod frame_log;

use frame_log::{generate, peak_rss_mb};

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let size_mb: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1024);
    let bound_mb: f64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(256.0);
    let dir = match tempfile::tempdir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("no temporary directory: {e}");
            return ExitCode::from(2);
        }
    };
    let path = dir.path().join("bench-frame-log.jsonl");
    let started = Instant::now();
    let bytes = match generate(&path, size_mb << 20) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("generating the log failed: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "generated {:.1} MB in {:.1} s (peak RSS so far {:.1} MB)",
        bytes as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        peak_rss_mb(libc::RUSAGE_SELF)
    );
    let started = Instant::now();
    let result = report::collect(std::slice::from_ref(&path));
    let elapsed = started.elapsed().as_secs_f64();
    drop(dir);
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            eprintln!("report failed: {e}");
            return ExitCode::from(2);
        }
    };
    let calls: u64 = report
        .servers
        .iter()
        .flat_map(|s| &s.tools)
        .map(|t| t.calls)
        .sum();
    let peak = peak_rss_mb(libc::RUSAGE_SELF);
    println!(
        "report: {calls} calls, {} unparseable frames, {elapsed:.1} s, {:.1} MB/s, peak RSS {peak:.1} MB (bound {bound_mb} MB)",
        report.anomalies.unparseable_frames,
        bytes as f64 / 1e6 / elapsed
    );
    if peak > bound_mb {
        eprintln!("peak RSS above the bound");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}
