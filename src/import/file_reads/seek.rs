//! Where a change that does not say where it is goes in the lines seen of a file: the way
//! Codex CLI's `apply_patch` places a hunk, on a view that may have gaps.
//!
//! `apply_patch` places each hunk of a file in order, from where the one before it ended:
//! first after the line its `@@ …` header names (when it names one), then at the first run
//! of lines equal to its old lines — exactly, else ignoring trailing spaces, else ignoring
//! spaces at both ends, else with typographic dashes, quotes and spaces read as ASCII. A
//! view holds only the lines the session saw, so a run found in it is the file's first
//! only when every line between the place the search starts and the run was seen; else it
//! is taken when it is the only run the view holds there.

use std::collections::BTreeMap;

/// A hunk that does not say where it is: the line it comes after (a Codex `@@ def f():`
/// header), its old lines and its new lines, context included.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct UnplacedHunk<'a> {
    /// The text of its `@@` header, when it names a line.
    pub(crate) anchor: Option<&'a str>,
    /// The lines it replaces (context and removed lines).
    pub(crate) old: Vec<&'a str>,
    /// The lines it puts there (context and added lines).
    pub(crate) new: Vec<&'a str>,
}

/// Where the search for a hunk starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Where the hunk before it ended: a patch's hunks, in the file's order (`apply_patch`).
    Patch,
    /// At the top, each hunk searched in the file as the ones before it left it: edits
    /// made one after the other (Claude Code's `MultiEdit`).
    Edits,
}

/// How alike two lines must be, strictest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Likeness {
    Exact,
    TrailingSpace,
    OuterSpace,
    Typography,
}

impl Likeness {
    const LADDER: [Likeness; 4] = [
        Likeness::Exact,
        Likeness::TrailingSpace,
        Likeness::OuterSpace,
        Likeness::Typography,
    ];

    fn same(self, seen: &str, wanted: &str) -> bool {
        match self {
            Likeness::Exact => seen == wanted,
            Likeness::TrailingSpace => seen.trim_end() == wanted.trim_end(),
            Likeness::OuterSpace => seen.trim() == wanted.trim(),
            Likeness::Typography => seen
                .trim()
                .chars()
                .map(ascii)
                .eq(wanted.trim().chars().map(ascii)),
        }
    }
}

/// A typographic dash, quote or space as its ASCII form (as `apply_patch` reads them).
fn ascii(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' => '-',
        '\u{2018}'..='\u{201B}' => '\'',
        '\u{201C}'..='\u{201F}' => '"',
        '\u{00A0}' | '\u{2002}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        c => c,
    }
}

/// The first line number at or after `from` where `pattern` runs over consecutive lines of
/// `seen`, trying each [`Likeness`] in turn; `None` when no run is found, or when the first
/// one found may not be the file's first (a line between `from` and it was not seen) and it
/// is not the only one the view holds.
pub(crate) fn seek(seen: &BTreeMap<usize, String>, from: usize, pattern: &[&str]) -> Option<usize> {
    let first = *pattern.first()?;
    for likeness in Likeness::LADDER {
        let at = |n: usize| {
            pattern.iter().enumerate().all(|(k, wanted)| {
                n.checked_add(k)
                    .and_then(|line| seen.get(&line))
                    .is_some_and(|text| likeness.same(text, wanted))
            })
        };
        let mut runs = seen
            .range(from..)
            .filter(|(_, text)| likeness.same(text, first))
            .map(|(&n, _)| n)
            .filter(|&n| at(n));
        let Some(found) = runs.next() else {
            continue;
        };
        let all_seen_before = seen.range(from..found).count() == found - from;
        return (all_seen_before || runs.next().is_none()).then_some(found);
    }
    None
}

/// Applies `hunks` to `seen` one after the other, as `apply_patch` does: each searched from
/// where `order` says (and after its anchor line), at the run [`seek`] finds (a hunk ending
/// in an empty line is tried again without it), the lines after it moved by the difference.
/// `false` when a hunk is not placed so, or adds lines at an unknown end of the file (no old
/// lines); `seen` is then partly changed and no longer the file.
pub(crate) fn apply_unplaced(
    seen: &mut BTreeMap<usize, String>,
    hunks: &[UnplacedHunk],
    order: Order,
) -> bool {
    let mut from = 1;
    for hunk in hunks {
        if order == Order::Edits {
            from = 1;
        }
        if let Some(anchor) = hunk.anchor.filter(|a| !a.trim().is_empty()) {
            match seek(seen, from, &[anchor]) {
                Some(at) => from = at + 1,
                None => return false,
            }
        }
        let (mut old, mut new) = (&hunk.old[..], &hunk.new[..]);
        let mut found = seek(seen, from, old);
        if found.is_none() && old.last() == Some(&"") {
            old = &old[..old.len() - 1];
            if new.last() == Some(&"") {
                new = &new[..new.len() - 1];
            }
            found = seek(seen, from, old);
        }
        let Some(at) = found else {
            return false;
        };
        replace_at(seen, at, old.len(), new);
        from = at + new.len();
    }
    true
}

