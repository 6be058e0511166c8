//! The pairing iterator over a frame log: every frame in log order, each of its JSON-RPC
//! messages (the frame, or each item of a batch) with, for a response, the request it
//! answers. Reads through [`LogReader`], so memory is bounded by the longest line plus the
//! requests still waiting for an answer, never by the log's size.
//!
//! Pairing follows [`Outstanding`]: per requesting direction, by id text, first-in
//! first-out. Requests never answered are left for [`Exchanges::take_unanswered`].

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::rc::Rc;

use super::pairing::Outstanding;
use super::reader::{LogItem, LogReader, ReadError};
use super::record::{BatchItem, Direction, Frame, FrameKind, Header, LogLine, Trailer};

/// One JSON-RPC message of a log: a frame, or one item of a batch frame.
#[derive(Debug, Clone)]
pub(crate) struct Message {
    /// The frame it is in.
    pub frame: Rc<Frame>,
    /// Its index in the frame's `items`, for a batch member.
    pub item: Option<usize>,
}

impl Message {
    /// The batch item, for a batch member.
    pub(crate) fn batch_item(&self) -> Option<&BatchItem> {
        let items = self.frame.items.as_deref()?;
        self.item.and_then(|i| items.get(i))
    }

    /// The message's kind.
    pub(crate) fn kind(&self) -> FrameKind {
        self.batch_item().map_or(self.frame.kind, |i| i.kind)
    }

    /// The id as its JSON text.
    pub(crate) fn id(&self) -> Option<&str> {
        match self.batch_item() {
            Some(i) => i.id.as_deref(),
            None => self.frame.id.as_deref(),
        }
    }

    /// The method (for a response, the method of the request it answers).
    pub(crate) fn method(&self) -> Option<&str> {
        match self.batch_item() {
            Some(i) => i.method.as_deref(),
            None => self.frame.method.as_deref(),
        }
    }

    /// The tool name the log recorded for a `tools/call` request or its answer.
    pub(crate) fn tool(&self) -> Option<&str> {
        match self.batch_item() {
            Some(i) => i.tool.as_deref(),
            None => self.frame.tool.as_deref(),
        }
    }

    /// Microseconds since the paired request, as the log recorded them.
    pub(crate) fn latency_us(&self) -> Option<u64> {
        match self.batch_item() {
            Some(i) => i.latency_us,
            None => self.frame.latency_us,
        }
    }

    /// `isError` of a `tools/call` result, as the log recorded it.
    pub(crate) fn is_error(&self) -> Option<bool> {
        match self.batch_item() {
            Some(i) => i.is_error,
            None => self.frame.is_error,
        }
    }

    /// Which way it went.
    pub(crate) fn dir(&self) -> Direction {
        self.frame.dir
    }
}

/// A message and, when it is a response or error, the request it answers (`None` for an
/// answer whose id matches no waiting request).
#[derive(Debug, Clone)]
pub(crate) struct Exchange {
    /// The message.
    pub message: Message,
    /// The request it answers.
    pub request: Option<Message>,
}

/// One line of a frame log, with its frame's messages paired.
#[derive(Debug)]
pub(crate) enum Entry {
    /// The header.
    Header(Header),
    /// The trailer.
    Trailer(Trailer),
    /// A line that is not a frame-log record.
    Bad {
        /// 1-based line number.
        line: u64,
    },
    /// A frame, and its messages (none for an unparseable frame).
    Frame {
        /// The frame.
        frame: Rc<Frame>,
        /// Its messages in order, each answer with its request.
        messages: Vec<Exchange>,
    },
}

/// The pairing iterator (see the module docs).
pub(crate) struct Exchanges<R> {
    reader: LogReader<R>,
    waiting: Outstanding<Message>,
}

impl Exchanges<BufReader<File>> {
    /// Opens the log at `path`.
    pub(crate) fn open(path: &Path) -> Result<Self, ReadError> {
        Ok(Exchanges::new(LogReader::open(path)?))
    }
}

impl<R: BufRead> Exchanges<R> {
    /// Pairs the records `reader` reads.
    pub(crate) fn new(reader: LogReader<R>) -> Self {
        Exchanges {
            reader,
            waiting: Outstanding::default(),
        }
    }

    /// The requests no answer has paired so far, in log order, taken out.
    pub(crate) fn take_unanswered(&mut self) -> Vec<Message> {
        let mut left: Vec<Message> = self.waiting.drain().map(|(_, m)| m).collect();
        left.sort_by_key(|m| (m.frame.seq, m.item));
        left
    }

