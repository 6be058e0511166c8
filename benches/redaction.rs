//! What redaction adds to the tap's work per frame, in one run: `cargo bench --bench
//! redaction`.
//!
//! The tap's per-frame work is accounting (classification, pairing, `o200k_base` token
//! counts, `_meta` stripping) and serializing the log line. This benchmark does exactly
//! that for a mix of frames — the real tool lists of `fixtures/real-world/tier1-tools-list/`
//! and `tools/call` requests and results of a few KiB, one in twenty holding a secret —
//! once without and once with [`redact_line`], in alternating blocks so both see the same
//! machine, and prints the thread CPU time per frame of each and their ratio.
//! `docs/benchmarks.md` records a run. `CTXOPT_BENCH_ROUNDS` sets the rounds (default 20).
//!
//! A second table shows how the rules' search grows with the input, beside the search of
//! whole texts it replaced ([`Matcher::find_by_whole_text_search`]): the real tool lists
//! repeated, and texts built against the search at keyword hits (key names made of keywords,
//! hits with no value), at three sizes each.

use std::path::Path;
use std::time::{Instant, SystemTime};

use ctxopt::framelog::accounting::{Accountant, Tapped};
use ctxopt::framelog::writer::redact_line;
use ctxopt::framelog::{Direction, LogLine};
use ctxopt::redact::matcher::Matcher;
use ctxopt::redact::{matcher, Finding, Key, Redactor};
use ctxopt::tokenizer::Tokenizer;

fn thread_cpu_seconds() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// The frames of one round: (direction, bytes with line ending).
fn frames() -> Vec<(Direction, Vec<u8>)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world/tier1-tools-list");
    let mut out = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("the real-world tool lists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines().filter(|l| !l.is_empty()) {
            out.push((Direction::S2c, format!("{line}\n").into_bytes()));
        }
    }
    let body: String = (0..60)
        .map(|i| format!("line {i}: fn handler_{i}(req: Request) -> Response {{ route(req) }}\n"))
        .collect();
    for id in 0..200u32 {
        let secret = if id % 20 == 0 {
            format!(
                "token = gh{}_{}\n",
                "p", "k3J9vQ2mXw8LrT5yZb1NcF7hD4sG6aP0eUiO"
            )
        } else {
            String::new()
        };
        let request = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "read_file", "arguments": {"path": format!("src/f{id}.rs")}}});
        let result = serde_json::json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": format!("{secret}{body}")}]}});
        out.push((Direction::C2s, format!("{request}\n").into_bytes()));
        out.push((Direction::S2c, format!("{result}\n").into_bytes()));
    }
    out
}

/// One round of the tap's work over `frames`; returns thread CPU seconds.
fn round(frames: &[(Direction, Vec<u8>)], redactor: Option<&Redactor>, sink: &mut Vec<u8>) -> f64 {
    let mut accountant = Accountant::new(Tokenizer::O200kBase);
    let start = thread_cpu_seconds();
    for (dir, bytes) in frames {
        let frame = accountant.frame(Tapped {
            dir: *dir,
            bytes: bytes.clone(),
            at: SystemTime::now(),
            instant: Instant::now(),
        });
        let line = LogLine::Frame(Box::new(frame));
        let redacted = redactor.and_then(|r| redact_line(r, &line));
        sink.clear();
        serde_json::to_writer(&mut *sink, redacted.as_ref().unwrap_or(&line)).unwrap();
    }
    thread_cpu_seconds() - start
}

/// Thread CPU seconds of the fastest of three runs of `search` over `text`.
fn search_seconds(text: &[u8], search: fn(&Matcher, &[u8]) -> Vec<Finding>) -> f64 {
    (0..3)
        .map(|_| {
            let start = thread_cpu_seconds();
            std::hint::black_box(search(matcher(), text));
            thread_cpu_seconds() - start
        })
        .fold(f64::INFINITY, f64::min)
}

/// A text of about the given size.
type Input<'a> = Box<dyn Fn(usize) -> Vec<u8> + 'a>;

/// The search at keyword hits beside the search of whole texts, by input and size.
fn growth(frames: &[(Direction, Vec<u8>)]) {
    let lists: Vec<u8> = frames
        .iter()
        .filter(|(dir, _)| *dir == Direction::S2c)
        .take(12)
        .flat_map(|(_, b)| b.iter().copied())
        .collect();
    let inputs: [(&str, Input); 3] = [
        (
            "real tool lists, repeated",
            Box::new(|n| lists.iter().copied().cycle().take(n).collect()),
        ),
        (
            "one key name of keywords (`tokentoken…=value1234`)",
            Box::new(|n| format!("{}=value1234", "token".repeat(n / 5)).into_bytes()),
        ),
        (
            "hits with no value (`\"token\": ` repeated)",
            Box::new(|n| "\"token\": ".repeat(n / 9).into_bytes()),
        ),
    ];
    println!();
    println!("| input | bytes | at keyword hits | whole-text search | ratio |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (name, make) in &inputs {
        for size in [256 << 10, 1 << 20, 4 << 20] {
            let text = make(size);
            let hits = search_seconds(&text, Matcher::find);
            let whole = search_seconds(&text, Matcher::find_by_whole_text_search);
            println!(
                "| {name} | {} | {:.2} ms | {:.2} ms | {:.3} |",
                text.len(),
                hits * 1e3,
                whole * 1e3,
                hits / whole
            );
        }
    }
}

fn main() {
    let rounds: usize = std::env::var("CTXOPT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let frames = frames();
    let bytes: usize = frames.iter().map(|(_, b)| b.len()).sum();
    let redactor = Redactor::with_key(Key::from_bytes([1; 32]));
    Tokenizer::O200kBase.warm();
    let mut sink = Vec::new();
    // Warm up both paths (the rule table compiles on first use).
    round(&frames, Some(&redactor), &mut sink);
    let (mut plain, mut redacting) = (Vec::new(), Vec::new());
    for i in 0..rounds {
        // Alternate which goes first, so neither always runs on a warmer cache.
        if i % 2 == 0 {
            plain.push(round(&frames, None, &mut sink));
            redacting.push(round(&frames, Some(&redactor), &mut sink));
        } else {
            redacting.push(round(&frames, Some(&redactor), &mut sink));
            plain.push(round(&frames, None, &mut sink));
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (plain, redacting) = (median(&mut plain), median(&mut redacting));
    let per_frame = |s: f64| s * 1e6 / frames.len() as f64;
    println!("| frames per round | bytes per round | tap CPU per frame | with redaction | ratio |");
    println!("| --- | --- | --- | --- | --- |");
    println!(
        "| {} | {} | {:.1} µs | {:.1} µs | {:.3} |",
        frames.len(),
        bytes,
        per_frame(plain),
        per_frame(redacting),
        redacting / plain
    );
    growth(&frames);
}
