//! The baselines of the real-session benchmark, beside strategy B (exact dedupe, then head
//! truncation, in [`strategy`]):
//! - **tail**: the transcript's last N tokens (what a client that drops the oldest turns
//!   keeps);
//! - **head + tail**: the first half of the budget from the transcript's start, the second
//!   half from its end;
//! - **BM25**: the task, then messages and 1,200-character chunks of every other record
//!   ranked by Okapi BM25 against the task, taken best first while they fit (chunks that
//!   share no term with the task are not retrieved). The scores come from the `bm25` crate, a
//!   standard implementation: its English tokenizer (Unicode word segmentation, lowercasing,
//!   NLTK stop words, Snowball stemming), `k1` = 1.2, `b` = 0.75, the mean length fit to the
//!   chunks.
//!
//! The transcript is strategy A's: every record rendered as a block, in time order.

use bm25::{Embedder, EmbedderBuilder, Language, Scorer};

use super::strategy::{self, Block, SEPARATOR};
use crate::records::Records;
use crate::tokenizer::Tokenizer;

/// The size of the chunks BM25 ranks (messages are ranked whole).
pub(crate) const BM25_CHUNK_CHARS: usize = 1200;

/// The transcript's last `budget` tokens.
pub(crate) fn tail(records: &Records, budget: usize, tokenizer: Tokenizer) -> String {
    let transcript = strategy::raw_context(records);
    longest_tail(&transcript, budget, tokenizer).to_string()
}

/// Half the budget from the transcript's head, the rest from its tail (the whole transcript
/// when it fits).
pub(crate) fn head_tail(records: &Records, budget: usize, tokenizer: Tokenizer) -> String {
    const GAP: &str = "\n[…]\n";
    let transcript = strategy::raw_context(records);
    if tokenizer.count(&transcript) <= budget {
        return transcript;
    }
    let room = budget.saturating_sub(tokenizer.count(GAP));
    let head = strategy::longest_head(&transcript, room / 2, tokenizer);
    let rest = &transcript[head.len()..];
    let tail_room = room.saturating_sub(tokenizer.count(head));
    let tail = longest_tail(rest, tail_room, tokenizer);
    let mut out = format!("{head}{GAP}{tail}");
    while tokenizer.count(&out) > budget && !out.is_empty() {
        out.pop();
    }
    out
}

