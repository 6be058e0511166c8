//! Text edits by byte range, applied all at once, and the layout facts an insertion copies
//! from its surroundings (line ending, indentation).

use std::ops::Range;

/// Replace the bytes `range` with `text` (an empty range inserts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Edit {
    /// The bytes replaced.
    pub(crate) range: Range<usize>,
    /// What goes in their place.
    pub(crate) text: String,
}

impl Edit {
    /// Inserts `text` at `at`.
    pub(crate) fn insert(at: usize, text: impl Into<String>) -> Edit {
        Edit {
            range: at..at,
            text: text.into(),
        }
    }

    /// Deletes `range`.
    pub(crate) fn delete(range: Range<usize>) -> Edit {
        Edit {
            range,
            text: String::new(),
        }
    }

    /// Replaces `range` with `text`.
    pub(crate) fn replace(range: Range<usize>, text: impl Into<String>) -> Edit {
        Edit {
            range,
            text: text.into(),
        }
    }
}

/// Applies non-overlapping edits to `text` (in any order).
pub(crate) fn apply(text: &str, edits: &[Edit]) -> String {
    let mut sorted: Vec<&Edit> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.range.start, e.range.end));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for edit in sorted {
        debug_assert!(edit.range.start >= at, "overlapping edits");
        out.push_str(&text[at..edit.range.start]);
        out.push_str(&edit.text);
        at = edit.range.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The file's line ending: CRLF when its first line break is one, else LF.
pub(crate) fn line_ending(text: &str) -> &'static str {
    match text.find('\n') {
        Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// The separator to put before a new item that follows the item at `item_start`: a line
/// break and that item's indentation when it starts a line of its own, else one space.
pub(crate) fn separator_before(text: &str, item_start: usize) -> String {
    let before = &text[..item_start];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let indent = &before[line_start..];
    if line_start > 0 && indent.chars().all(|c| c == ' ' || c == '\t') {
        format!("{}{indent}", line_ending(text))
    } else {
        " ".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_apply_in_any_order() {
        let edits = [
            Edit::replace(4..5, "X"),
            Edit::insert(0, "<"),
            Edit::delete(1..2),
        ];
        assert_eq!(apply("abcdef", &edits), "<acdXf");
    }

    #[test]
    fn separators_copy_the_line_break_and_indentation() {
        let text = "{\r\n    \"a\": 1,\r\n    \"b\": 2}";
        let b = text.find("\"b\"").unwrap();
        assert_eq!(separator_before(text, b), "\r\n    ");
        assert_eq!(separator_before("[1, 2]", 4), " ");
        assert_eq!(line_ending("a\nb\r\n"), "\n");
    }
}
