//! Relaying the body of a long frame without copying it through the proxy (Linux).
//!
//! When a frame turns out to be long, the relay stops reading it into its buffer and
//! writing it out again. Instead, for each stretch of bytes waiting in the input pipe:
//! 1. `tee(2)` duplicates them into a private pipe (page references, no copy) without
//!    consuming them, and the proxy reads that duplicate once: the tap's copy of the frame,
//!    and where it looks for the frame's end;
//! 2. `splice(2)` moves the same bytes, up to and including the frame's `\n`, from the
//!    input pipe into the outlet, again without a copy.
//!
//! Bytes after the frame's end stay in the input pipe for the line reader. Where the input
//! is not a pipe (a client that hands the proxy a file or a socket as stdin) `tee` fails
//! with `EINVAL` and the pump copies as before; where the outlet does not take spliced
//! bytes, the pump writes the duplicate it read instead ([`Moved::Unsupported`]).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use super::blocking::wait_ready;

/// Size asked for the private pipe and the server's stdout: the most one `tee` duplicates,
/// and so the longest stretch moved per step. Linux lets any process raise a pipe to 1 MiB
/// by default (`/proc/sys/fs/pipe-max-size`).
const PIPE_BYTES: libc::c_int = 1 << 20;

/// A private pipe through which the bytes waiting in an input pipe are looked at without
/// being consumed.
#[derive(Debug)]
pub(crate) struct Peeker {
    read: OwnedFd,
    write: OwnedFd,
}

/// What [`splice_exact`] did.
#[derive(Debug)]
pub(crate) enum Moved {
    /// Every byte reached the outlet.
    All,
    /// The outlet does not take spliced bytes (`EINVAL`); none were moved.
    Unsupported,
    /// The outlet failed after `moved` bytes.
    Failed {
        /// Bytes moved before the failure.
        moved: usize,
        /// Why it failed.
        error: io::Error,
    },
}

/// `Ok(n)` for a non-negative system-call result, the OS error otherwise.
fn check(rc: isize) -> io::Result<usize> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Runs a system call until it neither is interrupted nor would block, waiting for `fd`
/// to be ready for `events` when it would.
fn retrying(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    mut call: impl FnMut() -> isize,
) -> io::Result<usize> {
    loop {
        match check(call()) {
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => wait_ready(&fd, events)?,
            other => return other,
        }
    }
}

/// Raises a pipe's capacity to 1 MiB where the system allows (never lowers it); failure (or
/// a descriptor that is not a pipe) leaves it as it was.
pub(crate) fn widen(pipe: BorrowedFd<'_>) {
    let fd = pipe.as_raw_fd();
    // SAFETY: fcntl on an open descriptor, no pointers.
    if unsafe { libc::fcntl(fd, libc::F_GETPIPE_SZ) } < PIPE_BYTES {
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, PIPE_BYTES) };
    }
}

impl Peeker {
    /// A private pipe, raised to 1 MiB when the system allows (64 KiB otherwise).
    pub(crate) fn new() -> io::Result<Peeker> {
        let mut fds = [0 as RawFd; 2];
        // SAFETY: `fds` has room for the two descriptors pipe2 writes.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: pipe2 succeeded, so both descriptors are open and owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        widen(write.as_fd());
        Ok(Peeker { read, write })
    }

    /// Appends a copy of the bytes waiting at the front of `input` (a pipe; waits for some
    /// when there are none) to `into`, leaving them in `input`. `Ok(0)` at end of stream;
    /// `Err` with [`io::ErrorKind::InvalidInput`] when `input` is not a pipe.
    pub(crate) fn peek(&self, input: BorrowedFd<'_>, into: &mut Vec<u8>) -> io::Result<usize> {
        let (input_fd, dup) = (input.as_raw_fd(), self.write.as_raw_fd());
        // SAFETY: tee on two open descriptors, no pointers.
        let n = retrying(input, libc::POLLIN, || unsafe {
            libc::tee(input_fd, dup, PIPE_BYTES as usize, 0)
        })?;
        into.reserve(n);
        let mut got = 0;
        while got < n {
            let spare = into.spare_capacity_mut();
            // SAFETY: reads at most `n - got` bytes into the vector's spare capacity, which
            // `reserve` made at least `n` bytes long.
            let read = retrying(self.read.as_fd(), libc::POLLIN, || unsafe {
                libc::read(self.read.as_raw_fd(), spare.as_mut_ptr().cast(), n - got)
            })?;
            if read == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the private pipe ended before the duplicated bytes",
                ));
            }
            // SAFETY: `read` bytes past the old length were just written by read(2).
            unsafe { into.set_len(into.len() + read) };
            got += read;
        }
        Ok(n)
    }
}

