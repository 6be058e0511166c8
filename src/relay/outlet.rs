//! Where one direction of the relay writes (the server's stdin, the proxy's stdout), with
//! a way for the other direction to close it.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// A writable end that is written by one relay thread and may be closed by either.
pub struct Outlet {
    sink: Mutex<Option<Box<dyn Write + Send>>>,
    close_requested: AtomicBool,
}

impl std::fmt::Debug for Outlet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outlet")
            .field("close_requested", &self.close_requested)
            .finish_non_exhaustive()
    }
}

impl Outlet {
    /// Wraps an unbuffered writer.
    pub fn new(sink: impl Write + Send + 'static) -> Self {
        Outlet {
            sink: Mutex::new(Some(Box::new(sink))),
            close_requested: AtomicBool::new(false),
        }
    }

    /// Writes one whole frame and flushes it. `Ok(false)` when the outlet is closed. A
    /// failed write closes the outlet.
    pub fn write_frame(&self, frame: &[u8]) -> io::Result<bool> {
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        if self.close_requested.load(Ordering::Relaxed) {
            *sink = None;
        }
        let Some(w) = sink.as_mut() else {
            return Ok(false);
        };
        match w.write_all(frame).and_then(|()| w.flush()) {
            Ok(()) => {
                // A close asked for while this write was under way.
                if self.close_requested.load(Ordering::Relaxed) {
                    *sink = None;
                }
                Ok(true)
            }
            Err(err) => {
                *sink = None;
                Err(err)
            }
        }
    }

    /// Closes the outlet (the reader on the other end sees end of stream). Safe to call
    /// from the thread that does not write it: when that thread is inside a write, the
    /// close happens as soon as the write returns.
    pub fn close(&self) {
        self.close_requested.store(true, Ordering::Relaxed);
        if let Ok(mut sink) = self.sink.try_lock() {
            *sink = None;
        }
    }
}
