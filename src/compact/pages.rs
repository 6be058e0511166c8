//! A kept result served back under the limit: page by page (pages are consecutive slices of
//! the text, so the pages joined are the text, byte for byte), a range of lines, or the
//! lines matching a pattern. Each answer is the slice itself and a note saying what it is and
//! how to go on.

use std::collections::HashMap;
use std::sync::Mutex;

use regex::Regex;

use super::text::{floor_char_boundary, line_start, lines};
use super::thousands;
use crate::sync::lock;
use crate::tokenizer::Tokenizer;

/// Tokens of the limit kept for the note beside each slice.
pub(crate) const NOTE_TOKENS: usize = 120;

/// What part of a kept text to serve.
#[derive(Debug, Clone)]
pub(crate) enum Part {
    /// The n-th page (1-based).
    Page(usize),
    /// Lines `from..=to` (1-based).
    Lines(usize, usize),
    /// The lines matching the pattern, within lines `from..=to`.
    Pattern(Regex, usize, usize),
}

/// A served part: the slice (or, for a pattern, the numbered matching lines) and the note.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Served {
    /// The text served.
    pub(crate) text: String,
    /// What it is and how to go on, in a sentence.
    pub(crate) note: String,
    /// The page, line or match after the last one served, when there is more.
    pub(crate) next: Option<usize>,
}

/// The end of the longest slice of `doc` from `start` that counts at most `budget` tokens,
/// cut after a line where one ends in its second half; at least one character.
fn fit(doc: &str, start: usize, budget: usize, tokenizer: Tokenizer) -> usize {
    let rest = &doc[start..];
    let mut span = floor_char_boundary(rest, budget.saturating_mul(4));
    loop {
        if span >= rest.len() && tokenizer.count(rest) <= budget {
            return doc.len();
        }
        let mut end = floor_char_boundary(rest, span);
        if let Some(nl) = rest[..end].rfind('\n') {
            if nl + 1 > end / 2 {
                end = nl + 1;
            }
        }
        if end == 0 {
            end = rest.chars().next().map_or(0, char::len_utf8);
        }
        let tokens = tokenizer.count(&rest[..end]);
        if tokens <= budget || end <= rest.chars().next().map_or(0, char::len_utf8) {
            return start + end;
        }
        span = (end as u128 * budget as u128 * 9 / (tokens as u128 * 10)) as usize;
    }
}

/// Page ends per kept result (handle, raw or text) and limit, for [`serve`].
#[derive(Debug, Default)]
pub(crate) struct PageCache(Mutex<HashMap<(String, bool, usize), Vec<usize>>>);

/// How many results' page ends a [`PageCache`] holds before it starts over.
const CACHED_RESULTS: usize = 64;

impl PageCache {
    /// Runs `f` with the page ends known for `key`.
    pub(crate) fn with<R>(
        &self,
        key: (String, bool, usize),
        f: impl FnOnce(&mut Vec<usize>) -> R,
    ) -> R {
        let mut map = lock(&self.0);
        if map.len() >= CACHED_RESULTS && !map.contains_key(&key) {
            map.clear();
        }
        f(map.entry(key).or_default())
    }
}

/// The 1-based line number of byte offset `at` in `doc`.
fn line_of(doc: &str, at: usize) -> usize {
    memchr::memchr_iter(b'\n', &doc.as_bytes()[..at]).count() + 1
}

