//! Blocking reads and writes even on a non-blocking file descriptor.
//!
//! The proxy's stdin and stdout are whatever the client handed over; some clients share a
//! file description that another process switched to `O_NONBLOCK`. A read or write there
//! can fail with `EAGAIN`, which would look like a broken pipe. [`Blocking`] waits with
//! `poll` until the descriptor is ready and tries again instead.

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd};
use std::time::{Duration, Instant};

/// A reader or writer whose `EAGAIN` means "wait", never "fail".
#[derive(Debug)]
pub(crate) struct Blocking<T>(pub T);

/// Waits until `fd` is ready for `events` (`POLLIN`, `POLLOUT`); an interrupted wait
/// returns early, and the caller tries again.
pub(crate) fn wait_ready(fd: &impl AsFd, events: libc::c_short) -> io::Result<()> {
    let mut pfd = libc::pollfd {
        fd: fd.as_fd().as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd, for the duration of the call.
    let rc = unsafe { libc::poll(&mut pfd, 1, -1) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    Ok(())
}

/// Waits up to `limit` until no process holds the write end of the pipe whose read end is
/// `fd` open any more (`POLLHUP`; bytes may still wait in it). `false` when it is still open.
pub(crate) fn wait_hangup(fd: &impl AsFd, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let mut pfd = libc::pollfd {
            fd: fd.as_fd().as_raw_fd(),
            events: 0,
            revents: 0,
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let ms = libc::c_int::try_from(left.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd, for the duration of the call.
        let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
        if rc > 0 {
            return pfd.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0;
        }
        if rc == 0 || Instant::now() >= deadline {
            return false;
        }
    }
}

impl<T: Read + AsFd> Read for Blocking<T> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.0.read(buf) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    wait_ready(&self.0, libc::POLLIN)?
                }
                other => return other,
            }
        }
    }
}

impl<T: Write + AsFd> Write for Blocking<T> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match self.0.write(buf) {
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    wait_ready(&self.0, libc::POLLOUT)?
                }
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set_nonblocking(fd: &impl AsFd) {
        let raw = fd.as_fd().as_raw_fd();
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(raw, libc::F_GETFL);
            assert!(libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0);
        }
    }

    #[test]
    fn writes_and_reads_wait_instead_of_failing_on_nonblocking_pipes() {
        let (reader, writer) = io::pipe().unwrap();
        set_nonblocking(&reader);
        set_nonblocking(&writer);
        let data: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
        let expected = data.clone();
        let consumer = std::thread::spawn(move || {
            // Start late, so the writer fills the pipe and meets EAGAIN first.
            std::thread::sleep(Duration::from_millis(50));
            let mut got = Vec::new();
            Blocking(reader).read_to_end(&mut got).unwrap();
            got
        });
        let mut w = Blocking(writer);
        w.write_all(&data).unwrap();
        drop(w);
        assert!(consumer.join().unwrap() == expected);
    }

    #[test]
    fn a_hangup_is_seen_with_bytes_still_in_the_pipe() {
        let (reader, mut writer) = io::pipe().unwrap();
        writer.write_all(b"left in the pipe\n").unwrap();
        assert!(!wait_hangup(&reader, Duration::ZERO), "a writer holds it");
        drop(writer);
        assert!(wait_hangup(&reader, Duration::from_secs(60)));
    }
}
