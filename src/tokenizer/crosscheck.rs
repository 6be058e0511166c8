//! Our counter against tiktoken-rs (the reference): the vocabularies rank by rank, and token
//! counts on real traffic, the optimizer's scenarios, tricky generated strings and long runs.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use proptest::prelude::*;
use tiktoken_rs::CoreBPE;

use super::merge::{self, LONG_PIECE};
use super::vocab::{self, Vocab};
use super::{Encoding, Tokenizer, CL100K_BASE, O200K_BASE};

static TIKTOKEN_O200K: LazyLock<CoreBPE> = LazyLock::new(|| tiktoken_rs::o200k_base().unwrap());
static TIKTOKEN_CL100K: LazyLock<CoreBPE> = LazyLock::new(|| tiktoken_rs::cl100k_base().unwrap());

/// Both encodings, each with its reference.
fn encodings() -> [(&'static Encoding, &'static CoreBPE); 2] {
    [
        (&O200K_BASE, &TIKTOKEN_O200K),
        (&CL100K_BASE, &TIKTOKEN_CL100K),
    ]
}

fn check_vocab(ours: &Vocab, reference: &CoreBPE) {
    assert!(ours.len() > 100_000);
    let mut all = std::collections::HashSet::new();
    for rank in 0..ours.len() as u32 {
        let bytes = reference.decode_bytes(&[rank]).unwrap();
        assert_eq!(ours.token(rank), bytes, "bytes of rank {rank}");
        assert_eq!(ours.rank(&bytes), Some(rank), "rank of {bytes:?}");
        all.insert(bytes);
    }
    // The first rank past ours is not an ordinary token: missing, or a special token.
    let next = ours.len() as u32;
    if let Ok(bytes) = reference.decode_bytes(&[next]) {
        assert!(bytes.starts_with(b"<|"), "rank {next} is {bytes:?}");
    }
    // Lookups of near misses: each token without its first byte, and with a byte appended.
    let mut misses = 0;
    for token in &all {
        for candidate in [token[1..].to_vec(), [&token[..], b"q"].concat()] {
            let known = all.contains(&candidate);
            assert_eq!(ours.rank(&candidate).is_some(), known, "{candidate:?}");
            misses += usize::from(!known);
        }
    }
    assert!(
        misses > 100_000,
        "only {misses} lookups of bytes that are no token"
    );
}

#[test]
fn o200k_vocabulary_is_tiktokens_rank_by_rank() {
    check_vocab(&vocab::O200K_BASE, &TIKTOKEN_O200K);
}

#[test]
fn cl100k_vocabulary_is_tiktokens_rank_by_rank() {
    check_vocab(&vocab::CL100K_BASE, &TIKTOKEN_CL100K);
}

/// The first characters of `text`, for a failure message.
fn head(text: &str) -> String {
    text.chars().take(60).collect()
}

#[track_caller]
fn assert_counts_equal(text: &str, what: &dyn std::fmt::Display) {
    for (ours, reference) in encodings() {
        assert_eq!(
            ours.count(text),
            reference.encode_ordinary(text).len(),
            "{what}: {:?}…",
            head(text)
        );
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The files in `dir` (relative to the repository) whose names end with `suffix`, sorted.
fn files(dir: &str, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(repo().join(dir))
        .unwrap_or_else(|e| panic!("{dir}: {e}"))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no {suffix} files in {dir}");
    files
}

/// Every string anywhere in a JSON value.
fn strings(value: &serde_json::Value, out: &mut Vec<String>) {
    match value {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(items) => items.iter().for_each(|v| strings(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| strings(v, out)),
        _ => {}
    }
}

/// The texts of the real corpus: whole lines and frame texts of the recorded logs, the real
/// `tools/list` captures, and every string of the optimizer's scenarios.
fn corpus() -> Vec<(String, String)> {
    let mut texts = Vec::new();
    for path in files("frame-logs", ".jsonl") {
        for (n, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            let at = format!("{}:{}", path.display(), n + 1);
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(raw) = value["raw"].as_str() {
                texts.push((format!("{at} raw"), raw.to_owned()));
            }
            texts.push((at, line.to_owned()));
        }
    }
    for path in files("fixtures/real-world/tier1-tools-list", ".jsonl") {
        for (n, line) in std::fs::read_to_string(&path).unwrap().lines().enumerate() {
            texts.push((format!("{}:{}", path.display(), n + 1), line.to_owned()));
        }
    }
    for path in files("fixtures/scenarios", ".json") {
        let value: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let mut found = Vec::new();
        strings(&value, &mut found);
        texts.extend(found.into_iter().map(|s| (path.display().to_string(), s)));
    }
    texts
}

#[test]
fn counts_equal_tiktoken_on_the_real_corpus() {
    let texts = corpus();
    assert!(texts.len() > 500, "only {} texts", texts.len());
    for (what, text) in &texts {
        assert_counts_equal(text, what);
    }
}

#[test]
fn backtracking_agrees_with_the_scan_on_every_piece_of_the_corpus() {
    let mut parts = Vec::new();
    let mut compared = 0;
    for (_, text) in corpus() {
        for (encoding, _) in encodings() {
            for piece in encoding.pretokenizer.split(&text) {
                let piece = piece.as_bytes();
                if piece.len() < 2 || piece.len() >= LONG_PIECE {
                    continue;
                }
                let scan = merge::count_by_scan(encoding.vocab, piece, &mut parts);
                let backtracking = merge::count_by_backtracking(encoding.vocab, piece);
                assert_eq!(scan, backtracking, "{:?}", String::from_utf8_lossy(piece));
                compared += usize::from(scan > 1);
            }
        }
    }
    assert!(
        compared > 1000,
        "only {compared} pieces of more than one token"
    );
}

/// Deterministic pseudo-random bytes (xorshift).
fn noise(len: usize) -> Vec<u8> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 56) as u8
        })
        .collect()
}

