//! The proxy's signals, received synchronously: `SIGINT`, `SIGTERM` and `SIGHUP` (to
//! forward to the server) and `SIGCHLD` (the server ended). They are blocked in every
//! thread and collected with `sigtimedwait` by the thread that supervises the server. The
//! server itself starts with an empty signal mask (the standard library resets it).
//!
//! A signal mask is per thread, and a thread inherits the mask of the thread that starts it.
//! The kernel hands a signal sent to the process to any thread that does not block it; for
//! `SIGINT`, `SIGTERM` and `SIGHUP` that ends the whole process at once, unforwarded and
//! without its log's trailer. So [`Signals::block`] is the binary's first step, before any
//! thread exists, and [`run`](super::run) takes the result to say it was done.

use std::io;
use std::mem::MaybeUninit;
use std::time::Duration;

/// Signals forwarded to the server.
pub(crate) const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The forwarded signals and `SIGCHLD`, blocked in the thread that made this and in every
/// thread started after it: the set [`run`](super::run) waits on.
#[derive(Debug)]
pub struct Signals {
    set: libc::sigset_t,
}

impl Signals {
    /// Blocks the forwarded signals and `SIGCHLD` in the calling thread and every thread it
    /// starts afterwards. Call it first in `main`, before any thread is started: a thread
    /// started earlier keeps them unblocked, and a signal the kernel hands to it ends the
    /// process.
    pub fn block() -> io::Result<Self> {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigemptyset initialises the set; sigaddset and pthread_sigmask only read
        // and write that set and the calling thread's mask.
        unsafe {
            libc::sigemptyset(set.as_mut_ptr());
            for sig in FORWARDED.into_iter().chain([libc::SIGCHLD]) {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
            let set = set.assume_init();
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            Ok(Signals { set })
        }
    }

    /// The first forwarded signal pending now, taken without waiting; `None` when none is
    /// (a `SIGCHLD` taken on the way is dropped: the server's end is seen in its status).
    pub(crate) fn pending_forwarded(&self) -> Option<libc::c_int> {
        while let Some(sig) = self.wait(Duration::ZERO) {
            if FORWARDED.contains(&sig) {
                return Some(sig);
            }
        }
        None
    }

    /// Waits up to `timeout` for one of the blocked signals; `None` on timeout.
    pub(crate) fn wait(&self, timeout: Duration) -> Option<libc::c_int> {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: the set was initialised in `block`; a null info pointer is allowed.
        let sig = unsafe { libc::sigtimedwait(&self.set, std::ptr::null_mut(), &ts) };
        (sig > 0).then_some(sig)
    }
}
