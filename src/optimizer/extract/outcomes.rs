//! Outcomes from evidence: exit codes and pass/fail markers. An attempt alone (a message
//! saying "fixed it") is never evidence of success.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;
use regex::Regex;

/// What the evidence says about a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Outcome {
    /// The run passed: exit code 0, or pass markers and no failure marker.
    Passed,
    /// The run failed: a non-zero exit code or a failure marker.
    Failed,
    /// No evidence either way.
    Unknown,
}

static FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?i:\b[1-9]\d* (?:failed|failing|failures?|errors?)\b|\bfailures?: [1-9])|\btest result: FAILED\b|^[ \t]*FAIL\b|^[ \t]*--- FAIL|\bFAILED\b|^[ \t]*npm ERR!|\bBUILD FAILURE\b|\bTraceback \(most recent call last\)|\bpanicked at\b").unwrap()
});
static PASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)(?i:\b\d+ passed\b|\ball tests passed\b)|\btest result: ok\b|^[ \t]*ok\s|^[ \t]*PASS\b|\bBUILD SUCCESS\b|^[ \t]*OK\b").unwrap()
});

/// The words of a reported failure. `still fail` needs no word boundary after it: the word
/// it begins (`still failing`) always ends in one, so for whether it matches, `still fail`
/// is `still fail\w*\b` without the Unicode `\w` class, the most costly part to compile
/// (a hook run compiles it every time).
static REPORTED_FAILURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:(?:failed|fails|didn'?t work|did not work|doesn'?t work|does not work|didn'?t help|did not help|no effect|changes nothing|revert(?:ed|ing)?|broke|broken)\b|still fail)").unwrap()
});

/// Whether a message reports that something failed (`Attempt 2 failed too`, `didn't work`,
/// `reverting`). Used only to weigh the message as a failed attempt; a message is never
/// evidence that anything passed.
pub(crate) fn reports_failure(text: &str) -> bool {
    REPORTED_FAILURE.is_match(text)
}

static STATED_CAUSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:root cause|the cause|caused by|because|is why|cannot|can'?t|can not|panics)\b|\b(?:raises|throws) (?:an? )?`?(?-i:[A-Za-z_][\w.]*(?:Error|Exception))\b")
        .unwrap()
});

/// Whether a message states why something fails (`the root cause is…`, `…because…`,
/// `…so it cannot…`, `…so the worker panics`, `…strptime raises ValueError`): a diagnosis,
/// weighed like a reported failure.
pub(crate) fn states_cause(text: &str) -> bool {
    STATED_CAUSE.is_match(text)
}

/// How many lines of `text` are evidence of failure (`3 failed`, `test result: FAILED`,
/// `FAIL`, `--- FAIL`, `FAILED`, `npm ERR!`, `BUILD FAILURE`, a traceback, a panic).
pub(crate) fn failure_lines(text: &str) -> usize {
    failure_line_ends(text).count()
}

/// Words one of which every match of [`FAILURE`] holds, ASCII case aside: `fail` and
/// `error` (its case-insensitive part; no character outside ASCII folds to one of their
/// letters), `npm err!`, `traceback`, `panicked at`.
static FAILURE_WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(["fail", "error", "npm err!", "traceback", "panicked at"])
        .expect("valid words")
});

/// The end of every line of `text` that [`FAILURE`] matches in, in order. A match never
/// spans a newline, and its `^` and `\b` see the same at a line's ends as at the text's,
/// so matching line by line is matching the text; only lines holding one of
/// [`FAILURE_WORDS`] are tried (the regex alone falls back to its slowest engine on any
/// text outside ASCII, for its Unicode `\b`).
fn failure_line_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    let mut from = 0;
    std::iter::from_fn(move || {
        while from < text.len() {
            let hit = FAILURE_WORDS.find(&text[from..])?.start() + from;
            let start = memchr::memrchr(b'\n', &text.as_bytes()[..hit]).map_or(0, |n| n + 1);
            let end =
                memchr::memchr(b'\n', &text.as_bytes()[hit..]).map_or(text.len(), |n| hit + n);
            from = end + 1;
            if FAILURE.is_match(&text[start..end]) {
                return Some(end);
            }
        }
        None
    })
}

/// Words one of which every match of [`PASS`] holds, ASCII case aside: `pa` (of `passed` and
/// `PASS`; no character outside ASCII folds to `p` or `a`), `ok`, `build success`.
static PASS_WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build(["pa", "ok", "build success"])
        .expect("valid words")
});

