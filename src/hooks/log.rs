//! The hooks' own log: one line per run (time, client, event, session, what happened, how
//! long it took, and where the system says so, the run's peak memory) appended to
//! `hook.log` in the state directory, mode 0600 in a folder created 0700. A hook never
//! writes to stderr or stdout about itself: the client would show it to the user or the
//! model.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// The log file's name in the state directory.
pub(crate) const LOG_FILE: &str = "hook.log";

/// Appends `line` (a newline is added) to the log in `state_dir`; a failure to log is
/// ignored, as the hook must not fail because of its log.
pub fn append(state_dir: &Path, line: &str) {
    let created = std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir);
    if created.is_err() {
        return;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(state_dir.join(LOG_FILE));
    if let Ok(mut file) = file {
        let peak = peak_kib().map_or(String::new(), |kib| format!("; peak {kib} KiB"));
        let _ = writeln!(file, "{}{peak}", line.replace('\n', " "));
    }
}

/// This process's peak resident memory so far, in KiB: `VmHWM` of `/proc/self/status`
/// (Linux; the image's own, not the parent's it was started from). `None` elsewhere.
pub fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