/// Serves `part` of `doc` with slices of at most `limit - NOTE_TOKENS` tokens. `ends` holds
/// the ends of the pages found so far (for the same `doc` and `limit`); it is extended as far
/// as a page asked for needs, so that paging on does not cut the earlier pages again.
pub(crate) fn serve(
    doc: &str,
    part: &Part,
    limit: usize,
    tokenizer: Tokenizer,
    ends: &mut Vec<usize>,
) -> Served {
    let budget = limit.saturating_sub(NOTE_TOKENS).max(1);
    let total = lines(doc).len();
    match part {
        Part::Page(n) => {
            let n = (*n).max(1);
            while ends.len() < n && ends.last().is_none_or(|&e| e < doc.len()) {
                let start = ends.last().copied().unwrap_or(0);
                ends.push(fit(doc, start, budget, tokenizer));
            }
            if ends.len() < n {
                return Served {
                    text: String::new(),
                    note: format!("There is no page {n}: the result has fewer pages."),
                    next: None,
                };
            }
            let start = if n == 1 { 0 } else { ends[n - 2] };
            let end = ends[n - 1];
            let more = end < doc.len();
            let (first, last) = (line_of(doc, start), line_of(doc, end.max(start + 1) - 1));
            let mut note = format!(
                "Page {n}: bytes {}-{} of {}, lines {}-{} of {}",
                thousands(start),
                thousands(end),
                thousands(doc.len()),
                thousands(first),
                thousands(last),
                thousands(total)
            );
            note.push_str(if more {
                "; the next page follows"
            } else {
                "; the last page"
            });
            note.push('.');
            Served {
                text: doc[start..end].to_string(),
                note,
                next: more.then_some(n + 1),
            }
        }
        Part::Lines(from, to) => {
            let (from, to) = ((*from).max(1), (*to).min(total));
            if from > to {
                return Served {
                    text: String::new(),
                    note: format!("No lines there: the result has {} lines.", thousands(total)),
                    next: None,
                };
            }
            let (start, stop) = (line_start(doc, from), line_start(doc, to + 1));
            let end = fit(&doc[..stop], start, budget, tokenizer);
            let last = line_of(doc, end.max(start + 1) - 1);
            let whole_last = end == stop || doc.as_bytes()[end - 1] == b'\n';
            let next = if end < stop {
                Some(if whole_last { last + 1 } else { last })
            } else {
                None
            };
            let mut note = format!(
                "Lines {}-{} of {}",
                thousands(from),
                thousands(last),
                thousands(total)
            );
            if !whole_last {
                note.push_str(&format!(" (line {} cut at the limit)", thousands(last)));
            }
            if let Some(next) = next {
                note.push_str(&format!("; the rest from line {}", thousands(next)));
            }
            note.push('.');
            Served {
                text: doc[start..end].to_string(),
                note,
                next,
            }
        }
        Part::Pattern(regex, from, to) => {
            let width = total.to_string().len();
            let mut text = String::new();
            let mut used = 0;
            let mut found = 0;
            let mut next = None;
            for (i, line) in lines(doc).iter().enumerate() {
                let n = i + 1;
                if n < *from || n > *to || !regex.is_match(line) {
                    continue;
                }
                let row = format!("{n:>width$} | {line}\n");
                let cost = tokenizer.count(&row);
                if used + cost > budget {
                    next = Some(n);
                    break;
                }
                used += cost;
                found += 1;
                text.push_str(&row);
            }
            let mut note = format!(
                "{} matching lines of {}",
                thousands(found),
                thousands(total)
            );
            if let Some(n) = next {
                note.push_str(&format!(
                    "; more matches from line {} on (give lines [{n}, {total}])",
                    thousands(n)
                ));
            }
            note.push('.');
            Served { text, note, next }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> String {
        (1..=3000)
            .map(|i| format!("line {i}: the quick brown fox {}\n", i * 7919 % 1000))
            .collect()
    }

    #[test]
    fn pages_joined_are_the_text_and_each_fits() {
        let t = Tokenizer::O200kBase;
        let doc = doc();
        let mut joined = String::new();
        let mut ends = Vec::new();
        let mut n = 1;
        loop {
            let s = serve(&doc, &Part::Page(n), 1000, t, &mut ends);
            assert!(t.count(&s.text) <= 1000 - NOTE_TOKENS);
            assert!(t.count(&s.note) < NOTE_TOKENS);
            joined.push_str(&s.text);
            match s.next {
                Some(next) => n = next,
                None => break,
            }
        }
        assert!(n > 10, "{n} pages");
        assert_eq!(joined, doc);
        let past = serve(&doc, &Part::Page(n + 1), 1000, t, &mut ends);
        assert_eq!(past.text, "");
    }

    #[test]
    fn a_single_long_line_is_paged_by_characters() {
        let t = Tokenizer::O200kBase;
        let doc = "é€x".repeat(20_000);
        let mut joined = String::new();
        let mut ends = Vec::new();
        let mut n = 1;
        loop {
            let s = serve(&doc, &Part::Page(n), 500, t, &mut ends);
            assert!(!s.text.is_empty());
            joined.push_str(&s.text);
            match s.next {
                Some(next) => n = next,
                None => break,
            }
        }
        assert_eq!(joined, doc);
    }

    #[test]
    fn line_ranges_are_exact_slices_and_say_where_to_go_on() {
        let t = Tokenizer::O200kBase;
        let doc = doc();
        let s = serve(&doc, &Part::Lines(10, 12), 1000, t, &mut Vec::new());
        assert_eq!(
            s.text,
            doc.lines()
                .skip(9)
                .take(3)
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        assert_eq!(s.next, None);
        let s = serve(&doc, &Part::Lines(1, 3000), 400, t, &mut Vec::new());
        let next = s.next.unwrap();
        assert_eq!(s.text, doc[..line_start(&doc, next)]);
        assert!(
            s.note.contains(&format!("the rest from line {next}")),
            "{}",
            s.note
        );
        assert_eq!(
            serve(&doc, &Part::Lines(5000, 6000), 400, t, &mut Vec::new()).text,
            ""
        );
    }

    #[test]
    fn patterns_give_numbered_matching_lines() {
        let t = Tokenizer::O200kBase;
        let doc = doc();
        let re = Regex::new(r"fox 0$").unwrap();
        let s = serve(&doc, &Part::Pattern(re, 1, 3000), 1000, t, &mut Vec::new());
        assert_eq!(s.next, None);
        let expected: Vec<usize> = (1..=3000).filter(|i| i * 7919 % 1000 == 0).collect();
        assert_eq!(s.text.lines().count(), expected.len());
        assert!(s
            .text
            .starts_with(&format!("{:>4} | line {}:", expected[0], expected[0])));
    }
}