#[test]
fn counts_equal_tiktoken_on_long_runs() {
    use base64::Engine as _;
    const LEN: usize = 100_000;
    let letters: String = noise(LEN)
        .iter()
        .map(|b| char::from(b'a' + b % 26))
        .collect();
    let one_piece = [
        "x".repeat(LEN),
        "/".repeat(LEN),
        " ".repeat(LEN),
        "ab".repeat(LEN / 2),
        letters,
    ];
    for run in &one_piece {
        let longest = O200K_BASE.pretokenizer.split(run).map(str::len).max();
        assert!(
            longest >= Some(LEN - 1),
            "{:?}… should be one long piece",
            head(run)
        );
        assert_counts_equal(run, &format!("{:?}…", head(run)));
    }
    let blob = base64::engine::general_purpose::STANDARD.encode(noise(LEN * 3 / 4));
    assert_counts_equal(&format!("{{\"data\":\"{blob}\"}}"), &"a base64 blob");
}

/// Fragments that exercise every branch of the split patterns.
const ALPHABET: &[&str] = &[
    " ", "  ", "\t", "\n", "\r\n", "\r", "\u{b}", "\u{c}", "\u{85}", "\u{a0}", "\u{2028}",
    "\u{3000}", "'", "'s", "'S", "'t", "'T", "'re", "'RE", "'ve", "'Ve", "'m", "'M", "'ll", "'LL",
    "'d", "'D", "a", "z", "x", "hello", "É", "A", "Z", "WORLD", "é", "σ", "Σ", "ǅ", "ᾈ", "ʰ", "ー",
    "中", "文", "あ", "א", "\u{301}", "\u{308}", "\u{20dd}", "0", "7", "123", "٣", "²", "Ⅻ", "〇",
    "😀", "👍🏽", "\u{200d}", "🇫🇷", ".", ",", "!", "?", "\"", "{", "}", "[", "/", "//", "\\", "-",
    "_", ":", "#", "@", "€", "\u{fffd}", "\u{0}",
];

proptest! {
    // Each case is up to 2,000 bytes through both counters and both references.
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn counts_equal_tiktoken_on_long_single_pieces(
        (alphabet, picks) in (0..LONG_ALPHABETS.len(), prop::collection::vec(any::<prop::sample::Index>(), LONG_PIECE..2_000))
    ) {
        let alphabet = LONG_ALPHABETS[alphabet];
        let text: String = picks.iter().map(|i| alphabet[i.index(alphabet.len())]).collect();
        assert_counts_equal(&text, &"a long piece");
    }
}

/// Alphabets whose strings are one long piece: lowercase letters, punctuation, spaces.
const LONG_ALPHABETS: &[&[char]] = &[
    &['a', 'b', 'e', 'n', 's', 't', 'x', 'q'],
    &['x', 'y'],
    &['/', '.', '-', '=', '*', '#', '"', '{'],
    &[' ', '\t'],
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn counts_equal_tiktoken_on_tricky_strings(
        fragments in prop::collection::vec(prop::sample::select(ALPHABET), 0..48)
    ) {
        let text = fragments.concat();
        assert_counts_equal(&text, &"generated");
    }

    #[test]
    fn counts_equal_tiktoken_on_arbitrary_strings(text in any::<String>()) {
        assert_counts_equal(&text, &"arbitrary");
    }
}

#[test]
fn the_public_counter_is_this_one() {
    let text = "{\"jsonrpc\":\"2.0\",\"result\":{\"text\":\"héllo wörld 😀 \\n  fn main() {}\"}}";
    assert_eq!(Tokenizer::O200kBase.count(text), O200K_BASE.count(text));
    assert_eq!(Tokenizer::Cl100kBase.count(text), CL100K_BASE.count(text));
    assert_ne!(O200K_BASE.count(text), 0);
}
