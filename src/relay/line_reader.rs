//! Reading a byte stream as pieces of frames: a frame is everything up to and including
//! each `\n`, and at end of stream whatever is left (a last frame with no line ending).
//!
//! The reader hands out what each `read` brought, cut at line endings, without copying:
//! a piece either ends a frame or is the start or middle of one that continues in the next
//! read. The caller decides whether to gather a frame whole or to pass its pieces on as
//! they come ([`super::pump`]). Memory is one read buffer.

use std::io::{self, Read};

/// Bytes asked for per `read` call.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Part of a frame, borrowed from the reader's buffer until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Piece<'a> {
    /// The bytes.
    pub(crate) bytes: &'a [u8],
    /// Whether these bytes end a frame (they end with `\n`).
    pub(crate) ends_frame: bool,
}

/// Splits a reader into pieces of frames without looking inside them.
#[derive(Debug)]
pub(crate) struct LineReader<R> {
    inner: R,
    chunk: Box<[u8]>,
    /// `chunk[pos..len]` was read and not yet handed out.
    pos: usize,
    len: usize,
}

impl<R: Read> LineReader<R> {
    /// Wraps `inner`.
    pub(crate) fn new(inner: R) -> Self {
        LineReader {
            inner,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
            pos: 0,
            len: 0,
        }
    }

    /// The next piece, or `None` at end of stream. A frame still unfinished at end of
    /// stream has had all its bytes handed out; it ends there.
    pub(crate) fn next_piece(&mut self) -> io::Result<Option<Piece<'_>>> {
        while self.pos == self.len {
            match self.inner.read(&mut self.chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => (self.pos, self.len) = (0, n),
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(err),
            }
        }
        let start = self.pos;
        let rest = &self.chunk[start..self.len];
        let (end, ends_frame) = match memchr::memchr(b'\n', rest) {
            Some(i) => (start + i + 1, true),
            None => (self.len, false),
        };
        self.pos = end;
        Ok(Some(Piece {
            bytes: &self.chunk[start..end],
            ends_frame,
        }))
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

    /// Frames gathered from pieces, and the largest piece seen.
    fn frames(data: &[u8], step: usize) -> (Vec<Vec<u8>>, usize) {
        let mut r = LineReader::new(Trickle { data, step });
        let (mut frames, mut current, mut largest) = (Vec::new(), Vec::new(), 0);
        while let Some(piece) = r.next_piece().unwrap() {
            assert!(!piece.bytes.is_empty());
            largest = largest.max(piece.bytes.len());
            current.extend_from_slice(piece.bytes);
            if piece.ends_frame {
                frames.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            frames.push(current);
        }
        (frames, largest)
    }

    #[test]
    fn splits_on_newline_and_keeps_the_tail() {
        let data = b"a\r\n\n{\"x\":1}\nno newline";
        for step in [1, 2, 5, 1000] {
            let (got, largest) = frames(data, step);
            assert_eq!(
                got,
                [&b"a\r\n"[..], b"\n", b"{\"x\":1}\n", b"no newline"],
                "step {step}"
            );
            assert!(largest <= step, "a piece never exceeds one read");
        }
    }

    #[test]
    fn large_frames_come_in_pieces_of_at_most_one_read() {
        let mut data = vec![b'x'; 3 * READ_CHUNK + 17];
        data.push(b'\n');
        data.extend_from_slice(b"y\n");
        let (got, largest) = frames(&data, 4093);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].len(), 3 * READ_CHUNK + 18);
        assert_eq!(got[1], b"y\n");
        assert_eq!(largest, 4093);
        let (_, largest) = frames(&data, usize::MAX);
        assert_eq!(largest, READ_CHUNK);
    }

    #[test]
    fn many_small_frames_in_one_read() {
        let data: Vec<u8> = (0..5000)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let (got, _) = frames(&data, READ_CHUNK);
        assert_eq!(got.len(), 5000);
        assert_eq!(got.concat(), data);
    }

    #[test]
    fn empty_stream_has_no_pieces() {
        assert!(frames(b"", 10).0.is_empty());
    }
}
