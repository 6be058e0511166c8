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
    /// Bytes read and not yet returned start at `start`.
    buf: Vec<u8>,
    start: usize,
    /// `buf[start..scanned]` holds no `\n`.
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
            start: 0,
            scanned: 0,
            eof: false,
        }
    }

    /// The next frame (line ending included), or `None` at end of stream.
    pub fn next_frame(&mut self) -> io::Result<Option<Vec<u8>>> {
        loop {
            if let Some(pos) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let end = self.scanned + pos + 1;
                return Ok(Some(self.take(end)));
            }
            self.scanned = self.buf.len();
            if self.eof {
                let end = self.buf.len();
                return Ok((end > self.start).then(|| self.take(end)));
            }
            // Only the unfinished frame stays; move it to the front before reading on.
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.scanned -= self.start;
                self.start = 0;
            }
            match self.inner.read(&mut self.chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => self.buf.extend_from_slice(&self.chunk[..n]),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
    }

    /// Removes and returns `buf[start..end]`. A frame that spans the whole buffer from its
    /// start and is larger than a read is handed over in place, not copied.
    fn take(&mut self, end: usize) -> Vec<u8> {
        if self.start == 0 && end > READ_CHUNK {
            let rest = self.buf[end..].to_vec();
            let mut frame = std::mem::replace(&mut self.buf, rest);
            frame.truncate(end);
            self.scanned = 0;
            return frame;
        }
        let frame = self.buf[self.start..end].to_vec();
        self.start = end;
        self.scanned = end;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
        }
        frame
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
    fn many_small_frames_in_one_read() {
        let data: Vec<u8> = (0..5000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let got = frames(&data, READ_CHUNK);
        assert_eq!(got.len(), 5000);
        assert_eq!(got.concat(), data);
    }

    #[test]
    fn empty_stream_has_no_frames() {
        assert!(frames(b"", 10).is_empty());
    }
}
