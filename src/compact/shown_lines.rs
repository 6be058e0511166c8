//! Which lines of one output a compacted result shows, and how: the optimizer's extraction
//! applied line by line (error signatures, failure markers, stack frames, failing tests),
//! warnings, lines sharing a term with the call's arguments, rare lines, and the head and
//! tail, fitted to a token budget and rendered with their line numbers.

use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use regex::Regex;

use super::text::floor_char_boundary;
use crate::optimizer::extract::{failing_tests, frames, outcomes, signatures, terms};
use crate::tokenizer::Tokenizer;

/// Lines shown from the start and from the end before any other.
const HEAD: usize = 10;
/// See [`HEAD`].
const TAIL: usize = 10;

/// Rows in a row that did not fit the budget before the excerpt stops looking.
const MAX_MISSES: usize = 32;

/// The shortest a long line is cut to, in characters.
const MIN_LINE_CHARS: usize = 160;

/// Rare lines are only a signal when at most this share of the lines are rare.
const RARE_SHARE: f64 = 0.2;

/// A line that opens with a bare `Error:` (which names no error type, so carries no
/// signature).
static BARE_ERROR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\s*(?:Error|error|ERROR)(?::|!)\s").unwrap());

static WARNING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bwarn(?:ing)?s?\b|\b[A-Z]\w*Warning\b").unwrap());

/// Why a line is shown, most important first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reason {
    /// One of the first or last lines.
    Edge,
    /// The first line naming an error (signature, failure marker, failing test) of its kind.
    Error,
    /// The first warning of its kind.
    Warning,
    /// It shares a term with the call's arguments.
    Match,
    /// A stack frame.
    Frame,
    /// Its shape (words holding a digit masked) occurs once in the output.
    Rare,
    /// An error or warning of a kind already shown.
    Repeat,
    /// Any other line, in order, while the budget lasts.
    More,
}

/// What a line is, as far as ranking goes: a pure function of its text, so worked out once
/// per distinct line ([`ranked`]).
struct Class {
    /// An error's kind (its signature's key, or the line's shape).
    error: Option<String>,
    /// Whether it is a warning (its kind is the line's shape).
    warning: bool,
    /// Whether it shares a term with the call's arguments.
    matches: bool,
    /// Whether it is a stack frame.
    frame: bool,
}

impl Class {
    fn of(line: &str, shape: &str, arg_terms: &BTreeSet<String>) -> Class {
        let error = signatures::signature(line).map(|s| s.key()).or_else(|| {
            (outcomes::failure_lines(line) > 0
                || BARE_ERROR.is_match(line)
                || !failing_tests::failing_tests(line).is_empty())
            .then(|| shape.to_string())
        });
        let warning = error.is_none() && WARNING.is_match(line);
        let matches =
            error.is_none() && !warning && !arg_terms.is_empty() && shares_term(line, arg_terms);
        let frame = error.is_none() && !warning && !matches && !frames::frames(line).is_empty();
        Class {
            error,
            warning,
            matches,
            frame,
        }
    }
}

/// A distinct line of the output: its shape, and its class once a line that is not an edge
/// needed it.
struct Distinct {
    shape: String,
    class: Option<Class>,
}

/// The candidate lines of an output, in the order they are taken: by [`Reason`], then in
/// line order.
pub(crate) fn ranked(lines: &[&str], arg_terms: &BTreeSet<String>) -> Vec<(usize, Reason)> {
    let n = lines.len();
    // Repeated lines (a log's, a listing's) are shaped and classified once.
    let mut distinct: Vec<Distinct> = Vec::new();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(n);
    let of_line: Vec<usize> = lines
        .iter()
        .map(|line| {
            *index.entry(line).or_insert_with(|| {
                distinct.push(Distinct {
                    shape: shape(line),
                    class: None,
                });
                distinct.len() - 1
            })
        })
        .collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for &d in &of_line {
        *counts.entry(distinct[d].shape.as_str()).or_default() += 1;
    }
    let once: Vec<bool> = distinct
        .iter()
        .map(|d| !d.shape.is_empty() && counts[d.shape.as_str()] == 1)
        .collect();
    let rare_count = of_line.iter().filter(|&&d| once[d]).count();
    let rare_signal = (rare_count as f64) <= RARE_SHARE * n as f64;
    let mut kinds_seen: BTreeSet<String> = BTreeSet::new();
    let mut order: Vec<(usize, Reason)> = Vec::with_capacity(n);
    for (i, (line, &d)) in lines.iter().zip(&of_line).enumerate() {
        if i < HEAD || i + TAIL >= n {
            order.push((i, Reason::Edge));
            continue;
        }
        let entry = &mut distinct[d];
        let class = entry
            .class
            .get_or_insert_with(|| Class::of(line, &entry.shape, arg_terms));
        let kind = match (&class.error, class.warning) {
            (Some(kind), _) => Some((kind, Reason::Error)),
            (None, true) => Some((&entry.shape, Reason::Warning)),
            (None, false) => None,
        };
        let why = if let Some((kind, first)) = kind {
            if kinds_seen.insert(kind.clone()) {
                first
            } else {
                Reason::Repeat
            }
        } else if class.matches {
            Reason::Match
        } else if class.frame {
            Reason::Frame
        } else if rare_signal && once[d] {
            Reason::Rare
        } else {
            Reason::More
        };
        order.push((i, why));
    }
    order.sort_by_key(|&(i, why)| (why, i));
    order
}

