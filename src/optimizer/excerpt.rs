//! Exceptional lines of a big output: when a tool output's bulk does not fit, its errors,
//! warnings, non-zero statuses and lines of a rare shape are what the context should still
//! show. [`excerpt`] picks them, in two passes over the lines (one to count shapes, one to
//! pick), and renders them with their line numbers and a count of what was left out:
//!
//! ```text
//! [ctxopt: exceptional lines of 20000; 19999 left out]
//! 13457: {"level":"error","msg":"settlement export failed: ledger row 88121 has currency XTS"}
//! ```
//!
//! Plain text and JSON-lines logs alike: a JSON record at an error or warning `level`
//! (`severity`, `lvl`) counts as an error or a warning line. Lines of one shape are shown
//! once, the first of them, with how many more there are (`(+41 more like it)`).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use crate::optimizer::chunk::MAX_CHUNK_LINES;
use crate::optimizer::extract::signatures::signature;

/// The fewest lines an output needs to be big: more than two chunks.
pub(crate) const MIN_LINES: usize = 2 * MAX_CHUNK_LINES + 1;
/// The most lines an excerpt shows.
pub(crate) const MAX_LINES: usize = 40;
/// The most times a shape may occur in an output and still be rare.
pub(crate) const RARE_SHAPE: usize = 2;
/// Lines of a rare shape are exceptional only while they are at most this share of the
/// output's lines (one in 20): where most lines are unlike each other, a unique shape
/// tells nothing.
pub(crate) const RARE_SHARE: usize = 20;
/// The most bytes of one line an excerpt shows.
pub(crate) const MAX_LINE_BYTES: usize = 400;

/// A warning: the word in any case (`warning:`, `WARN`, `Warnings`), or a JSON-lines record
/// at a `warn` level (the quoted word matches the same way).
static WARNING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\bwarn(?:ing|ings)?\b").unwrap());

/// A non-zero status: `exit code 2`, `exit status 1`, `exited with 137`, `returncode=1`,
/// `status: 3`, `non-zero exit`.
static STATUS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:exit(?:ed)?(?: with)?(?: code| status)?|return ?code|status)\s*[:=]?\s*-?[1-9]\d*\b|\bnon-?zero (?:exit|status|return)").unwrap()
});

/// Why a line is exceptional, most telling first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    Error,
    Status,
    Warning,
    Rare,
}

/// The class of a line, given how often its shape occurs and whether rare shapes count.
fn class(line: &str, shape_count: usize, rare_counts: bool) -> Option<Class> {
    if signature(line).is_some() {
        Some(Class::Error)
    } else if STATUS.is_match(line) {
        Some(Class::Status)
    } else if WARNING.is_match(line) {
        Some(Class::Warning)
    } else if rare_counts && shape_count <= RARE_SHAPE {
        Some(Class::Rare)
    } else {
        None
    }
}

