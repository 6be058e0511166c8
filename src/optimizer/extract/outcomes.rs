//! Outcomes from evidence: exit codes and pass/fail markers. An attempt alone (a message
//! saying "fixed it") is never evidence of success.

use std::sync::LazyLock;

use regex::Regex;

/// What the evidence says about a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// The run passed: exit code 0, or pass markers and no failure marker.
    Passed,
    /// The run failed: a non-zero exit code or a failure marker.
    Failed,
    /// No evidence either way.
    Unknown,
}

static FAIL_COUNT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i:\b([1-9]\d*) (?:failed|failing|failures?|errors?)\b|\bfailures?: [1-9])|\btest result: FAILED\b|^FAIL\b|^--- FAIL|\bFAILED\b|^npm ERR!|\bBUILD FAILURE\b|\bTraceback \(most recent call last\)|\bpanicked at\b").unwrap()
});
static PASS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b\d+ passed\b|\btest result: ok\b|^ok\s|^PASS\b|\bBUILD SUCCESS\b|\ball tests passed\b|^OK\b").unwrap()
});

/// Whether a line is evidence of failure.
pub fn is_failure_line(line: &str) -> bool {
    FAIL_COUNT.is_match(line.trim_start())
}

/// The outcome of a tool run from its exit code and output.
pub fn run_outcome(exit_code: Option<i64>, output: &str) -> Outcome {
    let failed_marker = output.lines().any(is_failure_line);
    match exit_code {
        Some(0) if failed_marker => Outcome::Failed,
        Some(0) => Outcome::Passed,
        Some(_) => Outcome::Failed,
        None if failed_marker => Outcome::Failed,
        None if output.lines().any(|l| PASS.is_match(l.trim_start())) => Outcome::Passed,
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
    fn an_attempt_is_not_evidence() {
        assert_eq!(
            run_outcome(None, "I fixed the bug, it should pass now"),
            Outcome::Unknown
        );
        assert_eq!(run_outcome(None, ""), Outcome::Unknown);
        assert_eq!(run_outcome(None, "0 failed"), Outcome::Unknown);
    }
}
