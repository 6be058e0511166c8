//! The text of a `tools/call` result as compaction and `get_result` see it: the text of its
//! `text` content blocks, in order, joined by one `\n`, and that text's lines.

use serde_json::Value;

use crate::tokenizer::Tokenizer;

/// The text of the result's `text` blocks joined by `\n`; `None` when it has none.
pub(crate) fn result_text(result: &Value) -> Option<String> {
    let texts: Vec<&str> = result
        .get("content")?
        .as_array()?
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}

/// The lines of `text`, without their `\n`; line 1 is the first. A final `\n` ends the last
/// line rather than starting an empty one.
pub(crate) fn lines(text: &str) -> Vec<&str> {
    let body = text.strip_suffix('\n').unwrap_or(text);
    body.split('\n').collect()
}

/// The byte offset in `text` where line `n` (1-based) starts; `text.len()` past the end.
pub(crate) fn line_start(text: &str, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    memchr::memchr_iter(b'\n', text.as_bytes())
        .nth(n - 2)
        .map_or(text.len(), |i| i + 1)
}

/// Whether `text` counts more than `limit` tokens. A long text is first counted by prefixes
/// (eight bytes per token of the limit, then four times longer each time), so that a result
/// far over the limit is not counted whole: text that packs many bytes into a token (a run
/// of one character) is decided by a longer prefix, never by the whole.
pub(crate) fn exceeds(text: &str, limit: usize, tokenizer: Tokenizer) -> bool {
    // A token is at least one byte.
    if text.len() <= limit {
        return false;
    }
    let mut probe_len = limit.saturating_mul(8);
    while probe_len < text.len() {
        let probe = floor_char_boundary(text, probe_len);
        let cut = text[..probe].rfind('\n').map_or(probe, |i| i + 1);
        if tokenizer.count(&text[..cut]) > limit {
            return true;
        }
        probe_len = probe_len.saturating_mul(4);
    }
    tokenizer.count(text) > limit
}

/// The largest char boundary of `text` at or below `at`.
pub(crate) fn floor_char_boundary(text: &str, at: usize) -> usize {
    if at >= text.len() {
        return text.len();
    }
    (0..=at)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_text_is_the_text_blocks_joined() {
        let result = json!({"content": [
            {"type": "text", "text": "a\nb"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "c"}
        ]});
        assert_eq!(result_text(&result).unwrap(), "a\nb\nc");
        assert_eq!(result_text(&json!({"content": []})), None);
    }

    #[test]
    fn lines_and_their_starts_agree() {
        let text = "one\ntwo\n\nfour\n";
        assert_eq!(lines(text), vec!["one", "two", "", "four"]);
        assert_eq!(&text[line_start(text, 2)..line_start(text, 3)], "two\n");
        assert_eq!(line_start(text, 1), 0);
        assert_eq!(line_start(text, 5), text.len());
        assert_eq!(line_start(text, 99), text.len());
        assert_eq!(lines("x"), vec!["x"]);
    }

    #[test]
    fn exceeding_is_decided_by_exact_counts() {
        let t = Tokenizer::O200kBase;
        let text = "word ".repeat(1000);
        let n = t.count(&text);
        assert!(exceeds(&text, n - 1, t));
        assert!(!exceeds(&text, n, t));
        // Long enough that the prefix alone decides.
        let long = "alpha beta gamma\n".repeat(10_000);
        assert!(exceeds(&long, 100, t));
        // One run of a character packs many bytes into a token: a longer prefix decides,
        // and the answer is the whole count's.
        let run = "x".repeat(200_000);
        let n = t.count(&run);
        assert!(n > 1000, "{n}");
        assert!(exceeds(&run, n / 4, t));
        assert!(exceeds(&run, n - 1, t));
        assert!(!exceeds(&run, n, t));
    }
}