/// The shape of a line: trimmed, every hex word of 6+ characters with a digit and a letter
/// (a hash, an id) read as `#`, every other run of digits as `0`.
pub(crate) fn shape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line.trim();
    while let Some(c) = rest.chars().next() {
        if c.is_ascii_alphanumeric() {
            let end = rest
                .find(|c: char| !c.is_ascii_alphanumeric())
                .unwrap_or(rest.len());
            let word = &rest[..end];
            let hex = word.len() >= 6
                && word.bytes().all(|b| b.is_ascii_hexdigit())
                && word.bytes().any(|b| b.is_ascii_digit())
                && word.bytes().any(|b| b.is_ascii_alphabetic());
            if hex {
                out.push('#');
            } else {
                let mut digits = false;
                for c in word.chars() {
                    if c.is_ascii_digit() {
                        if !digits {
                            out.push('0');
                        }
                        digits = true;
                    } else {
                        out.push(c);
                        digits = false;
                    }
                }
            }
            rest = &rest[end..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// One shown line.
#[derive(Debug, Clone)]
struct Shown<'a> {
    /// 1-based line number.
    number: usize,
    line: &'a str,
    class: Class,
    /// More lines of the same shape after it.
    more: usize,
}

/// The excerpt of `text` (an output's lines), or `None` when it is not big
/// ([`MIN_LINES`]) or has no exceptional line. `lines` must yield the same lines each time
/// it is cloned; it is walked exactly twice.
pub(crate) fn excerpt<'a, I>(lines: I) -> Option<String>
where
    I: Iterator<Item = &'a str> + Clone,
{
    let mut shapes: HashMap<String, usize> = HashMap::new();
    let mut total = 0;
    let mut nonblank = 0;
    for line in lines.clone() {
        total += 1;
        if !line.trim().is_empty() {
            nonblank += 1;
            *shapes.entry(shape(line)).or_default() += 1;
        }
    }
    if total < MIN_LINES {
        return None;
    }
    let rare_lines: usize = shapes.values().filter(|&&n| n <= RARE_SHAPE).sum();
    let rare_counts = rare_lines * RARE_SHARE <= nonblank;
    // Per exceptional shape, its first line and how many more.
    let mut first: HashMap<String, usize> = HashMap::new();
    let mut shown: Vec<Shown<'a>> = Vec::new();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let s = shape(line);
        if let Some(&at) = first.get(&s) {
            shown[at].more += 1;
            continue;
        }
        let count = shapes.get(&s).copied().unwrap_or(0);
        if let Some(class) = class(line, count, rare_counts) {
            first.insert(s, shown.len());
            shown.push(Shown {
                number: i + 1,
                line,
                class,
                more: 0,
            });
        }
    }
    if shown.is_empty() {
        return None;
    }
    if shown.len() > MAX_LINES {
        // The most telling classes first, then the earliest lines; shown in line order.
        let mut order: Vec<usize> = (0..shown.len()).collect();
        order.sort_by_key(|&k| (shown[k].class, k));
        let mut keep = vec![false; shown.len()];
        for &k in &order[..MAX_LINES] {
            keep[k] = true;
        }
        let mut k = 0;
        shown.retain(|_| {
            k += 1;
            keep[k - 1]
        });
    }
    let mut out = format!(
        "[ctxopt: exceptional lines of {total}; {} left out]",
        total - shown.len()
    );
    for s in &shown {
        out.push('\n');
        out.push_str(&s.number.to_string());
        out.push_str(": ");
        out.push_str(&clip(s.line.trim_end()));
        if s.more > 0 {
            out.push_str(&format!(" (+{} more like it)", s.more));
        }
    }
    Some(out)
}

/// The lines an excerpt shows, as they were written: without its first line, the line
/// numbers and the `(+N more like it)` counts, so that they read as in the output.
pub(crate) fn plain(excerpt: &str) -> String {
    shown_lines(excerpt).collect::<Vec<_>>().join("\n")
}

/// The shown lines of an excerpt, as written (see [`plain`]).
pub(crate) fn shown_lines(excerpt: &str) -> impl Iterator<Item = &str> {
    excerpt.lines().skip(1).map(|l| {
        let l = l
            .split_once(": ")
            .filter(|(n, _)| n.bytes().all(|b| b.is_ascii_digit()))
            .map_or(l, |(_, rest)| rest);
        match l.rfind(" (+") {
            Some(at) if l.ends_with(" more like it)") => &l[..at],
            _ => l,
        }
    })
}

/// `line` cut to at most [`MAX_LINE_BYTES`] at a character boundary, with `…` when cut.
fn clip(line: &str) -> std::borrow::Cow<'_, str> {
    if line.len() <= MAX_LINE_BYTES {
        return line.into();
    }
    let mut end = MAX_LINE_BYTES;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end]).into()
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;

    use super::*;

    fn routine(n: usize) -> String {
        format!(
            "2026-02-03 04:00:{:02} INFO exported row {n} to bucket a1b2c3d4e5",
            n % 60
        )
    }

    #[test]
    fn shapes_mask_numbers_and_hex_ids() {
        assert_eq!(shape(&routine(7)), shape(&routine(81234)));
        assert_eq!(shape("  id 9f86d081884c done "), "id # done");
        assert_eq!(
            shape("deadbeef"),
            "deadbeef",
            "a hex word without a digit stays"
        );
        assert_ne!(shape("row 1 ok"), shape("row 1 failed"));
    }

    #[test]
    fn a_small_output_has_no_excerpt() {
        let text = "ERROR boom\n".repeat(MIN_LINES - 1);
        assert_eq!(excerpt(text.lines()), None);
    }

    #[test]
    fn routine_lines_give_no_excerpt() {
        let text: String = (0..500).map(|n| routine(n) + "\n").collect();
        assert_eq!(excerpt(text.lines()), None);
    }

    #[test]
    fn errors_warnings_statuses_and_rare_shapes_are_kept_with_line_numbers() {
        let mut lines: Vec<String> = (1..=1000).map(routine).collect();
        lines[99] = "Traceback (most recent call last):".into();
        lines[100] = "ValueError: ledger row 88121 has currency XTS".into();
        lines[400] = "WARNING: retrying upload of part 3".into();
        lines[401] = "WARNING: retrying upload of part 4".into();
        lines[700] = "worker exited with code 137".into();
        let text = lines.join("\n");
        let out = excerpt(text.lines()).unwrap();
        assert_eq!(
            out,
            "[ctxopt: exceptional lines of 1000; 996 left out]\n\
             100: Traceback (most recent call last):\n\
             101: ValueError: ledger row 88121 has currency XTS\n\
             401: WARNING: retrying upload of part 3 (+1 more like it)\n\
             701: worker exited with code 137"
        );
    }

    #[test]
    fn json_lines_at_error_and_warn_levels_are_exceptional() {
        let mut lines: Vec<String> = (0..300)
            .map(|n| {
                format!(
                    r#"{{"ts":"2026-02-03T04:00:00Z","level":"info","msg":"exported row {n}"}}"#
                )
            })
            .collect();
        lines[10] = r#"{"ts":"2026-02-03T04:00:01Z","level":"warn","msg":"slow ledger"}"#.into();
        lines[200] =
            r#"{"ts":"2026-02-03T04:00:02Z","level":"error","msg":"export failed"}"#.into();
        let text = lines.join("\n");
        let out = excerpt(text.lines()).unwrap();
        assert!(out.contains("\n11: {\"ts\""), "{out}");
        assert!(out.contains("\n201: {\"ts\""), "{out}");
        assert_eq!(out.lines().count(), 3, "{out}");
        assert_eq!(plain(&out), format!("{}\n{}", lines[10], lines[200]));
    }

    #[test]
    fn where_most_lines_are_unlike_rare_shapes_tell_nothing() {
        // A file listing: every line its own shape, none an error.
        let text: String = (0..200)
            .map(|n| {
                format!(
                    "src/{}/mod.rs\n",
                    "abcdefghij".repeat(1 + n % 7) + &"x".repeat(n)
                )
            })
            .collect();
        assert_eq!(excerpt(text.lines()), None);
    }

    #[test]
    fn at_most_max_lines_are_shown_errors_first() {
        let mut lines: Vec<String> = (0..5000).map(routine).collect();
        for k in 0..60 {
            lines[10 + k * 50] = format!("WARNING: distinct warning kind{}", "x".repeat(k));
        }
        lines[4990] = "ERROR: the one error".into();
        let text = lines.join("\n");
        let out = excerpt(text.lines()).unwrap();
        assert_eq!(out.lines().count(), 1 + MAX_LINES);
        assert!(out.contains("4991: ERROR: the one error"), "{out}");
        assert!(out.starts_with("[ctxopt: exceptional lines of 5000; 4960 left out]"));
    }

    #[test]
    fn long_lines_are_clipped_at_a_char_boundary() {
        let mut lines: Vec<String> = (0..100).map(routine).collect();
        lines[50] = format!("ERROR: {}", "é".repeat(300));
        let out = excerpt(lines.iter().map(String::as_str)).unwrap();
        let shown = out.lines().nth(1).unwrap();
        assert!(
            shown.ends_with('…') && shown.len() <= MAX_LINE_BYTES + 8,
            "{shown}"
        );
    }

    /// Linear in the output: the lines are walked exactly twice, however many are
    /// exceptional or alike (a quadratic step would walk them once per line).
    #[test]
    fn the_lines_are_walked_twice() {
        #[derive(Clone)]
        struct Counting<'a, I> {
            inner: I,
            walked: &'a Cell<usize>,
        }
        impl<'a, I: Iterator<Item = &'a str>> Iterator for Counting<'a, I> {
            type Item = &'a str;
            fn next(&mut self) -> Option<&'a str> {
                let next = self.inner.next();
                if next.is_some() {
                    self.walked.set(self.walked.get() + 1);
                }
                next
            }
        }
        for n in [1_000usize, 100_000] {
            let text: String = (0..n)
                .map(|k| match k % 3 {
                    0 => format!("ERROR: failure {k} of kind {}\n", k % 97),
                    1 => format!("WARNING: kind{}\n", k % 89),
                    _ => routine(k) + "\n",
                })
                .collect();
            let walked = Cell::new(0);
            let lines = Counting {
                inner: text.lines(),
                walked: &walked,
            };
            assert!(excerpt(lines).is_some());
            assert_eq!(walked.get(), 2 * n);
        }
    }
}
