//! Server-sent events read one at a time as they arrive (the WHATWG event-stream format):
//! `data:` lines joined by `\n`, `event:`, `id:` (kept across events, as the last event id),
//! comments and `retry:` skipped, an event dispatched at its blank line.

use std::io::{self, BufRead};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Its type (`event:`); `None` means `message`.
    pub event: Option<String>,
    /// Its data lines, joined by `\n`.
    pub data: Vec<u8>,
    /// The last event id when it was dispatched (set by this or an earlier event).
    pub id: Option<String>,
}

impl Event {
    /// Whether it is a `message` event (the only type MCP sends JSON-RPC messages in).
    pub fn is_message(&self) -> bool {
        self.event.as_deref().is_none_or(|e| e == "message")
    }
}

/// Why a stream could not be read to its end.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// Reading failed (the connection broke, a timeout).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// An event grew over the limit.
    #[error("an event is over the size limit of {0} bytes")]
    TooLarge(usize),
    /// The stream ended inside an event (after some of its lines, before its blank line).
    #[error("the stream was cut in the middle of an event")]
    Cut,
}

/// Reads events from a byte stream.
///
/// A `data:` line's value goes straight from the input's buffer into the event's data, which
/// is handed out as it is: an event of megabytes is copied once on its way through, and the
/// work left when its last byte arrives is that byte's.
#[derive(Debug)]
pub struct SseReader<R> {
    input: R,
    limit: usize,
    last_id: Option<String>,
    /// The field name of the line being read (the whole line when it has no colon).
    name: Vec<u8>,
    /// The value of a line other than `data:`.
    value: Vec<u8>,
}

/// What one line was.
enum Line {
    /// Empty: the end of an event.
    Blank,
    /// A `data:` line, its value appended to the event's data.
    Data,
    /// Any other field (name and value in the reader's buffers), or a comment.
    Other,
}

