//! ctxopt's own o200k_base counter (`Tokenizer::O200kBase`) against the crates it replaced,
//! bpe-openai and tiktoken-rs, on the real `tools/list` captures in
//! `fixtures/real-world/tier1-tools-list/`: equal counts, load time, resident memory and
//! throughput; then how counting time grows with one long pathological piece (linear, not
//! quadratic).
//!
//! `cargo bench --bench tokenizers`. Each counter is timed over several passes of the whole
//! corpus after one warm-up pass. Load time is the first construction in this process (for
//! ctxopt, `Tokenizer::warm`: its tables are static, only the regex is compiled); resident
//! memory is the growth of VmRSS across the load, and across the load plus one counting pass
//! (ctxopt's tables become resident page by page as lookups touch them).

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use ctxopt::tokenizer::Tokenizer;

const PASSES: usize = 5;

/// Makes a pathological piece of the given length.
type MakePiece = fn(usize) -> String;

/// One counter under test.
struct Row {
    name: &'static str,
    load: Duration,
    rss_load: f64,
    rss_counted: f64,
    counts: Vec<usize>,
    time: Duration,
}

/// Loads a counter with `load`, then counts every text with `count`.
fn measure<T>(
    name: &'static str,
    texts: &[String],
    load: impl FnOnce() -> T,
    count: impl Fn(&T, &str) -> usize,
) -> Result<Row> {
    let rss = vm_rss()?;
    let start = Instant::now();
    let counter = load();
    let load = start.elapsed();
    let rss_load = vm_rss()? - rss;
    let counts: Vec<usize> = texts.iter().map(|t| count(&counter, t)).collect();
    let rss_counted = vm_rss()? - rss;
    let time = time(|| texts.iter().map(|t| count(&counter, t)).sum());
    Ok(Row {
        name,
        load,
        rss_load,
        rss_counted,
        counts,
        time,
    })
}

fn main() -> Result<()> {
    if !std::env::args().any(|a| a == "--bench") {
        println!("tokenizer benchmark: run it with `cargo bench --bench tokenizers` (skipped under cargo test)");
        return Ok(());
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world/tier1-tools-list");
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

    // Smallest first, so each growth of VmRSS is the counter's own.
    let rows = [
        measure(
            "ctxopt (ours)",
            &texts,
            || Tokenizer::O200kBase.warm(),
            |(), t| Tokenizer::O200kBase.count(t),
        )?,
        measure("bpe-openai 0.3", &texts, bpe_openai::o200k_base, |b, t| {
            b.count(t)
        })?,
        measure(
            "tiktoken-rs 0.12",
            &texts,
            || tiktoken_rs::o200k_base().expect("o200k_base"),
            |b, t| b.encode_ordinary(t).len(),
        )?,
    ];
    let rate = |d: Duration| (bytes * PASSES) as f64 / 1e6 / d.as_secs_f64();

    println!("# o200k_base counters on real tools/list JSON\n");
    println!(
        "{} captures, {:.2} MB, {} o200k_base tokens\n",
        texts.len(),
        bytes as f64 / 1e6,
        rows[0].counts.iter().sum::<usize>()
    );
    println!("| counter | load | resident after load | after counting | throughput | counts |");
    println!("| --- | ---: | ---: | ---: | ---: | --- |");
    for row in &rows {
        let equal = row.counts == rows[2].counts;
        println!(
            "| {} | {:.1} ms | +{:.1} MB | +{:.1} MB | {:.1} MB/s | {} |",
            row.name,
            ms(row.load),
            row.rss_load,
            row.rss_counted,
            rate(row.time),
            if equal {
                "equal to tiktoken-rs"
            } else {
                "DIFFER"
            }
        );
    }
    for row in &rows {
        ensure!(
            row.counts == rows[2].counts,
            "{} disagrees with tiktoken-rs",
            row.name
        );
    }

    println!("\n# One long pathological piece (a single pre-token)\n");
    println!("| piece | length | ctxopt (ours) | MB/s | bpe-openai 0.3 | MB/s | same count |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
    let bpe = bpe_openai::o200k_base();
    let pieces: [(&str, MakePiece); 4] = [
        ("`x` repeated", |len| "x".repeat(len)),
        ("`/` repeated", |len| "/".repeat(len)),
        ("spaces", |len| " ".repeat(len)),
        ("random `a`–`z`", random_letters),
    ];
    for (name, make) in pieces {
        for mb in [1, 4, 16] {
            let text = make(mb << 20);
            let start = Instant::now();
            let ours = Tokenizer::O200kBase.count(&text);
            let ours_time = start.elapsed();
            let start = Instant::now();
            let theirs = bpe.count(&text);
            let theirs_time = start.elapsed();
            let speed = |d: Duration| text.len() as f64 / 1e6 / d.as_secs_f64();
            println!(
                "| {name} | {mb} MB | {:.0} ms | {:.1} | {:.0} ms | {:.1} | {} |",
                ms(ours_time),
                speed(ours_time),
                ms(theirs_time),
                speed(theirs_time),
                ours == theirs
            );
            ensure!(ours == theirs, "{mb} MB of {name}: {ours} vs {theirs}");
        }
    }
    Ok(())
}

/// `len` pseudo-random lowercase letters (xorshift, fixed seed).
fn random_letters(len: usize) -> String {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(b'a' + (state >> 56) as u8 % 26)
        })
        .collect()
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
