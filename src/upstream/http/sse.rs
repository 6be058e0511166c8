//! Server-sent events read one at a time as they arrive (the WHATWG event-stream format):
//! `data:` lines joined by `\n`, `event:`, `id:` (kept across events, as the last event id),
//! `retry:` (kept, as the time to wait before reconnecting), comments skipped, an event
//! dispatched at its blank line.

use std::io::{self, BufRead};
use std::time::Duration;

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
#[derive(Debug)]
pub struct SseReader<R> {
    input: R,
    limit: usize,
    last_id: Option<String>,
    retry: Option<Duration>,
    line: Vec<u8>,
}

impl<R: BufRead> SseReader<R> {
    /// Events from `input`, none larger than `limit` bytes.
    pub fn new(input: R, limit: usize) -> Self {
        SseReader {
            input,
            limit,
            last_id: None,
            retry: None,
            line: Vec::new(),
        }
    }

    /// The last event id seen.
    pub fn last_id(&self) -> Option<&str> {
        self.last_id.as_deref()
    }

    /// The last reconnection time the server gave (`retry:`, in milliseconds).
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// The next event, as soon as its blank line has arrived; `None` at the end of the
    /// stream.
    pub fn next_event(&mut self) -> Result<Option<Event>, SseError> {
        let mut data: Option<Vec<u8>> = None;
        let mut event = None;
        let mut started = false;
        loop {
            if !self.read_line()? {
                return if started {
                    Err(SseError::Cut)
                } else {
                    Ok(None)
                };
            }
            let line = &self.line;
            if line.is_empty() {
                match data.take() {
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
                        continue;
                    }
                }
            }
            started = true;
            if line[0] == b':' {
                continue;
            }
            let (field, value) = match memchr::memchr(b':', line) {
                Some(i) => {
                    let value = &line[i + 1..];
                    (&line[..i], value.strip_prefix(b" ").unwrap_or(value))
                }
                None => (&line[..], &b""[..]),
            };
            match field {
                b"data" => {
                    let joined = match data.as_mut() {
                        Some(joined) => {
                            joined.push(b'\n');
                            joined.extend_from_slice(value);
                            joined
                        }
                        None => data.insert(value.to_vec()),
                    };
                    if joined.len() > self.limit {
                        return Err(SseError::TooLarge(self.limit));
                    }
                }
                b"event" => event = Some(String::from_utf8_lossy(value).into_owned()),
                b"id" if !value.contains(&0) => {
                    self.last_id = Some(String::from_utf8_lossy(value).into_owned());
                }
                // Only ASCII digits count; anything else is ignored (the WHATWG rule).
                b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                    let millis = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                    self.retry = millis.map(Duration::from_millis);
                }
                _ => {}
            }
        }
    }

    /// Reads the next line (without `\n` or `\r\n`) into `self.line`; `false` at the end
    /// of the stream. A last line without its `\n` counts as cut off.
    fn read_line(&mut self) -> Result<bool, SseError> {
        self.line.clear();
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if buf.is_empty() {
                return if self.line.is_empty() {
                    Ok(false)
                } else {
                    Err(SseError::Cut)
                };
            }
            match memchr::memchr(b'\n', buf) {
                Some(i) => {
                    self.line.extend_from_slice(&buf[..i]);
                    self.input.consume(i + 1);
                    if self.line.last() == Some(&b'\r') {
                        self.line.pop();
                    }
                    return Ok(true);
                }
                None => {
                    let len = buf.len();
                    self.line.extend_from_slice(buf);
                    self.input.consume(len);
                }
            }
            if self.line.len() > self.limit {
                return Err(SseError::TooLarge(self.limit));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str, limit: usize) -> (Vec<Event>, Option<SseError>) {
        let mut reader = SseReader::new(text.as_bytes(), limit);
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
    fn the_retry_field_is_kept_and_a_malformed_one_ignored() {
        let mut reader = SseReader::new(&b"retry: 1500\n\ndata: 1\n\n"[..], 1 << 20);
        assert!(reader.next_event().unwrap().is_some());
        assert_eq!(reader.retry(), Some(Duration::from_millis(1500)));
        let mut reader = SseReader::new(&b"retry: 10\nretry: 1.5\nretry:\ndata: 1\n\n"[..], 99);
        assert!(reader.next_event().unwrap().is_some());
        assert_eq!(reader.retry(), Some(Duration::from_millis(10)));
    }

    #[test]
    fn a_stream_cut_inside_an_event_is_an_error_after_the_whole_events() {
        let (got, err) = events("data: 1\n\ndata: {\"partial\"", 1 << 20);
        assert_eq!(got.len(), 1);
        assert!(matches!(err, Some(SseError::Cut)), "{err:?}");
        let (got, err) = events("data: 1\n\ndata: 2\n", 1 << 20);
        assert_eq!(got.len(), 1);
        assert!(matches!(err, Some(SseError::Cut)), "{err:?}");
    }

    #[test]
    fn an_event_over_the_limit_is_refused() {
        let (_, err) = events("data: 0123456789\ndata: 0123456789\n\n", 15);
        assert!(matches!(err, Some(SseError::TooLarge(15))), "{err:?}");
    }
}
