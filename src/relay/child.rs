//! Starting and stopping the wrapped server.
//!
//! The server runs in its own process group, so a terminal's Ctrl-C reaches only the proxy,
//! which forwards it once to the whole group (an `npx` wrapper and the `node` it starts).
//! On Linux the server also gets `SIGKILL` when the proxy dies without cleaning up
//! (`PR_SET_PDEATHSIG`), so even a killed proxy leaves no orphaned server. When the server
//! exits, whatever it left running in its group gets `SIGTERM`, and `SIGKILL` if it still
//! holds the server's stdout open after the drain period.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};

use crate::framelog::ExitStatus;

/// A server that could not be started.
#[derive(Debug, thiserror::Error)]
#[error("cannot start `{command}`: {source}")]
#[non_exhaustive]
pub(crate) struct SpawnError {
    /// The command as given.
    pub(crate) command: String,
    /// Why.
    #[source]
    pub(crate) source: io::Error,
}

impl SpawnError {
    /// The shell's convention: 127 when the command was not found, 126 when it was found
    /// but could not be executed.
    pub(crate) fn exit_code(&self) -> u8 {
        if self.source.kind() == io::ErrorKind::NotFound {
            127
        } else {
            126
        }
    }
}

/// Starts `argv` with piped stdin and stdout, inherited stderr, environment and working
/// directory, in a new process group.
pub(crate) fn spawn(argv: &[OsString]) -> Result<Child, SpawnError> {
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    // SAFETY: getpid is async-signal-safe.
    let proxy = unsafe { libc::getpid() };
    // SAFETY: the closure runs between fork and exec and only calls async-signal-safe
    // functions (sigemptyset, pthread_sigmask, prctl, getppid) on its own stack data.
    unsafe {
        cmd.pre_exec(move || {
            // The proxy blocks the signals it forwards; the server starts with none blocked.
            let mut empty = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(empty.as_mut_ptr());
            libc::pthread_sigmask(libc::SIG_SETMASK, empty.as_ptr(), std::ptr::null_mut());
            arm_death_signal(proxy)
        });
    }
    cmd.spawn().map_err(|source| SpawnError {
        command: argv[0].to_string_lossy().into_owned(),
        source,
    })
}

/// Makes the kernel send `SIGKILL` to the server when the proxy dies (Linux only).
#[cfg(target_os = "linux")]
fn arm_death_signal(proxy: libc::pid_t) -> io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe and take no pointers here.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(io::Error::last_os_error());
        }
        if libc::getppid() != proxy {
            // The proxy died before the death signal was armed.
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
    }
    Ok(())
}

/// Other platforms have no parent-death signal; the process group still gets the
/// forwarded signals.
#[cfg(not(target_os = "linux"))]
fn arm_death_signal(_proxy: libc::pid_t) -> io::Result<()> {
    Ok(())
}

/// Sends `sig` to the server's process group (nothing happens when the group is empty).
pub(crate) fn signal_group(pid: u32, sig: libc::c_int) {
    // SAFETY: kill has no memory-safety preconditions.
    unsafe {
        libc::kill(-(pid as libc::pid_t), sig);
    }
}

/// The log's form of an exit status, and the proxy's own exit code for it (the code, or
/// 128 + the signal number).
pub(crate) fn exit_of(status: std::process::ExitStatus) -> (ExitStatus, u8) {
    match (status.code(), status.signal()) {
        (Some(code), _) => (
            ExitStatus {
                code: Some(code),
                signal: None,
            },
            code as u8,
        ),
        (None, Some(sig)) => (
            ExitStatus {
                code: None,
                signal: Some(sig),
            },
            (128 + sig) as u8,
        ),
        (None, None) => (
            ExitStatus {
                code: None,
                signal: None,
            },
            1,
        ),
    }
}
