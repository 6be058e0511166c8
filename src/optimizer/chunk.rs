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

/// The most bytes of a diff, an error or a test result kept as one fragment (about 2,000
/// tokens: it fits a restore's budget whole); a bigger diff is cut by [`diff_chunks`], a
/// bigger error or test result by [`chunks`] (a command's whole output given as an error).
pub(crate) const WHOLE_BYTES: usize = 4 * MAX_CHUNK_BYTES;

/// Cuts a unified diff into chunk spans, in order. One of at most [`WHOLE_BYTES`] is one
/// chunk: a change is read whole. A bigger one — which no budget in use could show whole — is
/// cut a chunk per hunk (the file header lines before the first hunk go with it), a hunk longer
/// than [`MAX_CHUNK_LINES`] lines or [`MAX_CHUNK_BYTES`] bytes at line ends (a single longer
/// line as [`chunks`] cuts it). Blank lines are kept inside a chunk: in a diff they are context.
pub(crate) fn diff_chunks(text: &str) -> Vec<Range<usize>> {
    let text_end = text.trim_end().len();
    if text_end <= WHOLE_BYTES {
        return std::iter::once(0..text_end).collect();
    }
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
    fn a_big_diff_is_cut_at_hunks_and_a_long_hunk_at_line_ends_and_a_small_one_is_whole() {
        let small = "--- a/x.rs\n+++ b/x.rs\n@@ -1,2 +1,2 @@\n-a\n+b\n \n@@ -9 +9 @@\n-c\n+d\n";
        let whole = diff_chunks(small);
        assert_eq!(
            (whole.len(), &small[whole[0].clone()]),
            (1, small.trim_end())
        );
        let hunk = |h: usize, lines: usize| -> String {
            std::iter::once(format!("@@ -{h},{lines} +{h},{lines} @@\n"))
                .chain((0..lines).map(|i| format!("+line {h} {i} {}\n", "x".repeat(60))))
                .collect()
        };
        let big: String = std::iter::once("--- a/x.rs\n+++ b/x.rs\n".to_string())
            .chain((0..8).map(|h| hunk(h, 10)))
            .chain(std::iter::once(hunk(8, 60)))
            .collect();
        assert!(big.len() > WHOLE_BYTES);
        let parts: Vec<&str> = diff_chunks(&big).into_iter().map(|r| &big[r]).collect();
        // Eight short hunks, one each (the header with the first), and the long one in three.
        assert_eq!(parts.len(), 8 + 3, "{parts:#?}");
        assert!(parts[0].starts_with("--- a/x.rs\n+++ b/x.rs\n@@ -0,10"));
        assert!(parts[1..9].iter().all(|p| p.starts_with("@@ ")));
        assert!(parts.iter().all(|p| p.lines().count() <= MAX_CHUNK_LINES));
        assert_eq!(parts.join("\n"), big.trim_end());
    }

    #[test]
    fn crlf_is_not_part_of_the_span() {
        assert_eq!(texts("a\r\nb\r\n", false), vec!["a\r\nb"]);
    }
}
