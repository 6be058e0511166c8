//! The hooks' own log: one line per run (time, client, event, session, what happened, how
//! long it took, the CPU time it used and, where the system says so, its peak memory) appended to
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
        let cpu = cpu_ms().map_or(String::new(), |ms| format!("; cpu {ms} ms"));
        let peak = peak_kib().map_or(String::new(), |kib| format!("; peak {kib} KiB"));
        let _ = writeln!(file, "{}{cpu}{peak}", line.replace('\n', " "));
    }
}

/// This process's peak resident memory so far, in KiB: `VmHWM` of `/proc/self/status`
/// (Linux; the image's own, not the parent's it was started from). `None` elsewhere.
pub fn peak_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time this process has used so far (user and system, all its threads), in
/// milliseconds: beside a run's wall-clock time, it tells the time it worked from the time it
/// waited (for a core, a disk, a lock). `None` where the system does not say.
pub fn cpu_ms() -> Option<u64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: `getrusage` writes a `rusage` into the pointer it is given, which points at
    // memory of that type and size; it is read only when the call succeeded.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let ms = |t: libc::timeval| t.tv_sec as u64 * 1000 + t.tv_usec as u64 / 1000;
    Some(ms(usage.ru_utime) + ms(usage.ru_stime))
}
