//! Reading a byte stream as frames: everything up to and including each `\n`, and at end
//! of stream whatever is left (a last frame with no line ending).
//!
//! Memory stays bounded by the largest frame: a frame longer than one read is handed over
//! in the buffer it was assembled in, not copied.

use std::io::{self, Read};

/// Bytes asked for per `read` call.
pub const READ_CHUNK: usize = 64 * 1024;

/// Splits a reader into frames without looking inside them.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    chunk: Box<[u8]>,
    buf: Vec<u8>,
    scanned: usize,
    eof: bool,
}

impl<R: Read> LineReader<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        LineReader {
            inner,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            buf: Vec::new(),
            scanned: 0,
            eof: false,
        }
    }

    /// The next frame (line ending included), or `None` at end of stream.
    pub fn next_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(pos) = self.buf[self.scanned..].iter().position(|&b| b == b'\n') {
                let end = self.scanned + pos + 1;
                return Ok(Some(self.take(end)));
            }
            self.scanned = self.buf.len();
            if self.eof {
                return Ok((!self.buf.is_empty()).then(|| self.take(self.buf.len())));
            }
            match self.inner.read(&mut self.chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => self.buf.extend_from_slice(&self.chunk[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Removes and returns the first `end` bytes of the buffer.
    fn take(&mut self, end: usize) -> Vec<u8> {
        self.scanned = 0;
        if end <= READ_CHUNK {
            let frame = self.buf[..end].to_vec();
            self.buf.drain(..end);
            frame
        } else {
            let rest = self.buf[end..].to_vec();
            let mut frame = std::mem::replace(&mut self.buf, rest);
            frame.truncate(end);
            frame
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that returns at most `step` bytes per call.
    struct Trickle<'a> {
        data: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(out.len()).min(self.data.len());
            out[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn frames(data: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut r = LineReader::new(Trickle { data, step });
        std::iter::from_fn(|| r.next_frame().unwrap()).collect()
    }

    #[test]
    fn splits_on_newline_and_keeps_the_tail() {
        let data = b"a\r\n\n{\"x\":1}\nno newline";
        for step in [1, 2, 5, 1000] {
            let got = frames(data, step);
            assert_eq!(
                got,
                [&b"a\r\n"[..], b"\n", b"{\"x\":1}\n", b"no newline"],
                "step {step}"
            );
        }
    }

    #[test]
    fn large_frames_survive_partial_reads() {
        let mut data = vec![b'x'; 3 * READ_CHUNK + 17];
        data.push(b'\n');
        data.extend_from_slice(b"y\n");
        let got = frames(&data, 4093);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), 3 * READ_CHUNK + 18);
        assert_eq!(got[1], b"y\n");
    }

    #[test]
    fn empty_stream_has_no_frames() {
        assert!(frames(b"", 10).is_empty());
    }
}