    fn pair(&mut self, message: Message) -> Exchange {
        let request = match (message.kind(), message.id()) {
            (FrameKind::Request, Some(id)) => {
                self.waiting.request(message.dir(), id, message.clone());
                None
            }
            (FrameKind::Response | FrameKind::Error, id) => {
                self.waiting.answer(message.dir(), id.unwrap_or("null"))
            }
            _ => None,
        };
        Exchange { message, request }
    }
}

impl<R: BufRead> Iterator for Exchanges<R> {
    type Item = Result<Entry, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match self.reader.next()? {
            Ok(item) => item,
            Err(e) => return Some(Err(e)),
        };
        Some(Ok(match item {
            LogItem::Bad { line, .. } => Entry::Bad { line },
            LogItem::Line(LogLine::Header(h)) => Entry::Header(h),
            LogItem::Line(LogLine::Trailer(t)) => Entry::Trailer(t),
            LogItem::Line(LogLine::Frame(frame)) => {
                let frame: Rc<Frame> = Rc::from(frame);
                let messages = match frame.kind {
                    FrameKind::Unparseable => Vec::new(),
                    FrameKind::Batch => (0..frame.items.as_ref().map_or(0, Vec::len))
                        .map(|i| Message {
                            frame: frame.clone(),
                            item: Some(i),
                        })
                        .collect(),
                    _ => vec![Message {
                        frame: frame.clone(),
                        item: None,
                    }],
                };
                let messages = messages.into_iter().map(|m| self.pair(m)).collect();
                Entry::Frame { frame, messages }
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn frame(seq: u64, dir: &str, kind: &str, id: Option<&str>, method: &str) -> String {
        let mut f = json!({"type": "frame", "seq": seq, "ts": "2026-01-01T00:00:00Z",
            "dir": dir, "bytes": 1, "line_ending": "lf", "kind": kind, "method": method,
            "tokens": 1, "meta_tokens": 0});
        if let Some(id) = id {
            f["id"] = json!(id);
        }
        f.to_string()
    }

    /// (seq, batch item, seq of the paired request) per message.
    type Paired = Vec<(u64, Option<usize>, Option<u64>)>;

    fn pairs(log: &str) -> (Paired, Vec<u64>) {
        let mut ex = Exchanges::new(LogReader::new(log.as_bytes()));
        let mut out = Vec::new();
        for entry in ex.by_ref() {
            if let Entry::Frame { messages, .. } = entry.unwrap() {
                for e in messages {
                    out.push((
                        e.message.frame.seq,
                        e.message.item,
                        e.request.map(|r| r.frame.seq),
                    ));
                }
            }
        }
        let left = ex.take_unanswered().iter().map(|m| m.frame.seq).collect();
        (out, left)
    }

    #[test]
    fn answers_pair_per_direction_and_leftovers_are_unanswered() {
        let log = [
            frame(0, "c2s", "request", Some("0"), "tools/list"),
            frame(1, "s2c", "request", Some("0"), "roots/list"),
            frame(2, "c2s", "response", Some("0"), "roots/list"),
            frame(3, "c2s", "request", Some("1"), "tools/call"),
            frame(4, "s2c", "error", Some("9"), "x"),
            frame(5, "s2c", "response", Some("0"), "tools/list"),
            frame(6, "c2s", "notification", None, "notifications/initialized"),
        ]
        .join("\n");
        let (out, left) = pairs(&log);
        assert_eq!(
            out,
            [
                (0, None, None),
                (1, None, None),
                (2, None, Some(1)),
                (3, None, None),
                (4, None, None),
                (5, None, Some(0)),
                (6, None, None),
            ]
        );
        assert_eq!(left, [3]);
    }

    #[test]
    fn batch_items_pair_one_by_one() {
        let batch = json!({"type": "frame", "seq": 2, "ts": "t", "dir": "s2c", "bytes": 1,
            "line_ending": "lf", "kind": "batch", "tokens": 1, "meta_tokens": 0,
            "items": [{"kind": "response", "id": "2", "tokens": 1, "meta_tokens": 0},
                      {"kind": "response", "id": "1", "tokens": 1, "meta_tokens": 0}]});
        let log = [
            frame(0, "c2s", "request", Some("1"), "a"),
            frame(1, "c2s", "request", Some("2"), "b"),
            batch.to_string(),
        ]
        .join("\n");
        let (out, left) = pairs(&log);
        assert_eq!(out[2..], [(2, Some(0), Some(1)), (2, Some(1), Some(0))]);
        assert!(left.is_empty());
    }
}
