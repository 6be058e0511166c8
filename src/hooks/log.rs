//! The hooks' own log: one line per run (time, client, event, session, what happened, how
//! long it took) appended to `hook.log` in the state directory, mode 0600. A hook never
//! writes to stderr or stdout about itself: the client would show it to the user or the
//! model.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The log file's name in the state directory.
pub(crate) const LOG_FILE: &str = "hook.log";

/// Appends `line` (a newline is added) to the log in `state_dir`; a failure to log is
/// ignored, as the hook must not fail because of its log.
pub fn append(state_dir: &Path, line: &str) {
    if std::fs::create_dir_all(state_dir).is_err() {
        return;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(state_dir.join(LOG_FILE));
    if let Ok(mut file) = file {
        let _ = writeln!(file, "{}", line.replace('\n', " "));
    }
}