impl<R: BufRead> SseReader<R> {
    /// Events from `input`, none larger than `limit` bytes.
    pub fn new(input: R, limit: usize) -> Self {
        SseReader {
            input,
            limit,
            last_id: None,
            name: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The last event id seen.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The next event, as soon as its blank line has arrived; `None` at the end of the
    /// stream.
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        let mut data: Option<Vec<u8>> = None;
        let mut event = None;
        let mut started = false;
        loop {
            let line = match self.read_line(&mut data)? {
                Some(line) => line,
                None if started => return Err(SseError::Cut),
                None => return Ok(None),
            };
            match line {
                Line::Blank => match data.take() {
                    Some(data) => {
                        return Ok(Some(Event {
                            event,
                            data,
                            id: self.last_id.clone(),
                        }))
                    }
                    None => {
                        // An event without data is not dispatched.
                        event = None;
                        started = false;
                    }
                },
                Line::Data => started = true,
                Line::Other => {
                    started = true;
                    let value = String::from_utf8_lossy(&self.value);
                    match &self.name[..] {
                        b"event" => event = Some(value.into_owned()),
                        b"id" if !self.value.contains(&0) => {
                            self.last_id = Some(value.into_owned());
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    /// Reads the next line (ended by `\n` or `\r\n`): a `data:` line's value appended to
    /// `data` (after a `\n` when it holds some already), any other line's field name and
    /// value kept in `self.name` and `self.value`. `None` at the end of the stream; a last
    /// line without its `\n` counts as cut off.
    fn read_line(&mut self, data: &mut Option<Vec<u8>>) -> Result<Option<Line>, SseError> {
        self.name.clear();
        self.value.clear();
        // The field name: up to the first colon, or the whole line.
        let colon = loop {
            let buf = fill(&mut self.input)?;
            if buf.is_empty() {
                return if self.name.is_empty() {
                    Ok(None)
                } else {
                    Err(SseError::Cut)
                };
            }
            match memchr::memchr2(b':', b'\n', buf) {
                Some(i) => {
                    let colon = buf[i] == b':';
                    self.name.extend_from_slice(&buf[..i]);
                    self.input.consume(i + 1);
                    break colon;
                }
                None => {
                    let len = buf.len();
                    self.name.extend_from_slice(buf);
                    self.input.consume(len);
                }
            }
            if self.name.len() > self.limit {
                return Err(SseError::TooLarge(self.limit));
            }
        };
        if !colon {
            if self.name.last() == Some(&b'\r') {
                self.name.pop();
            }
            return Ok(Some(if self.name.is_empty() {
                Line::Blank
            } else if self.name == b"data" {
                next_data_line(data);
                Line::Data
            } else {
                Line::Other
            }));
        }
        // The value: one leading space dropped.
        let is_data = self.name == b"data";
        let into = if is_data {
            next_data_line(data)
        } else {
            &mut self.value
        };
        let start = into.len();
        let mut first = true;
        loop {
            let buf = fill(&mut self.input)?;
            if buf.is_empty() {
                return Err(SseError::Cut);
            }
            let skip = usize::from(first && buf[0] == b' ');
            first = false;
            let (end, ended) = match memchr::memchr(b'\n', &buf[skip..]) {
                Some(i) => (skip + i, true),
                None => (buf.len(), false),
            };
            into.extend_from_slice(&buf[skip..end]);
            self.input.consume(end + usize::from(ended));
            if into.len() > self.limit {
                return Err(SseError::TooLarge(self.limit));
            }
            if ended {
                if into.len() > start && into.last() == Some(&b'\r') {
                    into.pop();
                }
                return Ok(Some(if is_data { Line::Data } else { Line::Other }));
            }
        }
    }
}

/// The event's data, ready for the next `data:` line's value: begun, or followed by the
/// `\n` that joins the lines.
fn next_data_line(data: &mut Option<Vec<u8>>) -> &mut Vec<u8> {
    match data {
        Some(joined) => {
            joined.push(b'\n');
            joined
        }
        None => data.insert(Vec::new()),
    }
}

/// The input's buffered bytes, read when there are none; empty at the end of the stream.
fn fill<R: BufRead>(input: &mut R) -> Result<&[u8], SseError> {
    loop {
        match input.fill_buf() {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    // What the first call buffered (at the end of the stream it reads again: nothing).
    Ok(input.fill_buf()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str, limit: usize) -> (Vec<Event>, Option<SseError>) {
        events_from(text.as_bytes(), limit)
    }

    fn events_from(input: impl BufRead, limit: usize) -> (Vec<Event>, Option<SseError>) {
        let mut reader = SseReader::new(input, limit);
        let mut out = Vec::new();
        loop {
            match reader.next_event() {
                Ok(Some(e)) => out.push(e),
                Ok(None) => return (out, None),
                Err(e) => return (out, Some(e)),
            }
        }
    }

    #[test]
    fn events_are_split_at_blank_lines_with_their_data_ids_and_types() {
        let text = ": a comment\r\nid: 7\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n\
                    event: ping\ndata:x\n\nretry: 10\n\ndata: {\"b\":2}\n\n";
        let (got, err) = events(text, 1 << 20);
        assert!(err.is_none(), "{err:?}");
        assert_eq!(
            got,
            [
                Event {
                    event: None,
                    data: b"{\"a\":\n1}".to_vec(),
                    id: Some("7".into())
                },
                Event {
                    event: Some("ping".into()),
                    data: b"x".to_vec(),
                    id: Some("7".into())
                },
                Event {
                    event: None,
                    data: b"{\"b\":2}".to_vec(),
                    id: Some("7".into())
                },
            ]
        );
        assert!(got[0].is_message() && !got[1].is_message());
    }

    #[test]
    fn events_read_a_byte_at_a_time_are_the_same_events() {
        // Every line, field name and value split across reads, wherever a read may end.
        let text = ": c\r\nid: 7\r\ndata: {\"a\":\r\ndata\r\ndata:  1}\r\n\r\n\
                    event: ping\ndata:x\n\ndata\ndata: y\n\nretry: 10\n\ndata: \r\n\n";
        let (whole, err) = events(text, 1 << 20);
        assert!(err.is_none(), "{err:?}");
        let (bytewise, err) = events_from(
            std::io::BufReader::with_capacity(1, text.as_bytes()),
            1 << 20,
        );
        assert!(err.is_none(), "{err:?}");
        assert_eq!(bytewise, whole);
        let data: Vec<&[u8]> = whole.iter().map(|e| &e.data[..]).collect();
        // A `data` line without a colon is an empty line of data; one leading space only is
        // dropped.
        assert_eq!(
            data,
            [&b"{\"a\":\n\n 1}"[..], b"x", b"\ny", b""],
            "{:?}",
            whole
        );
    }

    #[test]
    fn a_stream_cut_inside_an_event_is_an_error_after_the_whole_events() {
        let (got, err) = events("data: 1\n\ndata: {\"partial\"", 1 << 20);
        assert_eq!(got.len(), 1);
        assert!(matches!(err, Some(SseError::Cut)), "{err:?}");
        let (got, err) = events("data: 1\n\ndata: 2\n", 1 << 20);
        assert_eq!(got.len(), 1);
        assert!(matches!(err, Some(SseError::Cut)), "{err:?}");
        for cut in ["data: 1\n\nda", "data: 1\n\nid: 3"] {
            let (got, err) = events(cut, 1 << 20);
            assert_eq!(got.len(), 1);
            assert!(matches!(err, Some(SseError::Cut)), "{cut:?}: {err:?}");
        }
    }

    #[test]
    fn an_event_over_the_limit_is_refused() {
        let (_, err) = events("data: 0123456789\ndata: 0123456789\n\n", 15);
        assert!(matches!(err, Some(SseError::TooLarge(15))), "{err:?}");
    }
}
