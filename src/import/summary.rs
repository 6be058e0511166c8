//! What an import produced: records by kind, what was skipped (by reason) and the lines
//! that could not be read. `ctxopt import` prints it on stderr; the hooks write it to their
//! log.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::records::Records;
use crate::records::SessionRecord;

/// A line (or entry) of a session file that could not be read; the rest still imports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LineError {
    /// 1-based line of the file (entry number for a JSON array).
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The outcome of one import.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ImportSummary {
    /// Lines (or entries) read.
    pub lines: usize,
    /// Records made, by kind (`messages`, `toolOutputs`, …, the records format's list names).
    pub records: BTreeMap<String, usize>,
    /// What was skipped, by reason (`type:progress`, `block:thinking`, `field:slug`, …).
    pub skipped: BTreeMap<String, usize>,
    /// The lines that could not be read.
    pub errors: Vec<LineError>,
    /// The lines where the client compacted the conversation (Claude Code's `system`
    /// `compact_boundary` entries, Codex's `compacted` items), in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boundaries: Vec<usize>,
}

impl ImportSummary {
    /// Counts one skipped item under `reason`.
    pub fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }

    /// Records a line that could not be read.
    pub fn error(&mut self, line: usize, message: impl Into<String>) {
        self.errors.push(LineError {
            line,
            message: message.into(),
        });
    }

    /// Sets the record counts from `records` (empty lists are left out).
    pub(crate) fn count_records(&mut self, records: &Records) {
        let counts = [
            ("messages", records.messages.len()),
            ("toolOutputs", records.tool_outputs.len()),
            ("errors", records.errors.len()),
            ("files", records.files.len()),
            ("diffs", records.diffs.len()),
            ("testResults", records.test_results.len()),
            ("decisions", records.decisions.len()),
        ];
        self.records = counts
            .into_iter()
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (k.to_string(), n))
            .collect();
    }

    /// Counts one record made (incremental imports, which never hold all records at once).
    pub(crate) fn count_record(&mut self, record: &SessionRecord) {
        let list = match record {
            SessionRecord::Message(_) => "messages",
            SessionRecord::ToolOutput(_) => "toolOutputs",
            SessionRecord::Error(_) => "errors",
            SessionRecord::File(_) => "files",
            SessionRecord::Diff(_) => "diffs",
            SessionRecord::TestResult(_) => "testResults",
            SessionRecord::Decision(_) => "decisions",
        };
        *self.records.entry(list.to_string()).or_default() += 1;
    }
}

impl fmt::Display for ImportSummary {
    /// `12 lines; records: messages 4, toolOutputs 3; skipped: type:progress 2; 1 compaction
    /// boundary; 1 unreadable line`,
    /// then one line per unreadable line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |m: &BTreeMap<String, usize>| {
            m.iter()
                .map(|(k, n)| format!("{k} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        write!(f, "{} lines; records: ", self.lines)?;
        if self.records.is_empty() {
            f.write_str("none")?;
        } else {
            f.write_str(&list(&self.records))?;
        }
        if !self.skipped.is_empty() {
            write!(f, "; skipped: {}", list(&self.skipped))?;
        }
        match self.boundaries.len() {
            0 => {}
            1 => f.write_str("; 1 compaction boundary")?,
            n => write!(f, "; {n} compaction boundaries")?,
        }
        match self.errors.len() {
            0 => {}
            1 => f.write_str("; 1 unreadable line")?,
            n => write!(f, "; {n} unreadable lines")?,
        }
        for e in &self.errors {
            write!(f, "\n  {e}")?;
        }
        Ok(())
    }
}
