//! Failing tests named in runner output: vitest/jest, pytest, cargo test and nextest,
//! go test, JUnit (Maven surefire and Gradle).

use std::sync::LazyLock;

use regex::Regex;

/// A runner's line pattern, compiled on first use, and the strings a line must hold for it
/// to match and a test it must pass: a line without them is not tried (some patterns take
/// milliseconds to compile, and most outputs never need them; a hook run is a process of
/// its own and compiles every pattern it tries).
struct Pattern {
    needs: &'static [&'static str],
    may_match: fn(&str) -> bool,
    regex: LazyLock<Regex>,
}

/// A [`Pattern`] of `needs` (and the test `may_match`, else none) and the regex `$re`.
macro_rules! pattern {
    ($needs:expr, $re:expr) => {
        pattern!($needs, |_| true, $re)
    };
    ($needs:expr, $may_match:expr, $re:expr) => {
        Pattern {
            needs: $needs,
            may_match: $may_match,
            regex: LazyLock::new(|| Regex::new($re).unwrap()),
        }
    };
}

/// Whether `line` holds a `:` followed by a digit: an ASCII one or any character outside
/// ASCII (where `\d`'s other digits are).
fn colon_then_digit(line: &str) -> bool {
    line.split(':').skip(1).any(|after| {
        after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || !c.is_ascii())
    })
}

static PATTERNS: [Pattern; 11] = [
    // nextest: `FAIL [   0.004s] crate a::b`
    pattern!(&["FAIL", "["], r"^\s*FAIL\s+\[\s*[\d.]+s\]\s+(.+)$"),
    // vitest / jest: `FAIL src/a.test.ts > suite > name`, `× name`, `● Suite › name`
    pattern!(&[], r"^\s*(?:FAIL|×|✗|✕)\s+(.+?)(?:\s+\d+m?s)?$"),
    pattern!(&["●", "›"], r"^\s*●\s+(.+›.+)$"),
    // pytest: `FAILED tests/test_a.py::test_x - AssertionError`, `tests/x.py::t FAILED`
    pattern!(&["FAILED", "::"], r"^FAILED\s+(\S+::\S+)"),
    pattern!(&["FAILED", "::"], r"^(\S+::\S+)\s+FAILED"),
    // cargo test: `test a::b ... FAILED`, `---- a::b stdout ----`
    pattern!(
        &["test", "...", "FAILED"],
        r"^test\s+(\S+)\s+\.\.\.\s+FAILED"
    ),
    pattern!(&["----", "stdout"], r"^----\s+(\S+)\s+stdout\s+----$"),
    // go test: `--- FAIL: TestX (0.00s)`
    pattern!(&["--- FAIL:"], r"^\s*--- FAIL:\s+(\S+)"),
    // JUnit: `testX(com.a.XTest)  Time elapsed: 0.1 s  <<< FAILURE!`, `[ERROR] com.a.XTest.testX:42 …`
    pattern!(
        &["Time elapsed:", "<<<"],
        r"^(?:\[ERROR\]\s+)?(\w+\([\w.$]+\))\s+Time elapsed:.*<<<\s+(?:FAILURE|ERROR)!"
    ),
    pattern!(
        &[".", ":"],
        colon_then_digit,
        r"^(?:\[ERROR\]\s+)?([\w$]+(?:\.[\w$]+)+\.\w+):\d+\s"
    ),
    // Gradle: `com.a.XTest > testX FAILED`
    pattern!(&[" > ", " FAILED"], r"^(\S+ > .+) FAILED$"),
];

static MAY_HAVE: LazyLock<Regex> = LazyLock::new(|| Regex::new("FAIL|ERROR|----|×|✗|✕|●").unwrap());