/// Whether [`PASS`] matches in `text`, tried only on the lines holding one of
/// [`PASS_WORDS`], each with its newline: a match spans no newline but the one `ok\s` may end
/// with, and `^` and `\b` see at a line's start what they see after a newline, so matching
/// line by line is matching the text (the regex alone falls back to its slowest engine on any
/// text outside ASCII, for its Unicode `\b`).
fn passes(text: &str) -> bool {
    let mut from = 0;
    while from < text.len() {
        let Some(hit) = PASS_WORDS.find(&text[from..]) else {
            return false;
        };
        let hit = hit.start() + from;
        let start = memchr::memrchr(b'\n', &text.as_bytes()[..hit]).map_or(0, |n| n + 1);
        let end =
            memchr::memchr(b'\n', &text.as_bytes()[hit..]).map_or(text.len(), |n| hit + n + 1);
        if PASS.is_match(&text[start..end]) {
            return true;
        }
        from = end;
    }
    false
}

/// The outcome of a tool run from its exit code and output.
pub(crate) fn run_outcome(exit_code: Option<i64>, output: &str) -> Outcome {
    let failed_marker = failure_line_ends(output).next().is_some();
    match exit_code {
        Some(0) if failed_marker => Outcome::Failed,
        Some(0) => Outcome::Passed,
        Some(_) => Outcome::Failed,
        None if failed_marker => Outcome::Failed,
        None if passes(output) => Outcome::Passed,
        None => Outcome::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_decide_first() {
        assert_eq!(run_outcome(Some(1), "all good"), Outcome::Failed);
        assert_eq!(run_outcome(Some(0), "Tests: 12 passed"), Outcome::Passed);
    }

    #[test]
    fn failure_markers_beat_a_zero_exit() {
        assert_eq!(
            run_outcome(Some(0), "Tests: 1 failed, 3 passed"),
            Outcome::Failed
        );
        assert_eq!(
            run_outcome(None, "test result: FAILED. 1 passed; 1 failed"),
            Outcome::Failed
        );
    }

    #[test]
    fn markers_without_exit_code() {
        assert_eq!(
            run_outcome(None, "test result: ok. 3 passed; 0 failed"),
            Outcome::Passed
        );
        assert_eq!(
            run_outcome(None, "--- FAIL: TestX (0.00s)"),
            Outcome::Failed
        );
    }

    #[test]
    fn failure_lines_are_counted_once_each() {
        assert_eq!(
            failure_lines("a\nFAILED x FAILED y\n  --- FAIL: T\nok\n2 failed"),
            3
        );
        assert_eq!(failure_lines("all fine\n0 failed"), 0);
    }

    #[test]
    fn failure_reports_in_words() {
        assert!(reports_failure("Attempt 2 failed too: it still fails"));
        assert!(reports_failure("That didn't work, reverting."));
        assert!(!reports_failure("Fixed it, all tests pass now"));
    }

    #[test]
    fn reported_failure_matches_where_its_form_with_a_word_after_still_fail_did() {
        let before = Regex::new(r"(?i)\b(?:failed|fails|still fail\w*|didn'?t work|did not work|doesn'?t work|does not work|didn'?t help|did not help|no effect|changes nothing|revert(?:ed|ing)?|broke|broken)\b").unwrap();
        let texts = [
            "it still fails",
            "still failing after the patch",
            "still fail",
            "Still Failing\u{e9}x",
            "still fail\u{e9}",
            "xstill fail",
            "\u{e9}still fails",
            "it failed.",
            "failedx",
            "broken\u{e9}",
            "STILL FAIL_2 now",
            "nothing to see",
        ];
        for text in texts {
            assert_eq!(reports_failure(text), before.is_match(text), "{text:?}");
        }
        // A canary: the texts hold both answers.
        assert!(
            texts.iter().any(|t| reports_failure(t)) && !texts.iter().all(|t| reports_failure(t))
        );
    }

    #[test]
    fn a_diagnosis_states_a_cause() {
        assert!(states_cause(
            "The list is read whole, so it cannot arrive in time."
        ));
        assert!(states_cause("It fails because the loader is lazy."));
        assert!(!states_cause("Let me look at the code."));
        assert!(states_cause("For February strptime raises ValueError."));
        assert!(states_cause("the worker panics, the ledger returns 502"));
        assert!(!states_cause("It raises an error somewhere, I will look."));
    }

    #[test]
    fn an_attempt_is_not_evidence() {
        assert_eq!(
            run_outcome(None, "I fixed the bug, it should pass now"),
            Outcome::Unknown
        );
        assert_eq!(run_outcome(None, ""), Outcome::Unknown);
        assert_eq!(run_outcome(None, "0 failed"), Outcome::Unknown);
    }

    /// The lines [`failure_lines`] counts, by the regex alone over the whole text.
    fn failure_lines_by_regex(text: &str) -> usize {
        let mut lines = 0;
        let mut counted_to = 0;
        for m in FAILURE.find_iter(text) {
            if m.start() >= counted_to {
                lines += 1;
                counted_to = text[m.end()..]
                    .find('\n')
                    .map_or(text.len(), |n| m.end() + n + 1);
            }
        }
        lines
    }

    #[test]
    fn line_by_line_counts_what_the_regex_counts_on_the_whole_text() {
        let texts = [
            "a\nFAILED x FAILED y\n  --- FAIL: T\nok\n2 failed",
            "\u{e9}3 failed\n\u{e9}FAILED\nFAILED\u{e9}\n3 errors\u{e9}\n3 ERRORS\r\n",
            "\u{2713} 12 passed\n\u{2717} 1 Failed \u{2500}\u{2500}\nnpm ERR! code 1\nNPM ERR! no",
            "Traceback (most recent call last):\n  File \"a.py\"\ntraceback (most recent call last)",
            "thread 'main' panicked at src/a.rs:1:1\n\tFAIL\tpkg\nfailures: 2\nfailure: 0",
            "test result: FAILED. 1 passed\nBUILD FAILURE\n\u{fc}BUILD FAILURE\nerror: x\nfail",
            "no newline at the end: 1 failing",
            "",
            "\n\n",
            "errorfail 1 error\u{0301} 1 failures\n",
        ];
        for text in texts {
            assert_eq!(
                failure_lines(text),
                failure_lines_by_regex(text),
                "{text:?}"
            );
            assert_eq!(
                failure_line_ends(text).next().is_some(),
                FAILURE.is_match(text),
                "{text:?}"
            );
        }
        // A canary: next to a letter outside ASCII there is no word boundary (an ASCII `\b`
        // would count 5 lines here).
        assert_eq!(failure_lines_by_regex(texts[1]), 1);
    }

    #[test]
    fn line_by_line_passes_where_the_regex_passes_on_the_whole_text() {
        let texts = [
            "a\nok\nb",
            "ok",
            "  ok",
            "  ok\r\n",
            "x\n\tok \u{e9}",
            "\u{e9}\nOK\n",
            "\u{e9}OK",
            "OKAY\nOK\u{e9}",
            "3 passed",
            "\u{e9}3 passed\n",
            "3 pa\u{17f}\u{17f}ed\u{e9}",
            "3 PASSED in 0.2s",
            "All Tests Passed",
            "all tests passedx\n12 passedy",
            "test result: ok. 3 passed",
            "\u{2713} PASS src/a.test.ts\nPASSED",
            "PASSING\n\u{e9} PASS\u{e9}",
            "BUILD SUCCESS\u{e9}",
            "\u{e9}BUILD SUCCESS",
            "path package parse\nbook look",
            "",
            "\n\n",
        ];
        for text in texts {
            assert_eq!(passes(text), PASS.is_match(text), "{text:?}");
        }
        // A canary: the texts hold both answers.
        assert!(texts.iter().any(|t| passes(t)) && texts.iter().any(|t| !passes(t)));
    }

    #[test]
    fn only_ascii_letters_fold_to_the_letters_of_the_pass_words() {
        let letters = Regex::new("(?i)^[pa]$").unwrap();
        let folding: Vec<char> = (0..=char::MAX as u32)
            .filter_map(char::from_u32)
            .filter(|c| letters.is_match(c.encode_utf8(&mut [0; 4])))
            .collect();
        assert_eq!(folding.iter().collect::<String>(), "APap");
    }

    #[test]
    fn only_ascii_letters_fold_to_the_letters_of_the_failure_words() {
        let letters = Regex::new("(?i)^[failero]$").unwrap();
        let folding: Vec<char> = (0..=char::MAX as u32)
            .filter_map(char::from_u32)
            .filter(|c| letters.is_match(c.encode_utf8(&mut [0; 4])))
            .collect();
        assert_eq!(folding.iter().collect::<String>(), "AEFILORaefilor");
        // A canary: `s` does fold to a character outside ASCII (`ſ`).
        assert!(Regex::new("(?i)^s$").unwrap().is_match("\u{17f}"));
    }
}
