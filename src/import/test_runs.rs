//! Test outcomes named in a command's output: the failing tests the optimizer's extractor
//! recognises (vitest/jest, pytest, cargo test and nextest, go test, JUnit), and the passing
//! tests of verbose pytest (`path::name PASSED`), cargo test (`test name ... ok`) and go test
//! (`--- PASS: TestX`). A test named both ways counts as failed.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::optimizer::extract::failing_tests::failing_tests;
use crate::records::SessionRecord;
use crate::records::{Common, TestResult, TestStatus, ToolOutput};

static PASSING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:(\S+::\S+)\s+PASSED|test\s+(\S+)\s+\.\.\.\s+ok$|\s*--- PASS:\s+(\S+))")
        .unwrap()
});

/// The tests `output` reports, in order (failures first), each once.
pub(crate) fn test_outcomes(output: &str) -> Vec<(String, TestStatus)> {
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

/// One command or tool run.
pub(crate) struct Run {
    /// The command (or the tool's name).
    pub(crate) tool: String,
    /// The call's arguments, when it has any.
    pub(crate) args: Option<Value>,
    /// What it printed.
    pub(crate) output: String,
    /// Its exit status, when known.
    pub(crate) exit_code: Option<i64>,
}

/// What a tool output is called when its session names no tool or command (a blank
/// name or an empty script): the records format needs a name.
pub(crate) const UNNAMED_TOOL: &str = "tool";

/// The records of a run: a test result per test its output names, then the tool output,
/// each with the next part of `common`.
pub(crate) fn run_records(
    run: Run,
    common: &mut impl FnMut(&str) -> Common,
    out: &mut Vec<SessionRecord>,
) {
    for (name, status) in test_outcomes(&run.output) {
        out.push(SessionRecord::TestResult(TestResult {
            common: common("test"),
            name,
            status,
            output: None,
        }));
    }
    out.push(SessionRecord::ToolOutput(ToolOutput {
        common: common("out"),
        tool: if run.tool.trim().is_empty() {
            UNNAMED_TOOL.to_string()
        } else {
            run.tool
        },
        args: run.args,
        output: run.output,
        exit_code: run.exit_code,
        cwd: None,
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_without_a_name_gets_one() {
        let mut out = Vec::new();
        let run = Run {
            tool: " ".into(),
            args: None,
            output: "ok".into(),
            exit_code: Some(0),
        };
        run_records(run, &mut |_| Common::default(), &mut out);
        let Some(SessionRecord::ToolOutput(t)) = out.last() else {
            panic!("{out:?}")
        };
        assert_eq!(t.tool, UNNAMED_TOOL);
    }

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
