//! Where one direction of the relay writes (the server's stdin, the proxy's stdout), with
//! a way for the other direction to close it.
//!
//! A frame is written under the outlet's lock ([`Outlet::lock`]), whole or in pieces as it
//! arrives; either way no other frame can come between its bytes. The proxy's own answers (injected tools) share the client's outlet with the
//! `s2c` relay, so they wait for a frame being streamed to end. An outlet on a descriptor
//! also takes bytes spliced from a pipe ([`FrameWriter::splice_from`]).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::blocking::Blocking;
use super::zero_copy::{self, Moved};

use crate::sync::lock;

/// What an outlet writes to: a descriptor, or any writer (tests).
enum Target {
    Fd(Blocking<File>),
    #[cfg(test)]
    Writer(Box<dyn Write + Send>),
}

impl Target {
    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Target::Fd(file) => file,
            #[cfg(test)]
            Target::Writer(w) => w,
        }
    }
}

/// The target, until the outlet is closed.
type Sink = Option<Target>;

/// A writable end that is written by one relay thread and may be closed by either.
pub(crate) struct Outlet {
    sink: Mutex<Sink>,
    close_requested: AtomicBool,
}

impl std::fmt::Debug for Outlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outlet")
            .field("close_requested", &self.close_requested)
            .finish_non_exhaustive()
    }
}

/// The outlet held for one frame: its pieces are written through it, and nothing else can
/// be written until it is dropped. A close asked for meanwhile happens on drop, so it
/// never cuts the frame short.
pub(crate) struct FrameWriter<'a> {
    sink: MutexGuard<'a, Sink>,
    close_requested: &'a AtomicBool,
}

impl std::fmt::Debug for FrameWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter")
            .field("open", &self.sink.is_some())
            .finish()
    }
}

impl FrameWriter<'_> {
    /// Writes a piece of the frame and flushes it. `Ok(false)` when the outlet is closed.
    /// A failed write closes the outlet.
    pub(crate) fn write(&mut self, bytes: &[u8]) -> io::Result<bool> {
        let Some(target) = self.sink.as_mut() else {
            return Ok(false);
        };
        let w = target.writer();
        match w.write_all(bytes).and_then(|()| w.flush()) {
            Ok(()) => Ok(true),
            Err(err) => {
                *self.sink = None;
                Err(err)
            }
        }
    }

    /// Moves the next `len` bytes of `input` (a pipe holding at least that many) on as
    /// part of the frame, without copying them. `None` when the outlet is closed;
    /// [`Moved::Unsupported`] when it is not a descriptor or does not take spliced bytes.
    /// A failure closes the outlet.
    pub(crate) fn splice_from(&mut self, input: BorrowedFd<'_>, len: usize) -> Option<Moved> {
        let target = self.sink.as_mut()?;
        #[cfg_attr(not(test), allow(irrefutable_let_patterns))]
        let Target::Fd(Blocking(file)) = target
        else {
            return Some(Moved::Unsupported);
        };
        let moved = zero_copy::splice_exact(input, file.as_fd(), len);
        if matches!(moved, Moved::Failed { .. }) {
            *self.sink = None;
        }
        Some(moved)
    }
}

impl Drop for FrameWriter<'_> {
    fn drop(&mut self) {
        // A close asked for while the frame was under way.
        if self.close_requested.load(Ordering::Relaxed) {
            *self.sink = None;
        }
    }
}

impl Outlet {
    /// Wraps an unbuffered writer (the tests').
    #[cfg(test)]
    pub(crate) fn new(sink: impl Write + Send + 'static) -> Self {
        Self::with(Target::Writer(Box::new(sink)))
    }

    /// Writes to a descriptor (waiting whenever it is non-blocking and full), which can
    /// also take spliced bytes.
    pub(crate) fn for_fd(file: File) -> Self {
        Self::with(Target::Fd(Blocking(file)))
    }

    fn with(target: Target) -> Self {
        Outlet {
            sink: Mutex::new(Some(target)),
            close_requested: AtomicBool::new(false),
        }
    }

    /// Holds the outlet for one frame (waiting while another frame is being written).
    pub(crate) fn lock(&self) -> FrameWriter<'_> {
        let mut sink = lock(&self.sink);
        if self.close_requested.load(Ordering::Relaxed) {
            *sink = None;
        }
        FrameWriter {
            sink,
            close_requested: &self.close_requested,
        }
    }

    /// Writes one whole frame and flushes it. `Ok(false)` when the outlet is closed. A
    /// failed write closes the outlet.
    #[cfg(test)]
    pub(crate) fn write_frame(&self, frame: &[u8]) -> io::Result<bool> {
        self.lock().write(frame)
    }

    /// Closes the outlet (the reader on the other end sees end of stream). Safe to call
    /// from the thread that does not write it: when that thread is inside a frame, the
    /// close happens as soon as the frame is written.
    pub(crate) fn close(&self) {
        self.close_requested.store(true, Ordering::Relaxed);
        if let Ok(mut sink) = self.sink.try_lock() {
            *sink = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    /// A sink whose bytes the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_frame_written_in_pieces_is_never_interleaved_and_a_close_waits_for_its_end() {
        let sink = Shared::default();
        let outlet = Arc::new(Outlet::new(sink.clone()));
        let mut frame = outlet.lock();
        assert!(frame.write(b"{\"big\":").unwrap());
        let other = {
            let outlet = outlet.clone();
            std::thread::spawn(move || outlet.write_frame(b"{\"answer\":1}\n").unwrap())
        };
        std::thread::sleep(Duration::from_millis(50));
        outlet.close();
        assert!(
            frame.write(b"1}\n").unwrap(),
            "the close waits for the frame"
        );
        drop(frame);
        assert!(
            !other.join().unwrap(),
            "closed after the frame: not written"
        );
        assert_eq!(&*sink.0.lock().unwrap(), b"{\"big\":1}\n");
    }
}
