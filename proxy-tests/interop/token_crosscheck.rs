//! Our `o200k_base` counts against an independent implementation (npm `gpt-tokenizer`) on real
//! frames: the tier-1 `tools/list` captures and every frame of the recorded logs in
//! `frame-logs/`, plus a few strings that stress pre-tokenization.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxopt::framelog::LogLine;
use ctxopt::tokenizer::Tokenizer;

use super::peers::Peers;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn jsonl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// The sample: every tier-1 capture line, every frame text of the recorded logs, and edge cases.
fn sample() -> Vec<String> {
    let mut texts = Vec::new();
    let tier1 = repo().join("fixtures/real-world/tier1-tools-list");
    for file in jsonl_files(&tier1) {
        let text = std::fs::read_to_string(&file).expect("capture");
        texts.extend(text.lines().map(str::to_owned));
    }
    let captures = texts.len();
    assert!(
        captures >= 12,
        "expected the tier-1 captures in {}",
        tier1.display()
    );
    for file in jsonl_files(&repo().join("frame-logs")) {
        let text = std::fs::read_to_string(&file).expect("frame log");
        for line in text.lines() {
            if let LogLine::Frame(frame) = serde_json::from_str(line).expect("a log line") {
                texts.extend(frame.raw);
            }
        }
    }
    assert!(
        texts.len() > captures + 50,
        "expected the recorded frame logs in frame-logs/ ({} frames found)",
        texts.len() - captures
    );
    texts.extend(
        [
            "",
            "<|endoftext|> is plain text here",
            "    indented\n\n\n\ttabs\r\n",
            "12345678901234567890 3.14159e-10",
            "Grüße, 世界! 😀👍🏽 — «quotes» ﬁ",
            "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        ]
        .map(str::to_owned),
    );
    texts
}

#[test]
fn o200k_counts_equal_gpt_tokenizer_on_real_frames() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let texts = sample();
    let tmp = tempfile::tempdir().expect("tempdir");
    let input = tmp.path().join("texts.json");
    std::fs::write(&input, serde_json::to_vec(&texts).expect("json")).expect("write sample");
    let output = Command::new("node")
        .arg(peers.token_counter())
        .arg(&input)
        .output()
        .expect("run count_tokens.mjs");
    assert!(
        output.status.success(),
        "count_tokens.mjs failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let theirs: Vec<usize> =
        serde_json::from_slice(&output.stdout).expect("a JSON array of counts");
    let ours: Vec<usize> = texts
        .iter()
        .map(|t| Tokenizer::O200kBase.count(t))
        .collect();
    assert_eq!(ours.len(), theirs.len());
    let differing: Vec<(usize, usize, usize)> = ours
        .iter()
        .zip(&theirs)
        .enumerate()
        .filter(|(_, (a, b))| a != b)
        .map(|(i, (a, b))| (i, *a, *b))
        .collect();
    assert!(
        differing.is_empty(),
        "(index, ours, gpt-tokenizer) differ on {} of {} texts: {differing:?}",
        differing.len(),
        texts.len()
    );
    assert!(
        ours.iter().sum::<usize>() > 100_000,
        "the sample is real-sized"
    );
}
