//! Test outcomes named in a command's output: the failing tests the optimizer's extractor
//! recognises (vitest/jest, pytest, cargo test and nextest, go test, JUnit), and the passing
//! tests of verbose pytest (`path::name PASSED`), cargo test (`test name ... ok`) and go test
//! (`--- PASS: TestX`). A test named both ways counts as failed.

use std::sync::LazyLock;

use regex::Regex;

use crate::optimizer::extract::failing_tests::failing_tests;
use crate::optimizer::records::TestStatus;

static PASSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:(\S+::\S+)\s+PASSED|test\s+(\S+)\s+\.\.\.\s+ok$|\s*--- PASS:\s+(\S+))")
        .unwrap()
});

/// The tests `output` reports, in order (failures first), each once.
pub fn test_outcomes(output: &str) -> Vec<(String, TestStatus)> {
    let mut out: Vec<(String, TestStatus)> = failing_tests(output)
        .into_iter()
        .map(|name| (name, TestStatus::Failed))
        .collect();
    if !output.contains("PASSED") && !output.contains("... ok") && !output.contains("--- PASS") {
        return out;
    }
    for c in PASSING.captures_iter(output) {
        let Some(name) = c.iter().skip(1).flatten().next() else {
            continue;
        };
        let name = name.as_str().trim_end_matches('\r');
        if !out.iter().any(|(n, _)| n == name) {
            out.push((name.to_string(), TestStatus::Passed));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passes_and_failures_of_three_runners() {
        let out = "tests/a.py::test_one PASSED [ 50%]\ntests/a.py::test_two FAILED [100%]\nFAILED tests/a.py::test_two - assert 1 == 2\ntest parse::ok_case ... ok\n--- PASS: TestX (0.00s)\n";
        assert_eq!(
            test_outcomes(out),
            [
                ("tests/a.py::test_two".to_string(), TestStatus::Failed),
                ("tests/a.py::test_one".to_string(), TestStatus::Passed),
                ("parse::ok_case".to_string(), TestStatus::Passed),
                ("TestX".to_string(), TestStatus::Passed),
            ]
        );
        assert!(test_outcomes("nothing ran").is_empty());
    }
}