/// The names of failing tests in `text`, in order of first appearance, without repeats.
pub(crate) fn failing_tests(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if !MAY_HAVE.is_match(text) {
        return out;
    }
    for line in text.lines() {
        if !line.contains("FAIL")
            && !line.contains("ERROR")
            && !line.contains("----")
            && !line.contains(['×', '✗', '✕', '●'])
        {
            continue;
        }
        for pattern in &PATTERNS {
            if !pattern.needs.iter().all(|n| line.contains(n)) || !(pattern.may_match)(line) {
                continue;
            }
            if let Some(c) = pattern.regex.captures(line) {
                let name = c[1].trim().to_string();
                if !out.contains(&name) {
                    out.push(name);
                }
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vitest_and_jest() {
        assert_eq!(
            failing_tests(" FAIL  src/billing.test.ts > invoice > rounds totals 12ms\n × applies discount\n  ● Invoice › rounds totals\n ✓ passes"),
            vec!["src/billing.test.ts > invoice > rounds totals", "applies discount", "Invoice › rounds totals"]
        );
    }

    #[test]
    fn pytest() {
        assert_eq!(
            failing_tests("FAILED tests/test_api.py::test_login - AssertionError: 401\ntests/test_db.py::test_x FAILED [50%]"),
            vec!["tests/test_api.py::test_login", "tests/test_db.py::test_x"]
        );
    }

    #[test]
    fn cargo_and_nextest() {
        assert_eq!(
            failing_tests("test parse::tests::empty ... FAILED\n---- parse::tests::empty stdout ----\n        FAIL [   0.004s] ctxopt parse::tests::huge"),
            vec!["parse::tests::empty", "ctxopt parse::tests::huge"]
        );
    }

    #[test]
    fn go_test() {
        assert_eq!(
            failing_tests("--- FAIL: TestParse (0.00s)\nFAIL\tgithub.com/a/b\t0.1s"),
            vec!["TestParse", "github.com/a/b\t0.1s"]
        );
    }

    #[test]
    fn junit() {
        assert_eq!(
            failing_tests("testTotal(com.acme.BillingTest)  Time elapsed: 0.02 s  <<< FAILURE!\n[ERROR] com.acme.BillingTest.testRound:42 expected 3\ncom.acme.CartTest > addsItem FAILED"),
            vec!["testTotal(com.acme.BillingTest)", "com.acme.BillingTest.testRound", "com.acme.CartTest > addsItem"]
        );
    }

    #[test]
    fn passing_output_names_nothing() {
        assert!(
            failing_tests("test a ... ok\n ✓ works\nPASS src/a.test.ts\n--- PASS: TestX")
                .is_empty()
        );
    }

    #[test]
    fn every_pattern_matches_only_lines_holding_what_it_needs() {
        let lines = [
            " FAIL  src/billing.test.ts > invoice > rounds totals 12ms",
            " × applies discount",
            "  ● Invoice › rounds totals",
            "FAILED tests/test_api.py::test_login - AssertionError: 401",
            "tests/test_db.py::test_x FAILED [50%]",
            "test parse::tests::empty ... FAILED",
            "---- parse::tests::empty stdout ----",
            "        FAIL [   0.004s] ctxopt parse::tests::huge",
            "--- FAIL: TestParse (0.00s)",
            "testTotal(com.acme.BillingTest)  Time elapsed: 0.02 s  <<< FAILURE!",
            "[ERROR] com.acme.BillingTest.testRound:42 expected 3",
            "[ERROR] com.acme.BillingTest.testRound:\u{664}\u{662} expected 3",
            "[ERROR] com.acme.BillingTest.testRound: expected 3:x",
            "com.acme.CartTest > addsItem FAILED",
        ];
        for (i, pattern) in PATTERNS.iter().enumerate() {
            let matched: Vec<&str> = lines
                .iter()
                .copied()
                .filter(|l| pattern.regex.is_match(l))
                .collect();
            assert!(!matched.is_empty(), "pattern {i} matches no sample");
            for line in matched {
                for need in pattern.needs {
                    assert!(line.contains(need), "pattern {i}: {line:?} lacks {need:?}");
                }
                assert!(
                    (pattern.may_match)(line),
                    "pattern {i}: {line:?} fails its test"
                );
            }
        }
        // A canary: the JUnit line number written in Arabic-Indic digits matches, and the
        // line without a digit after a colon does not.
        assert!(PATTERNS[9].regex.is_match(lines[11]) && colon_then_digit(lines[11]));
        assert!(!PATTERNS[9].regex.is_match(lines[12]) && !colon_then_digit(lines[12]));
    }
}