fn shares_term(line: &str, arg_terms: &BTreeSet<String>) -> bool {
    // A term is a lowercased word or part of one, less a suffix: an ASCII line shares one
    // only if its lowercased text holds it.
    if line.is_ascii() {
        let lower = line.to_ascii_lowercase();
        if !arg_terms
            .iter()
            .any(|t| memchr::memmem::find(lower.as_bytes(), t.as_bytes()).is_some())
        {
            return false;
        }
    }
    let mut hit = false;
    terms::for_each_term(line, |t| hit = hit || arg_terms.contains(t));
    hit
}

/// A line with every word holding a digit (numbers, ids, hex) masked as `0`.
fn shape(line: &str) -> String {
    let line = line.trim();
    if line.is_ascii() {
        return ascii_shape(line);
    }
    let mut out = String::with_capacity(line.len());
    // The current word: where it starts, and whether it holds a digit.
    let mut word: Option<(usize, bool)> = None;
    let flush = |word: Option<(usize, bool)>, end: usize, out: &mut String| match word {
        Some((_, true)) => out.push('0'),
        Some((start, false)) => out.push_str(&line[start..end]),
        None => {}
    };
    for (i, c) in line.char_indices() {
        if c.is_alphanumeric() {
            let (start, digit) = word.unwrap_or((i, false));
            word = Some((start, digit || c.is_ascii_digit()));
        } else {
            flush(word.take(), i, &mut out);
            out.push(c);
        }
    }
    flush(word, line.len(), &mut out);
    out
}

/// [`shape`] of an ASCII line, byte by byte: a word is a run of ASCII letters and digits.
fn ascii_shape(line: &str) -> String {
    let bytes = line.as_bytes();
    let mut out = String::with_capacity(line.len());
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let word = &bytes[start..i];
        if word.iter().any(u8::is_ascii_digit) {
            out.push('0');
        } else {
            out.push_str(&line[start..i]);
        }
        if i < bytes.len() {
            out.push(bytes[i] as char);
            i += 1;
        }
    }
    out
}

/// The terms of every string in the call's arguments.
pub(crate) fn argument_terms(arguments: &serde_json::Value) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![arguments];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::String(s) => out.extend(terms::term_set(s)),
            serde_json::Value::Array(a) => stack.extend(a),
            serde_json::Value::Object(o) => stack.extend(o.values()),
            _ => {}
        }
    }
    out
}

/// What an excerpt shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Excerpt {
    /// The rendered excerpt: numbered lines, `…` lines for the gaps.
    pub(crate) text: String,
    /// How many lines it shows (whole or cut).
    pub(crate) shown: usize,
    /// How many of those are cut short.
    pub(crate) cut: usize,
}

/// The longest a shown line may be, in characters, for a budget of `budget` tokens over an
/// output of `lines` lines.
fn line_cap(budget: usize, lines: usize) -> usize {
    (budget.saturating_mul(3) / lines.clamp(1, 8)).max(MIN_LINE_CHARS)
}

/// A line as shown: whole, or its start and end around a note of what was cut.
fn shown_line(line: &str, cap: usize) -> (String, bool) {
    let chars = line.chars().count();
    if chars <= cap {
        return (line.to_string(), false);
    }
    let half = cap / 2;
    let head_end = floor_char_boundary(line, line.char_indices().nth(half).map_or(0, |(i, _)| i));
    // The last `half` characters, found from the end (a long line is not walked twice).
    let tail_start = match half {
        0 => line.len(),
        h => line.char_indices().rev().nth(h - 1).map_or(0, |(i, _)| i),
    };
    let left = chars - 2 * half;
    (
        format!(
            "{} … [{left} characters left out] … {}",
            &line[..head_end],
            &line[tail_start..]
        ),
        true,
    )
}

/// Line `number` as a row of the excerpt, cut to at most `cap` characters, and shorter when a
/// cut line would not fit in `room` tokens (down to [`MIN_LINE_CHARS`]): the row, whether
/// it is cut, and its tokens.
fn fitted_row(
    line: &str,
    number: usize,
    width: usize,
    cap: usize,
    room: usize,
    tokenizer: Tokenizer,
) -> (String, bool, usize) {
    let mut cap = cap;
    loop {
        let (text, cut) = shown_line(line, cap);
        let row = format!("{number:>width$} | {text}\n");
        let cost = tokenizer.count(&row);
        if cost <= room || !cut || cap <= MIN_LINE_CHARS {
            return (row, cut, cost);
        }
        let shorter = (cap as u128 * room as u128 * 9 / (cost as u128 * 10)) as usize;
        cap = shorter.clamp(MIN_LINE_CHARS, cap - 1);
    }
}

