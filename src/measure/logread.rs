//! Streaming reader of frame logs: one line at a time, so a log of any size reads in
//! bounded memory.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use super::MeasureError;
use crate::framelog::{Frame, LogLine};

/// One line of a frame log, read.
#[derive(Debug)]
pub enum LogItem {
    /// A well-formed record.
    Line(LogLine),
    /// A line that is not a frame-log record (the log itself is damaged or truncated).
    Bad {
        /// 1-based line number.
        line: u64,
        /// Why it did not parse.
        error: String,
    },
}

/// Iterates over the records of a frame log.
pub struct LogReader<R> {
    input: R,
    buf: String,
    line: u64,
}

impl LogReader<BufReader<File>> {
    /// Opens the log at `path`.
    pub fn open(path: &Path) -> Result<Self, MeasureError> {
        let file = File::open(path).map_err(|source| MeasureError::Io {
            path: path.display().to_string(),
            source,
        })?;
        Ok(LogReader::new(BufReader::with_capacity(1 << 16, file)))
    }
}

impl<R: BufRead> LogReader<R> {
    /// Reads records from `input`.
    pub fn new(input: R) -> Self {
        LogReader {
            input,
            buf: String::new(),
            line: 0,
        }
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<LogItem, MeasureError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(MeasureError::Io {
                        path: format!("frame log line {}", self.line + 1),
                        source,
                    }))
                }
            }
            self.line += 1;
            let text = self.buf.trim_end_matches(['\n', '\r']);
            if text.is_empty() {
                continue;
            }
            return Some(Ok(match serde_json::from_str::<LogLine>(text) {
                Ok(record) => LogItem::Line(record),
                Err(e) => LogItem::Bad {
                    line: self.line,
                    error: e.to_string(),
                },
            }));
        }
    }
}

/// Parses a frame's wire text as JSON, when it has UTF-8 text that is JSON.
pub fn frame_json(frame: &Frame) -> Option<Value> {
    frame
        .raw
        .as_deref()
        .and_then(|raw| serde_json::from_str(raw).ok())
}

/// Parses what the server sent as JSON: its original text (`server_raw`) where the proxy
/// rewrote the frame (a `tools/list` answer extended with the injected tools), the wire text
/// otherwise.
pub fn server_json(frame: &Frame) -> Option<Value> {
    match &frame.server_raw {
        Some(raw) => serde_json::from_str(raw).ok(),
        None => frame_json(frame),
    }
}
