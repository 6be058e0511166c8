//! What kind of record something is: the records format's lists (and the task), as the
//! optimizer's units, the store's `kind` column and the reports name them.

use std::fmt;
use std::str::FromStr;

/// What kind of record a unit came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// The task statement.
    Task,
    /// A chat message.
    Message,
    /// A tool or command run.
    ToolOutput,
    /// An error with its stack.
    Error,
    /// A file snapshot.
    File,
    /// A diff.
    Diff,
    /// A test result.
    TestResult,
    /// A decision or constraint.
    Decision,
}

impl Kind {
    /// The kinds a session record can have (every kind but the task), in the records
    /// format's list order; the store keeps these.
    pub(crate) const RECORDS: [Kind; 7] = [
        Kind::Message,
        Kind::ToolOutput,
        Kind::Error,
        Kind::File,
        Kind::Diff,
        Kind::TestResult,
        Kind::Decision,
    ];

    /// The kind's name in `sources` and `omitted` (`toolOutput`, …), and in the store's
    /// `kind` column.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Message => "message",
            Kind::ToolOutput => "toolOutput",
            Kind::Error => "error",
            Kind::File => "file",
            Kind::Diff => "diff",
            Kind::TestResult => "testResult",
            Kind::Decision => "decision",
        }
    }

    /// The list the kind lives in, in the records format (`toolOutputs`, …).
    pub fn list(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Message => "messages",
            Kind::ToolOutput => "toolOutputs",
            Kind::Error => "errors",
            Kind::File => "files",
            Kind::Diff => "diffs",
            Kind::TestResult => "testResults",
            Kind::Decision => "decisions",
        }
    }

    /// Whether records of this kind are structured: kept or dropped whole, never split.
    pub(crate) fn is_structured(self) -> bool {
        !matches!(self, Kind::Message | Kind::ToolOutput | Kind::File)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Parses a session record's kind by its [`Kind::name`] (the task is not one).
impl FromStr for Kind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::RECORDS
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown record kind `{s}`"))
    }
}