/// Takes lines in `order` while their tokens fit `budget` (an estimate: each line counted
/// alone), and renders them in line order with their numbers.
pub(crate) fn excerpt(
    lines: &[&str],
    order: &[(usize, Reason)],
    budget: usize,
    tokenizer: Tokenizer,
) -> Excerpt {
    let width = lines.len().to_string().len();
    let cap = line_cap(budget, lines.len());
    let mut chosen: Vec<(usize, String, bool)> = Vec::new();
    let mut used = 0;
    let mut misses = 0;
    for &(i, _) in order {
        let (row, cut, cost) = fitted_row(lines[i], i + 1, width, cap, budget - used, tokenizer);
        if used + cost > budget {
            // A long row may not fit where a short one still does; stop once even the
            // smallest row would not, or after a run of rows that did not.
            misses += 1;
            if budget.saturating_sub(used) < 8 || misses == MAX_MISSES {
                break;
            }
            continue;
        }
        misses = 0;
        used += cost;
        chosen.push((i, row, cut));
    }
    chosen.sort_by_key(|(i, _, _)| *i);
    let mut text = String::new();
    let mut next = 0;
    for (i, row, _) in &chosen {
        if *i > next {
            text.push_str(&gap(next, *i));
        }
        text.push_str(row);
        next = i + 1;
    }
    if next < lines.len() && !chosen.is_empty() {
        text.push_str(&gap(next, lines.len()));
    }
    Excerpt {
        shown: chosen.len(),
        cut: chosen.iter().filter(|(_, _, c)| *c).count(),
        text,
    }
}

/// The line that stands for lines `from..to` (0-based, end exclusive) left out.
fn gap(from: usize, to: usize) -> String {
    if to - from == 1 {
        format!("… line {} left out\n", from + 1)
    } else {
        format!("… lines {}-{} left out\n", from + 1, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log() -> String {
        let mut lines: Vec<String> = (1..=500)
            .map(|i| {
                format!(
                    "2026-01-01T00:00:{:02} INFO request {i} served in 3ms",
                    i % 60
                )
            })
            .collect();
        lines[200] = "2026-01-01T00:03:20 ERROR payment gateway timed out".into();
        lines[300] = "2026-01-01T00:05:00 WARN disk 91% full".into();
        lines[400] = "2026-01-01T00:06:40 INFO invoice INV-77 rendered".into();
        lines.join("\n")
    }

    #[test]
    fn errors_warnings_matches_and_edges_come_first() {
        let text = log();
        let lines: Vec<&str> = text.split('\n').collect();
        let terms = argument_terms(&serde_json::json!({"query": "invoice"}));
        let order = ranked(&lines, &terms);
        let first: Vec<(usize, Reason)> = order[20..23].to_vec();
        assert_eq!(
            first,
            vec![
                (200, Reason::Error),
                (300, Reason::Warning),
                (400, Reason::Match)
            ]
        );
        assert_eq!(order[0], (0, Reason::Edge));
        assert_eq!(order[10], (490, Reason::Edge));
        assert_eq!(order[23], (10, Reason::More));
        assert_eq!(order.len(), 500, "every line once");
    }

    #[test]
    fn the_excerpt_numbers_its_lines_marks_gaps_and_keeps_the_budget() {
        let text = log();
        let lines: Vec<&str> = text.split('\n').collect();
        let order = ranked(&lines, &BTreeSet::new());
        let t = Tokenizer::O200kBase;
        let e = excerpt(&lines, &order, 600, t);
        assert!(t.count(&e.text) <= 620, "{}", t.count(&e.text));
        assert!(e
            .text
            .starts_with("  1 | 2026-01-01T00:00:01 INFO request 1 "));
        assert!(e
            .text
            .contains("\n201 | 2026-01-01T00:03:20 ERROR payment gateway timed out\n"));
        assert!(e.text.contains("\n… lines "));
        assert!(e
            .text
            .ends_with("500 | 2026-01-01T00:00:20 INFO request 500 served in 3ms\n"));
        assert!(e.shown >= 23 && e.shown < 500);
    }

    #[test]
    fn shapes_mask_words_holding_digits_alike_in_ascii_and_not() {
        for (line, expected) in [
            ("  00012 INFO req 7f3a took 12ms  ", "0 INFO req 0 took 0"),
            ("ERROR: x1-y2 failed", "ERROR: 0-0 failed"),
            ("", ""),
            ("a", "a"),
            ("--", "--"),
        ] {
            assert_eq!(shape(line), expected, "{line:?}");
        }
        // Non-ASCII: letters of any script make words; the ASCII path is not taken.
        assert_eq!(shape("größe 12é fertig"), "größe 0 fertig");
    }

    #[test]
    fn a_long_line_keeps_its_start_and_end() {
        let line = format!("BEGIN{}END", "x".repeat(100_000));
        let (shown, cut) = shown_line(&line, 200);
        assert!(cut);
        assert!(shown.starts_with("BEGINxx") && shown.ends_with("xxEND"));
        assert!(shown.contains("[99808 characters left out]"), "{shown}");
        let (short, cut) = shown_line("é short", 200);
        assert_eq!((short.as_str(), cut), ("é short", false));
    }
}
