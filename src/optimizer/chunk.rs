//! Cutting unstructured text (messages, tool output) into fragments.
//!
//! Text is cut at blank lines into paragraphs; a paragraph longer than
//! [`MAX_CHUNK_LINES`] lines or [`MAX_CHUNK_BYTES`] bytes is cut at line ends, and a single
//! line longer than that at a whitespace (or, failing that, a character boundary). With
//! `pack`, neighbouring short paragraphs share a chunk up to the same limits. Spans never
//! include leading or trailing blank lines.

use std::ops::Range;

/// The most lines a chunk holds.
pub(crate) const MAX_CHUNK_LINES: usize = 24;
/// The most bytes a chunk holds (a single longer line is cut).
pub(crate) const MAX_CHUNK_BYTES: usize = 2048;

/// Cuts `text` into chunk spans, in order. Empty or blank text gives no chunk.
pub(crate) fn chunks(text: &str, pack: bool) -> Vec<Range<usize>> {
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut current: Option<(Range<usize>, usize)> = None; // span, lines
    let mut after_blank = false;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if body.trim().is_empty() {
            after_blank = true;
            continue;
        }
        for piece in split_long_line(start, body) {
            let fits = |span: &Range<usize>, lines: usize| {
                lines < MAX_CHUNK_LINES && piece.end - span.start <= MAX_CHUNK_BYTES
            };
            current = match current.take() {
                Some((span, lines)) if (!after_blank || pack) && fits(&span, lines) => {
                    Some((span.start..piece.end, lines + 1))
                }
                Some((span, _)) => {
                    out.push(span);
                    Some((piece.clone(), 1))
                }
                None => Some((piece.clone(), 1)),
            };
            after_blank = false;
        }
    }
    if let Some((span, _)) = current {
        out.push(span);
    }
    out
}

/// Cuts a unified diff into chunk spans, in order: a chunk per hunk (the file header lines
/// before the first hunk go with it), a hunk longer than [`MAX_CHUNK_LINES`] lines or
/// [`MAX_CHUNK_BYTES`] bytes cut at line ends (a single longer line as [`chunks`] cuts it).
/// Blank lines are kept inside a chunk: in a diff they are context. A diff that fits one
/// chunk is one chunk, as before; a big one no longer has to fit the budget whole to be shown.
pub(crate) fn diff_chunks(text: &str) -> Vec<Range<usize>> {
    let text_end = text.trim_end().len();
    let mut out: Vec<Range<usize>> = Vec::new();
    let mut current: Option<(Range<usize>, usize, bool)> = None; // span, lines, has a hunk
    let mut pos = 0;
    for line in text[..text_end].split_inclusive('\n') {
        let start = pos;
        pos += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        let hunk = body.starts_with("@@");
        for piece in split_long_line(start, body) {
            current = match current.take() {
                Some((span, lines, has_hunk))
                    if !(hunk && has_hunk)
                        && lines < MAX_CHUNK_LINES
                        && piece.end - span.start <= MAX_CHUNK_BYTES =>
                {
                    Some((span.start..piece.end, lines + 1, has_hunk || hunk))
                }
                Some((span, _, _)) => {
                    out.push(span);
                    Some((piece.clone(), 1, hunk))
                }
                None => Some((piece.clone(), 1, hunk)),
            };
        }
    }
    if let Some((span, _, _)) = current {
        out.push(span);
    }
    out
}

/// Cuts one line (at byte offset `start`) into pieces of at most [`MAX_CHUNK_BYTES`].
fn split_long_line(start: usize, line: &str) -> Vec<Range<usize>> {
    if line.len() <= MAX_CHUNK_BYTES {
        return std::iter::once(start..start + line.len()).collect();
    }
    let mut pieces = Vec::new();
    let mut from = 0;
    while line.len() - from > MAX_CHUNK_BYTES {
        let mut cut = from + MAX_CHUNK_BYTES;
        while !line.is_char_boundary(cut) {
            cut -= 1;
        }
        if let Some(space) = line[from..cut].rfind(char::is_whitespace) {
            if space > MAX_CHUNK_BYTES / 2 {
                cut = from + space + 1;
            }
        }
        pieces.push(start + from..start + cut);
        from = cut;
    }
    pieces.push(start + from..start + line.len());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str, pack: bool) -> Vec<&str> {
        chunks(text, pack).into_iter().map(|r| &text[r]).collect()
    }

    #[test]
    fn empty_and_blank_give_nothing() {
        assert!(chunks("", false).is_empty());
        assert!(chunks("\n\n  \n", true).is_empty());
    }

    #[test]
    fn paragraphs_split_without_pack_and_join_with_it() {
        let text = "a\nb\n\nc\n";
        assert_eq!(texts(text, false), vec!["a\nb", "c"]);
        assert_eq!(texts(text, true), vec!["a\nb\n\nc"]);
    }

    #[test]
    fn long_paragraphs_split_at_line_limit() {
        let text: String = (0..60).map(|i| format!("line {i}\n")).collect();
        let parts = texts(&text, true);
        assert_eq!(parts.len(), 3);
        assert!(parts[0].starts_with("line 0\n") && parts[0].ends_with("line 23"));
        assert!(parts[2].ends_with("line 59"));
    }

    #[test]
    fn huge_single_line_is_cut_at_char_boundaries() {
        let text = "é".repeat(5000);
        let parts = texts(&text, false);
        assert!(parts.len() >= 5);
        assert_eq!(parts.concat(), text);
        assert!(parts.iter().all(|p| p.len() <= MAX_CHUNK_BYTES));
    }

    #[test]
    fn huge_line_prefers_whitespace_cuts() {
        let text = "word ".repeat(1000);
        let parts = texts(text.trim_end(), false);
        assert!(parts[..parts.len() - 1].iter().all(|p| p.ends_with(' ')));
    }

    #[test]
    fn a_diff_is_cut_at_hunks_and_a_long_hunk_at_line_ends() {
        let diff = "--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n-a\n+b\n \n@@ -9 +9 @@\n-c\n+d\n";
        let parts: Vec<&str> = diff_chunks(diff).into_iter().map(|r| &diff[r]).collect();
        assert_eq!(
            parts,
            [
                "--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n-a\n+b\n ",
                "@@ -9 +9 @@\n-c\n+d"
            ]
        );
        let long: String = std::iter::once("@@ -1,60 +1,60 @@\n".to_string())
            .chain((0..60).map(|i| format!("+line {i}\n")))
            .collect();
        let parts: Vec<&str> = diff_chunks(&long).into_iter().map(|r| &long[r]).collect();
        assert_eq!(parts.len(), 3);
        assert!(parts.iter().all(|p| p.lines().count() <= MAX_CHUNK_LINES));
        assert_eq!(parts.concat().len() + 2, long.trim_end().len());
    }

    #[test]
    fn crlf_is_not_part_of_the_span() {
        assert_eq!(texts("a\r\nb\r\n", false), vec!["a\r\nb"]);
    }
}
