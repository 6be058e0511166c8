//! Running a command a test expects to succeed.

use std::process::{Command, Output};

/// Runs `cmd` to completion and returns its output; fails the test with the command's
/// stderr when it does not exit successfully.
pub(crate) fn run_ok(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
