//! The records format: the optimizer's input (a public interface, see `docs/records.md`).

pub mod kind;
pub mod session_record;
pub mod understand;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use kind::Kind;
pub use session_record::SessionRecord;

/// Fields every record may carry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Common {
    /// A caller-chosen id; when absent the optimizer assigns a content hash.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// RFC 3339 time of the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Caller priority in 0..=1 (default 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<f64>,
}

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The human.
    User,
    /// The agent.
    Assistant,
    /// A system prompt.
    System,
    /// A tool's words.
    Tool,
}

/// A chat message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub text: String,
}

/// One run of a tool or command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// The tool or command line.
    pub tool: String,
    /// The arguments, as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Value>,
    /// What it printed.
    pub output: String,
    /// Its exit code, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    /// The directory it ran in, when the client recorded it (a relative path a command
    /// reads is resolved against it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
}

/// An error with an optional stack trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorRecord {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// The message.
    pub message: String,
    /// The stack trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

/// A snapshot of a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// The file's path.
    pub path: String,
    /// Its content at the time.
    pub content: String,
}

/// A change to a file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffRecord {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// The file's path.
    pub path: String,
    /// The unified diff.
    pub diff: String,
}

/// A test's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TestStatus {
    /// It passed.
    Passed,
    /// It failed.
    Failed,
    /// It was skipped.
    Skipped,
}

/// One test result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestResult {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// The test's name.
    pub name: String,
    /// Its outcome.
    pub status: TestStatus,
    /// What it printed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

/// Where a decision stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionStatus {
    /// Agreed and in force.
    Accepted,
    /// Suggested, not agreed.
    Proposed,
    /// Turned down.
    Rejected,
    /// Replaced by a later decision.
    Superseded,
}

/// A decision or constraint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Shared fields.
    #[serde(flatten)]
    pub common: Common,
    /// The decision.
    pub text: String,
    /// Where it stands.
    pub status: DecisionStatus,
}

/// A session's records: the optimizer's whole input.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Records {
    /// What the agent is trying to do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Chat messages.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Tool and command runs.
    #[serde(default)]
    pub tool_outputs: Vec<ToolOutput>,
    /// Errors.
    #[serde(default)]
    pub errors: Vec<ErrorRecord>,
    /// File snapshots.
    #[serde(default)]
    pub files: Vec<FileRecord>,
    /// Diffs.
    #[serde(default)]
    pub diffs: Vec<DiffRecord>,
    /// Test results.
    #[serde(default)]
    pub test_results: Vec<TestResult>,
    /// Decisions and constraints.
    #[serde(default)]
    pub decisions: Vec<Decision>,
}

/// Each file record of `records` as (id, path, content), for tests to compare.
#[cfg(test)]
pub(crate) fn file_triples(records: &Records) -> Vec<(&str, &str, &str)> {
    records
        .files
        .iter()
        .map(|f| {
            (
                f.common.id.as_deref().unwrap_or_default(),
                f.path.as_str(),
                f.content.as_str(),
            )
        })
        .collect()
}
