//! JSON escapes and match boundaries: a redaction must not start or end inside an escape
//! sequence (`\n`, `\"`, `\u00e9`, a surrogate pair), or the text around it would stop
//! being valid JSON. A match that would is widened to take the whole escape.

use std::ops::Range;

/// Whether the byte at `at` is a backslash that starts an escape (an even number of
/// backslashes before it).
fn starts_escape(text: &[u8], at: usize) -> bool {
    text[at] == b'\\' && text[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 0
}

/// The escape sequence starting at `at` (a backslash that starts one): `\uXXXX` is six
/// bytes, any other two; cut at the end of the text.
fn escape_at(text: &[u8], at: usize) -> Range<usize> {
    let len = if text.get(at + 1) == Some(&b'u') {
        6
    } else {
        2
    };
    at..(at + len).min(text.len())
}

/// The `\uXXXX` value of the escape at `range`, if it is one.
fn unicode_value(text: &[u8], range: &Range<usize>) -> Option<u16> {
    let digits = text.get(range.start + 2..range.end)?;
    if range.len() != 6 || text[range.start + 1] != b'u' {
        return None;
    }
    u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
}

/// The escape sequence that contains byte `pos` (and does not start there), widened to a
/// whole surrogate pair.
fn escape_containing(text: &[u8], pos: usize) -> Option<Range<usize>> {
    let lowest = pos.saturating_sub(5);
    let start = (lowest..pos).rev().find(|&at| starts_escape(text, at))?;
    let range = escape_at(text, start);
    (range.end > pos).then(|| pair(text, range))
}

/// `range` (an escape) widened to its surrogate partner when it is half of a pair.
fn pair(text: &[u8], range: Range<usize>) -> Range<usize> {
    match unicode_value(text, &range) {
        Some(0xD800..=0xDBFF) if range.end < text.len() && starts_escape(text, range.end) => {
            let next = escape_at(text, range.end);
            if matches!(unicode_value(text, &next), Some(0xDC00..=0xDFFF)) {
                range.start..next.end
            } else {
                range
            }
        }
        Some(0xDC00..=0xDFFF) if range.start >= 6 => {
            let before = escape_at(text, range.start - 6);
            if starts_escape(text, range.start - 6)
                && matches!(unicode_value(text, &before), Some(0xD800..=0xDBFF))
            {
                before.start..range.end
            } else {
                range
            }
        }
        _ => range,
    }
}

/// `span` widened so that it neither starts nor ends inside an escape sequence, and takes
/// both halves of a surrogate pair or neither.
pub(crate) fn widen_to_escapes(text: &[u8], span: Range<usize>) -> Range<usize> {
    if span.is_empty() {
        return span;
    }
    let mut start = span.start;
    let mut end = span.end;
    if let Some(escape) = escape_containing(text, start) {
        start = escape.start;
    }
    if starts_escape(text, start) {
        start = pair(text, escape_at(text, start)).start;
    }
    let last = end - 1;
    if let Some(escape) = escape_containing(text, last) {
        end = end.max(escape.end);
    } else if starts_escape(text, last) {
        end = pair(text, escape_at(text, last)).end;
    }
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widen(text: &str, span: Range<usize>) -> &str {
        &text[widen_to_escapes(text.as_bytes(), span)]
    }

    #[test]
    fn a_span_starting_on_an_escaped_letter_takes_the_backslash() {
        // `\npm_…`: a newline, then text that starts with `pm_`… but `n` is the escape's.
        let text = r"a\npm_x";
        assert_eq!(widen(text, 2..7), r"\npm_x");
    }

    #[test]
    fn a_span_inside_a_unicode_escape_takes_all_of_it() {
        let text = r"x\u00e9yz";
        assert_eq!(widen(text, 5..9), r"\u00e9yz");
        assert_eq!(widen(text, 0..3), r"x\u00e9");
    }

    #[test]
    fn surrogate_pairs_go_whole() {
        let text = r"\ud83d\ude00eyJ";
        assert_eq!(widen(text, 11..15), text);
        assert_eq!(widen(text, 0..3), r"\ud83d\ude00");
    }

    #[test]
    fn an_escaped_backslash_is_not_an_escape_start() {
        // `\\` then `npm`: the second backslash is escaped, `n` is plain.
        let text = r"\\npm";
        assert_eq!(widen(text, 2..5), "npm");
    }
}
