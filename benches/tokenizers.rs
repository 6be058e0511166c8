//! The tokenizer-crate comparison behind `Tokenizer::O200kBase`: bpe-openai (what ctxopt uses)
//! versus tiktoken-rs, on the real `tools/list` captures in
//! `../shared/real-world/tier1-tools-list/`: equal counts, throughput and vocabulary load time.
//!
//! `cargo bench --bench tokenizers`. Each crate is timed over several passes of the whole
//! corpus after one warm-up pass; load time is the first construction in this process, and
//! resident memory the growth of VmRSS across it.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};

const PASSES: usize = 5;

fn main() -> Result<()> {
    if !std::env::args().any(|a| a == "--bench") {
        println!("tokenizer benchmark: run it with `cargo bench --bench tokenizers` (skipped under cargo test)");
        return Ok(());
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/real-world/tier1-tools-list");
    let mut texts = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| format!("read {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for path in entries
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
    {
        texts.extend(std::fs::read_to_string(path)?.lines().map(str::to_owned));
    }
    let bytes: usize = texts.iter().map(String::len).sum();
    ensure!(bytes > 0, "no captures in {}", dir.display());

    let rss = vm_rss()?;
    let start = Instant::now();
    let bpe = bpe_openai::o200k_base();
    let bpe_load = start.elapsed();
    let bpe_rss = vm_rss()? - rss;
    let rss = vm_rss()?;
    let start = Instant::now();
    let tiktoken = tiktoken_rs::o200k_base()?;
    let tiktoken_load = start.elapsed();
    let tiktoken_rss = vm_rss()? - rss;

    let bpe_counts: Vec<usize> = texts.iter().map(|t| bpe.count(t)).collect();
    let tiktoken_counts: Vec<usize> = texts
        .iter()
        .map(|t| tiktoken.encode_ordinary(t).len())
        .collect();
    let equal = bpe_counts == tiktoken_counts;
    let bpe_time = time(|| texts.iter().map(|t| bpe.count(t)).sum());
    let tiktoken_time = time(|| {
        texts
            .iter()
            .map(|t| tiktoken.encode_ordinary(t).len())
            .sum()
    });
    let rate = |d: Duration| (bytes * PASSES) as f64 / 1e6 / d.as_secs_f64();

    println!("# Tokenizer crates on real tools/list JSON\n");
    println!(
        "{} captures, {:.2} MB, {} o200k_base tokens; counts equal: {equal}\n",
        texts.len(),
        bytes as f64 / 1e6,
        bpe_counts.iter().sum::<usize>()
    );
    println!("| crate | load o200k_base | resident after load | throughput |");
    println!("| --- | ---: | ---: | ---: |");
    println!(
        "| bpe-openai 0.3 | {:.0} ms | +{bpe_rss:.1} MB | {:.1} MB/s |",
        ms(bpe_load),
        rate(bpe_time)
    );
    println!(
        "| tiktoken-rs 0.12 | {:.0} ms | +{tiktoken_rss:.1} MB | {:.1} MB/s |",
        ms(tiktoken_load),
        rate(tiktoken_time)
    );
    ensure!(
        equal,
        "the crates disagree: {bpe_counts:?} vs {tiktoken_counts:?}"
    );
    Ok(())
}

/// Runs `count` once to warm up, then `PASSES` times, and returns the time of those passes.
fn time(count: impl Fn() -> usize) -> Duration {
    std::hint::black_box(count());
    let start = Instant::now();
    for _ in 0..PASSES {
        std::hint::black_box(count());
    }
    start.elapsed()
}

/// This process's resident memory, in MB.
fn vm_rss() -> Result<f64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kb = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().strip_suffix(" kB"))
        .context("VmRSS in /proc/self/status")?;
    Ok(kb.parse::<f64>()? / 1024.0)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
