//! How much of one result's text the store keeps.
//!
//! The frame log keeps every frame whole; the store feeds the optimizer, which never puts
//! megabytes of one output into a context. A text block longer than [`STORED_TEXT_LIMIT`]
//! is stored as its head and its tail around a marker line that says how many bytes were
//! left out and where the whole text is. This also bounds the proxy's memory while it
//! ingests a huge result (documented in `docs/injected-tools.md`).

use std::borrow::Cow;

/// The most bytes of one text the store keeps (4 MiB): half from the start, half from the end.
pub(crate) const STORED_TEXT_LIMIT: usize = 4 * 1024 * 1024;

/// How far a cut may move to land on a line end instead of inside a line.
const LINE_SEARCH: usize = 4096;

/// `text` as the store keeps it: unchanged up to [`STORED_TEXT_LIMIT`] bytes, else its head
/// and tail around a marker line.
pub(crate) fn cap(text: &str) -> Cow<'_, str> {
    cap_at(text, STORED_TEXT_LIMIT)
}

fn cap_at(text: &str, limit: usize) -> Cow<'_, str> {
    if text.len() <= limit {
        return Cow::Borrowed(text);
    }
    let half = limit / 2;
    let mut head_end = half;
    while !text.is_char_boundary(head_end) {
        head_end -= 1;
    }
    let near_head = head_end.saturating_sub(LINE_SEARCH);
    if let Some(nl) = text.as_bytes()[near_head..head_end]
        .iter()
        .rposition(|&b| b == b'\n')
    {
        head_end = near_head + nl + 1;
    }
    let mut tail_start = text.len() - half;
    while !text.is_char_boundary(tail_start) {
        tail_start += 1;
    }
    let near_tail = (tail_start + LINE_SEARCH).min(text.len());
    if let Some(nl) = text.as_bytes()[tail_start..near_tail]
        .iter()
        .position(|&b| b == b'\n')
    {
        tail_start += nl + 1;
    }
    let (head, tail) = (&text[..head_end], &text[tail_start..]);
    let left_out = text.len() - head.len() - tail.len();
    let newline = if head.ends_with('\n') { "" } else { "\n" };
    Cow::Owned(format!(
        "{head}{newline}[ctxopt: {left_out} bytes left out of the store here; \
         the frame log holds the whole result]\n{tail}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_kept_as_is() {
        assert!(matches!(cap_at("abc\ndef", 7), Cow::Borrowed("abc\ndef")));
    }

    #[test]
    fn long_text_keeps_head_and_tail_at_line_ends() {
        let text: String = (0..1000).map(|i| format!("line {i:04}\n")).collect();
        let capped = cap_at(&text, 2000);
        assert!(capped.len() < 2200, "{}", capped.len());
        assert!(capped.starts_with("line 0000\n"));
        assert!(capped.ends_with("line 0999\n"));
        let marker = capped
            .lines()
            .find(|l| l.starts_with("[ctxopt: "))
            .expect("a marker line");
        let kept: usize = capped.len() - marker.len() - 1;
        assert_eq!(
            marker,
            format!(
                "[ctxopt: {} bytes left out of the store here; the frame log holds the whole result]",
                text.len() - kept
            )
        );
        // Every kept line is a whole line of the original.
        assert!(capped
            .lines()
            .filter(|l| !l.starts_with("[ctxopt"))
            .all(|l| l.len() == 9 && l.starts_with("line ")));
    }

    #[test]
    fn one_long_line_of_multibyte_text_is_cut_on_char_boundaries() {
        let text = "é".repeat(5000);
        let capped = cap_at(&text, 1001);
        assert!(capped.len() < 1200);
        assert!(capped.starts_with('é') && capped.ends_with('é'));
    }
}
