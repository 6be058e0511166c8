//! The streaming frame-log reader: one line at a time, so a log of any size reads in memory
//! bounded by its longest line. Blank lines are skipped; any other line that is not a record
//! is reported as [`LogItem::Bad`], and reading goes on.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use super::record::LogLine;

/// A frame log that could not be read.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
#[non_exhaustive]
pub struct ReadError {
    /// The file, or the line that failed.
    pub(crate) path: String,
    /// The cause.
    #[source]
    pub(crate) source: std::io::Error,
}

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

/// Iterates over the records of a frame log. Blank lines are skipped.
pub struct LogReader<R> {
    input: R,
    buf: String,
    line: u64,
}

impl LogReader<BufReader<File>> {
    /// Opens the log at `path`.
    pub(crate) fn open(path: &Path) -> Result<Self, ReadError> {
        let file = File::open(path).map_err(|source| ReadError {
            path: path.display().to_string(),
            source,
        })?;
        Ok(LogReader::new(BufReader::with_capacity(1 << 16, file)))
    }
}

impl<R: BufRead> LogReader<R> {
    /// Reads records from `input`.
    pub(crate) fn new(input: R) -> Self {
        LogReader {
            input,
            buf: String::new(),
            line: 0,
        }
    }

    /// The 1-based number of the line read last (0 before the first).
    pub fn line(&self) -> u64 {
        self.line
    }
}

impl<R: BufRead> Iterator for LogReader<R> {
    type Item = Result<LogItem, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            self.buf.clear();
            match self.input.read_line(&mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(source) => {
                    return Some(Err(ReadError {
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
                Err(e) => {
                    tracing::debug!("frame log line {} is not a record: {e}", self.line);
                    LogItem::Bad {
                        line: self.line,
                        error: e.to_string(),
                    }
                }
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_records_counts_bad_lines_and_skips_blank_ones() {
        let text = "{\"type\":\"trailer\",\"ts\":\"t\",\"exit\":{},\"frames_relayed\":{\"c2s\":0,\"s2c\":0},\
\"frames_logged\":0,\"frames_unlogged\":0,\"bytes\":{\"c2s\":0,\"s2c\":0},\"errors\":[]}\n\n\ngarbage\n";
        let items: Vec<LogItem> = LogReader::new(text.as_bytes())
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(items.len(), 2);
        assert!(matches!(items[0], LogItem::Line(LogLine::Trailer(_))));
        assert!(matches!(items[1], LogItem::Bad { line: 4, .. }));
    }

    #[test]
    fn a_missing_log_names_its_path() {
        let err = LogReader::open(Path::new("no/such/log.jsonl"))
            .err()
            .unwrap();
        assert!(err.to_string().starts_with("no/such/log.jsonl: "), "{err}");
    }
}