/// Puts `new` in place of the `old_len` lines of `seen` from line `first` on; the lines
/// after them move by the difference.
pub(crate) fn replace_at(
    seen: &mut BTreeMap<usize, String>,
    first: usize,
    old_len: usize,
    new: &[&str],
) {
    let tail = seen.split_off(&(first + old_len));
    seen.retain(|&n, _| n < first);
    seen.extend(
        new.iter()
            .enumerate()
            .map(|(k, t)| (first + k, t.to_string())),
    );
    seen.extend(tail.into_iter().map(|(n, t)| (n - old_len + new.len(), t)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(lines: &[(usize, &str)]) -> BTreeMap<usize, String> {
        lines.iter().map(|&(n, t)| (n, t.to_string())).collect()
    }

    #[test]
    fn a_run_is_found_exactly_before_it_is_found_loosely() {
        let seen = view(&[(1, "a "), (2, "b"), (3, "a"), (4, "b")]);
        assert_eq!(seek(&seen, 1, &["a", "b"]), Some(3));
        // The canary: with no exact run, trailing spaces are ignored.
        let seen = view(&[(1, "a "), (2, "b")]);
        assert_eq!(seek(&seen, 1, &["a", "b"]), Some(1));
        assert_eq!(seek(&seen, 1, &["  a", "b"]), Some(1), "outer spaces");
        assert_eq!(seek(&seen, 1, &["x", "b"]), None);
    }

    #[test]
    fn typographic_dashes_quotes_and_spaces_read_as_ascii() {
        let seen = view(&[(7, "say(\u{201C}hi\u{201D}) \u{2014} it\u{2019}s\u{00A0}ok")]);
        assert_eq!(seek(&seen, 1, &["say(\"hi\") - it's ok"]), Some(7));
        // The canary: another letter is not a quote.
        assert_eq!(seek(&seen, 1, &["say(\"hi\") - its ok"]), None);
    }

    #[test]
    fn the_first_run_is_taken_only_when_no_unseen_line_comes_before_it() {
        let twice = view(&[(1, "x"), (2, "y"), (3, "x")]);
        assert_eq!(seek(&twice, 1, &["x"]), Some(1));
        assert_eq!(
            seek(&twice, 2, &["x"]),
            Some(3),
            "from where the search starts"
        );
        // Line 1 unseen: an `x` there would be the file's first, so two runs are too many…
        let gap = view(&[(2, "x"), (3, "y"), (4, "x")]);
        assert_eq!(seek(&gap, 1, &["x"]), None);
        // …and one is taken, as a change found once among the lines seen always was.
        assert_eq!(seek(&gap, 1, &["y"]), Some(3));
    }

    #[test]
    fn hunks_apply_in_order_after_their_anchors() {
        let mut seen = view(&[
            (1, "def f():"),
            (2, "    return 1"),
            (3, "def g():"),
            (4, "    return 1"),
            (5, "# end"),
        ]);
        let hunks = [
            UnplacedHunk {
                anchor: Some("def g():"),
                old: vec!["    return 1", ""],
                new: vec!["    return 2", ""],
            },
            UnplacedHunk {
                anchor: None,
                old: vec!["# end"],
                new: vec!["# end", "# really"],
            },
        ];
        assert!(apply_unplaced(&mut seen, &hunks, Order::Patch));
        let lines: Vec<&str> = seen.values().map(String::as_str).collect();
        assert_eq!(
            lines,
            [
                "def f():",
                "    return 1",
                "def g():",
                "    return 2",
                "# end",
                "# really"
            ]
        );
        // The canary: an anchor the view does not hold places nothing.
        let missing = [UnplacedHunk {
            anchor: Some("def h():"),
            old: vec!["    return 1"],
            new: vec![],
        }];
        assert!(!apply_unplaced(&mut seen, &missing, Order::Patch));
        // Lines added at an end of the file the view cannot know are not placed either.
        let at_end = [UnplacedHunk {
            anchor: None,
            old: vec![],
            new: vec!["z"],
        }];
        assert!(!apply_unplaced(&mut seen, &at_end, Order::Patch));
    }

    #[test]
    fn edits_made_one_after_the_other_are_each_searched_from_the_top() {
        let lines = view(&[(1, "a"), (2, "b")]);
        // The second edit changes a line above the first one's.
        let hunks = [
            UnplacedHunk {
                anchor: None,
                old: vec!["b"],
                new: vec!["b2"],
            },
            UnplacedHunk {
                anchor: None,
                old: vec!["a"],
                new: vec!["a2"],
            },
        ];
        let mut edits = lines.clone();
        assert!(apply_unplaced(&mut edits, &hunks, Order::Edits));
        assert_eq!(edits, view(&[(1, "a2"), (2, "b2")]));
        // The canary: a patch's hunks come in the file's order, so the second is not found.
        let mut patch = lines;
        assert!(!apply_unplaced(&mut patch, &hunks, Order::Patch));
    }
}
