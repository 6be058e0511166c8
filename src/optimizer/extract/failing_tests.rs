//! Failing tests named in runner output: vitest/jest, pytest, cargo test and nextest,
//! go test, JUnit (Maven surefire and Gradle).

use std::sync::LazyLock;

use regex::Regex;

static PATTERNS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // nextest: `FAIL [   0.004s] crate a::b`
        r"^\s*FAIL\s+\[\s*[\d.]+s\]\s+(.+)$",
        // vitest / jest: `FAIL src/a.test.ts > suite > name`, `× name`, `● Suite › name`
        r"^\s*(?:FAIL|×|✗|✕)\s+(.+?)(?:\s+\d+m?s)?$",
        r"^\s*●\s+(.+›.+)$",
        // pytest: `FAILED tests/test_a.py::test_x - AssertionError`, `tests/x.py::t FAILED`
        r"^FAILED\s+(\S+::\S+)",
        r"^(\S+::\S+)\s+FAILED",
        // cargo test: `test a::b ... FAILED`, `---- a::b stdout ----`
        r"^test\s+(\S+)\s+\.\.\.\s+FAILED",
        r"^----\s+(\S+)\s+stdout\s+----$",
        // go test: `--- FAIL: TestX (0.00s)`
        r"^\s*--- FAIL:\s+(\S+)",
        // JUnit: `testX(com.a.XTest)  Time elapsed: 0.1 s  <<< FAILURE!`, `[ERROR] com.a.XTest.testX:42 …`
        r"^(?:\[ERROR\]\s+)?(\w+\([\w.$]+\))\s+Time elapsed:.*<<<\s+(?:FAILURE|ERROR)!",
        r"^(?:\[ERROR\]\s+)?([\w$]+(?:\.[\w$]+)+\.\w+):\d+\s",
        // Gradle: `com.a.XTest > testX FAILED`
        r"^(\S+ > .+) FAILED$",
    ]
    .iter()
    .map(|p| Regex::new(p).unwrap())
    .collect()
});

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
        for re in PATTERNS.iter() {
            if let Some(c) = re.captures(line) {
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
}
