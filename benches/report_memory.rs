//! Benchmark: `ctxopt report` over a generated frame log of about 1 GB, in bounded memory.
//!
//! ```text
//! cargo bench --bench report_memory
//! ```
//!
//! `CTXOPT_BENCH_LOG_MB` sets the log size (default 1024) and `CTXOPT_BENCH_RSS_MB` the bound
//! (default 256). It writes the log into a temporary directory (see
//! `benches/common/frame_log.rs`), builds the report and prints the time, the throughput and
//! the process's peak resident set size; it exits 1 when the peak exceeds the bound.

use std::process::ExitCode;
use std::time::Instant;

use ctxopt::measure::report;

#[path = "common/frame_log.rs"]
mod frame_log;

use frame_log::{env_number, generate, peak_rss_mb};

fn main() -> ExitCode {
    let size_mb = env_number("CTXOPT_BENCH_LOG_MB", 1024.0) as u64;
    let bound_mb = env_number("CTXOPT_BENCH_RSS_MB", 256.0);
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
