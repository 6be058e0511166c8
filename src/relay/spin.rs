//! Bounded busy-polling (`--spin-us`): after one direction relays a frame, the other
//! direction's reader polls its input without sleeping for a short window, so that the
//! answer (a response after a request, the next request after a response) is read without
//! waiting for the scheduler to wake the thread.
//!
//! A reader sleeps in `poll` on its input and on a wake-up pipe. The other direction
//! writes a byte to that pipe after each frame it relays ([`Poke::poke`]); the reader then
//! polls its input with a zero timeout until data comes or the window ends, and sleeps
//! again. The wake-up itself happens while the peer is still working on the frame, off the
//! round trip's path. Cost: at most one window of CPU per relayed frame. The input's file
//! status flags are never changed (stdin may be a terminal shared with a shell).

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The writing end of a reader's wake-up pipe.
#[derive(Debug, Clone)]
pub struct Poke(Arc<OwnedFd>);

impl Poke {
    /// Tells the reader to start a polling window. Never blocks; a full pipe already
    /// holds a wake-up.
    pub fn poke(&self) {
        let byte = 1u8;
        // SAFETY: one byte from a live local, to a descriptor we own.
        unsafe {
            libc::write(self.0.as_raw_fd(), (&byte as *const u8).cast(), 1);
        }
    }
}

/// A reader that sleeps until its input or its wake-up pipe is ready, and after a wake-up
/// polls its input for up to `window` before sleeping again.
#[derive(Debug)]
pub struct SpinReader {
    input: File,
    wake: OwnedFd,
    window: Duration,
}

/// A non-blocking, close-on-exec pipe.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe writes two descriptors into the array on success.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let ends = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&ends.0, &ends.1] {
        let raw = fd.as_raw_fd();
        // SAFETY: fcntl on descriptors we own.
        unsafe {
            let flags = libc::fcntl(raw, libc::F_GETFL);
            libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK);
            libc::fcntl(raw, libc::F_SETFD, libc::FD_CLOEXEC);
        }
    }
    Ok(ends)
}

/// `poll` for input on `fds` (one or two) for `timeout_ms` (`-1`: no limit); the events
/// seen per descriptor.
fn poll(fds: &[RawFd], timeout_ms: libc::c_int) -> io::Result<[libc::c_short; 2]> {
    let mut pfds = [libc::pollfd {
        fd: -1,
        events: libc::POLLIN,
        revents: 0,
    }; 2];
    for (p, fd) in pfds.iter_mut().zip(fds) {
        p.fd = *fd;
    }
    let n = fds.len().min(2);
    // SAFETY: a valid array of at least `n` pollfd for the duration of the call.
    let rc = unsafe { libc::poll(pfds.as_mut_ptr(), n as libc::nfds_t, timeout_ms) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    let mut seen = [0; 2];
    for (s, p) in seen.iter_mut().zip(&pfds) {
        *s = p.revents;
    }
    Ok(seen)
}

impl SpinReader {
    /// Wraps `input`; the [`Poke`] starts a window of `window`.
    pub fn new(input: File, window: Duration) -> io::Result<(SpinReader, Poke)> {
        let (wake, poke) = pipe()?;
        Ok((
            SpinReader {
                input,
                wake,
                window,
            },
            Poke(Arc::new(poke)),
        ))
    }

    fn drain_wake(&self) {
        let mut sink = [0u8; 64];
        // SAFETY: reads into a live local buffer from a non-blocking descriptor we own.
        while unsafe { libc::read(self.wake.as_raw_fd(), sink.as_mut_ptr().cast(), sink.len()) } > 0
        {
        }
    }

    /// Waits until the input is readable (or at end, or failed).
    fn wait_input(&self) -> io::Result<()> {
        let (input, wake) = (self.input.as_raw_fd(), self.wake.as_raw_fd());
        let ready = libc::POLLIN | libc::POLLHUP | libc::POLLERR | libc::POLLNVAL;
        loop {
            let [on_input, on_wake] = poll(&[input, wake], -1)?;
            if on_input & ready != 0 {
                return Ok(());
            }
            if on_wake != 0 {
                self.drain_wake();
                let until = Instant::now() + self.window;
                while Instant::now() < until {
                    if poll(&[input], 0)?[0] & ready != 0 {
                        return Ok(());
                    }
                    std::hint::spin_loop();
                }
            }
        }
    }
}

impl Read for SpinReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            self.wait_input()?;
            match self.input.read(buf) {
                // Someone else sharing the input took the bytes: wait again.
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {}
                other => return other,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn reader(window: Duration) -> (SpinReader, Poke, std::io::PipeWriter) {
        let (r, w) = std::io::pipe().unwrap();
        let (reader, poke) = SpinReader::new(File::from(OwnedFd::from(r)), window).unwrap();
        (reader, poke, w)
    }

    #[test]
    fn reads_what_comes_with_or_without_a_window_and_then_end_of_stream() {
        let (mut reader, poke, mut w) = reader(Duration::from_millis(20));
        let writer = std::thread::spawn(move || {
            w.write_all(b"one\n").unwrap();
            // Poked, then the data comes inside the window.
            poke.poke();
            std::thread::sleep(Duration::from_millis(5));
            w.write_all(b"two\n").unwrap();
            // Poked, the window passes, the data comes later.
            poke.poke();
            std::thread::sleep(Duration::from_millis(60));
            w.write_all(b"three\n").unwrap();
        });
        let mut got = Vec::new();
        reader.read_to_end(&mut got).unwrap();
        writer.join().unwrap();
        assert_eq!(got, b"one\ntwo\nthree\n");
    }
}