/// The task, then the chunks BM25 ranks highest against it, while they fit.
pub(crate) fn bm25(records: &Records, budget: usize, tokenizer: Tokenizer) -> String {
    let blocks = strategy::blocks(records);
    let (task, rest): (Vec<&Block>, Vec<&Block>) = blocks.iter().partition(|b| b.id == "task");
    let mut chunks: Vec<String> = Vec::new();
    for b in rest {
        let pieces: Vec<&str> = if b.label.starts_with("message") {
            vec![b.body.as_str()]
        } else {
            char_chunks(&b.body, BM25_CHUNK_CHARS)
        };
        for piece in pieces {
            chunks.push(format!("[source: record {}] {}\n{piece}", b.id, b.label));
        }
    }
    let query = task.first().map(|b| b.body.as_str()).unwrap_or_default();
    let scores = bm25_scores(&chunks, query);
    let mut order: Vec<usize> = (0..chunks.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut out = task.first().map(|b| b.text()).unwrap_or_default();
    let mut used = tokenizer.count(&out);
    if used > budget {
        return strategy::longest_head(&out, budget, tokenizer).to_string();
    }
    for i in order.into_iter().filter(|&i| scores[i] > 0.0) {
        let piece = format!("{SEPARATOR}{}", chunks[i]);
        let cost = tokenizer.count(&piece);
        if used + cost <= budget {
            out.push_str(&piece);
            used += cost;
        }
    }
    while tokenizer.count(&out) > budget && !out.is_empty() {
        out.pop();
    }
    out
}

/// The Okapi BM25 score of each of `chunks` for `query` (see the module doc).
fn bm25_scores(chunks: &[String], query: &str) -> Vec<f32> {
    let corpus: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let embedder: Embedder =
        EmbedderBuilder::with_fit_to_corpus(Language::English, &corpus).build();
    let mut scorer = Scorer::<usize>::new();
    for (i, chunk) in corpus.iter().enumerate() {
        scorer.upsert(&i, embedder.embed(chunk));
    }
    let query = embedder.embed(query);
    (0..corpus.len())
        .map(|i| scorer.score(&i, &query).unwrap_or(0.0))
        .collect()
}

/// `text` cut into pieces of at most `size` characters, at line ends where a line allows.
fn char_chunks(text: &str, size: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = text[start..]
            .char_indices()
            .take(size)
            .last()
            .map_or(start, |(i, c)| start + i + c.len_utf8());
        let mut end = end;
        if end < text.len() {
            if let Some(nl) = text[start..end].rfind('\n') {
                if nl > 0 {
                    end = start + nl + 1;
                }
            }
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// The longest suffix of `text` (on a char boundary) with at most `tokens` tokens.
pub(crate) fn longest_tail(text: &str, tokens: usize, tokenizer: Tokenizer) -> &str {
    let suffix = |from: usize| {
        let mut from = from.min(text.len());
        while !text.is_char_boundary(from) {
            from += 1;
        }
        &text[from..]
    };
    // A token is rarely longer than 64 bytes: look at a window of the end that grows until
    // it holds more than `tokens` tokens, then search the start inside it.
    let mut window = tokens.saturating_mul(8).max(64);
    loop {
        if window >= text.len() {
            if tokenizer.count(text) <= tokens {
                return text;
            }
            window = text.len();
            break;
        }
        if tokenizer.count(suffix(text.len() - window)) > tokens {
            break;
        }
        window = window.saturating_mul(2);
    }
    // Search the start between `low` (too much) and `high` (fits).
    let (mut low, mut high) = (text.len() - window, text.len());
    while low + 1 < high {
        let mid = (low + high) / 2;
        if tokenizer.count(suffix(mid)) <= tokens {
            high = mid;
        } else {
            low = mid;
        }
    }
    suffix(high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::parse::parse_records;

    fn sample() -> Records {
        parse_records(
            r#"{"task":"fix the parser panic",
                "messages":[{"id":"m1","role":"user","text":"hello there, general chatter","timestamp":"2026-01-01T00:00:00Z"},
                            {"id":"m2","role":"assistant","text":"the parser panic comes from parse_header","timestamp":"2026-01-01T00:01:00Z"},
                            {"id":"m3","role":"assistant","text":"unrelated remark about the weather today","timestamp":"2026-01-01T00:02:00Z"}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn tail_and_head_tail_fit_and_take_the_ends() {
        let t = Tokenizer::O200kBase;
        let whole = strategy::raw_context(&sample());
        for budget in [0, 5, 20, 40] {
            let tail = tail(&sample(), budget, t);
            assert!(t.count(&tail) <= budget);
            assert!(whole.ends_with(&tail));
            let ht = head_tail(&sample(), budget, t);
            assert!(t.count(&ht) <= budget, "{budget}: {ht:?}");
        }
        let ht = head_tail(&sample(), 30, t);
        assert!(ht.starts_with("[source: record task]"), "{ht}");
        assert!(ht.ends_with("weather today"), "{ht}");
        assert_eq!(head_tail(&sample(), 10_000, t), whole);
    }

    #[test]
    fn bm25_takes_the_task_then_the_best_match() {
        let t = Tokenizer::O200kBase;
        let out = bm25(&sample(), 40, t);
        assert!(out.starts_with("[source: record task] task\nfix the parser panic"));
        assert!(out.contains("parse_header"), "{out}");
        assert!(!out.contains("weather"), "{out}");
        assert!(t.count(&out) <= 40);
    }

    #[test]
    fn char_chunks_cover_the_text_at_line_ends() {
        let text = "abc\ndef\nghi";
        assert_eq!(char_chunks(text, 5), ["abc\n", "def\n", "ghi"]);
        assert_eq!(char_chunks("ééé", 2), ["éé", "é"]);
    }
}