/// Moves exactly `len` bytes from the front of `input` (a pipe holding at least that many)
/// to `out`.
pub(crate) fn splice_exact(input: BorrowedFd<'_>, out: BorrowedFd<'_>, len: usize) -> Moved {
    let (input_fd, out_fd) = (input.as_raw_fd(), out.as_raw_fd());
    let mut moved = 0;
    while moved < len {
        // SAFETY: splice between two open descriptors, null offsets (both used as streams).
        let step = retrying(out, libc::POLLOUT, || unsafe {
            libc::splice(
                input_fd,
                std::ptr::null_mut(),
                out_fd,
                std::ptr::null_mut(),
                len - moved,
                libc::SPLICE_F_MOVE,
            )
        });
        match step {
            Ok(0) => {
                let error = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the input pipe ended before the bytes looked at",
                );
                return Moved::Failed { moved, error };
            }
            Ok(n) => moved += n,
            Err(err) if moved == 0 && err.raw_os_error() == Some(libc::EINVAL) => {
                return Moved::Unsupported;
            }
            Err(error) => return Moved::Failed { moved, error },
        }
    }
    Moved::All
}

/// Consumes exactly `len` bytes from `input` without passing them on (their copy was
/// written another way, or the outlet is gone).
pub(crate) fn discard(input: BorrowedFd<'_>, len: usize) -> io::Result<()> {
    let fd = input.as_raw_fd();
    let mut scratch = vec![0u8; len.min(64 * 1024)];
    let mut left = len;
    while left > 0 {
        let want = left.min(scratch.len());
        // SAFETY: reads at most `want` bytes into `scratch`, which is at least that long.
        let n = retrying(input, libc::POLLIN, || unsafe {
            libc::read(fd, scratch.as_mut_ptr().cast(), want)
        })?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the input pipe ended before the bytes looked at",
            ));
        }
        left -= n;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn peeking_leaves_the_bytes_and_splicing_moves_exactly_the_frame() {
        let (mut input_r, mut input_w) = std::io::pipe().unwrap();
        let (mut out_r, out_w) = std::io::pipe().unwrap();
        input_w.write_all(b"first frame\nsecond").unwrap();
        let peeker = Peeker::new().unwrap();
        let mut copy = b"head:".to_vec();
        let n = peeker.peek(input_r.as_fd(), &mut copy).unwrap();
        assert_eq!(n, 18);
        assert_eq!(copy, b"head:first frame\nsecond");
        assert!(matches!(
            splice_exact(input_r.as_fd(), out_w.as_fd(), 12),
            Moved::All
        ));
        drop(out_w);
        let mut moved = Vec::new();
        out_r.read_to_end(&mut moved).unwrap();
        assert_eq!(moved, b"first frame\n");
        discard(input_r.as_fd(), 3).unwrap();
        drop(input_w);
        let mut rest = Vec::new();
        input_r.read_to_end(&mut rest).unwrap();
        assert_eq!(
            rest, b"ond",
            "only what was moved or discarded left the pipe"
        );
    }

    #[test]
    fn a_closed_empty_pipe_peeks_as_end_of_stream() {
        let (input_r, input_w) = std::io::pipe().unwrap();
        drop(input_w);
        let mut copy = Vec::new();
        assert_eq!(
            Peeker::new()
                .unwrap()
                .peek(input_r.as_fd(), &mut copy)
                .unwrap(),
            0
        );
    }

    #[test]
    fn a_file_is_not_a_pipe_and_a_file_opened_to_append_takes_no_splice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"data\n").unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let err = Peeker::new()
            .unwrap()
            .peek(file.as_fd(), &mut Vec::new())
            .unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);

        let (input_r, mut input_w) = std::io::pipe().unwrap();
        input_w.write_all(b"x\n").unwrap();
        let append = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        assert!(matches!(
            splice_exact(input_r.as_fd(), append.as_fd(), 2),
            Moved::Unsupported
        ));
    }
}
