//! One session record of any kind: the unit the store keeps, in the optimizer's records
//! format (`src/records/mod.rs`), so a workspace's rows load straight into
//! [`Records`].

use crate::records::Kind;
use crate::records::{
    Common, Decision, DiffRecord, ErrorRecord, FileRecord, Message, Records, TestResult, ToolOutput,
};

/// A record of any kind.
#[derive(Debug, Clone, PartialEq)]
pub enum SessionRecord {
    /// A chat message.
    Message(Message),
    /// A tool or command run.
    ToolOutput(ToolOutput),
    /// An error.
    Error(ErrorRecord),
    /// A file snapshot.
    File(FileRecord),
    /// A diff.
    Diff(DiffRecord),
    /// A test result.
    TestResult(TestResult),
    /// A decision or constraint.
    Decision(Decision),
}

impl SessionRecord {
    /// The record's kind.
    pub fn kind(&self) -> Kind {
        match self {
            SessionRecord::Message(_) => Kind::Message,
            SessionRecord::ToolOutput(_) => Kind::ToolOutput,
            SessionRecord::Error(_) => Kind::Error,
            SessionRecord::File(_) => Kind::File,
            SessionRecord::Diff(_) => Kind::Diff,
            SessionRecord::TestResult(_) => Kind::TestResult,
            SessionRecord::Decision(_) => Kind::Decision,
        }
    }

    /// The fields every record shares.
    pub fn common(&self) -> &Common {
        match self {
            SessionRecord::Message(r) => &r.common,
            SessionRecord::ToolOutput(r) => &r.common,
            SessionRecord::Error(r) => &r.common,
            SessionRecord::File(r) => &r.common,
            SessionRecord::Diff(r) => &r.common,
            SessionRecord::TestResult(r) => &r.common,
            SessionRecord::Decision(r) => &r.common,
        }
    }

    /// The shared fields, to change.
    pub fn common_mut(&mut self) -> &mut Common {
        match self {
            SessionRecord::Message(r) => &mut r.common,
            SessionRecord::ToolOutput(r) => &mut r.common,
            SessionRecord::Error(r) => &mut r.common,
            SessionRecord::File(r) => &mut r.common,
            SessionRecord::Diff(r) => &mut r.common,
            SessionRecord::TestResult(r) => &mut r.common,
            SessionRecord::Decision(r) => &mut r.common,
        }
    }

    /// The file path, for file snapshots and diffs.
    pub fn path(&self) -> Option<&str> {
        match self {
            SessionRecord::File(r) => Some(&r.path),
            SessionRecord::Diff(r) => Some(&r.path),
            _ => None,
        }
    }

    /// The words a search looks at: every text field, joined by newlines.
    pub fn search_text(&self) -> String {
        match self {
            SessionRecord::Message(r) => r.text.clone(),
            SessionRecord::ToolOutput(r) => format!("{}\n{}", r.tool, r.output),
            SessionRecord::Error(r) => match &r.stack {
                Some(stack) => format!("{}\n{}", r.message, stack),
                None => r.message.clone(),
            },
            SessionRecord::File(r) => format!("{}\n{}", r.path, r.content),
            SessionRecord::Diff(r) => format!("{}\n{}", r.path, r.diff),
            SessionRecord::TestResult(r) => match &r.output {
                Some(output) => format!("{}\n{}", r.name, output),
                None => r.name.clone(),
            },
            SessionRecord::Decision(r) => r.text.clone(),
        }
    }

    /// The record as compact JSON in the records format.
    pub(crate) fn to_json(&self) -> String {
        let result = match self {
            SessionRecord::Message(r) => serde_json::to_string(r),
            SessionRecord::ToolOutput(r) => serde_json::to_string(r),
            SessionRecord::Error(r) => serde_json::to_string(r),
            SessionRecord::File(r) => serde_json::to_string(r),
            SessionRecord::Diff(r) => serde_json::to_string(r),
            SessionRecord::TestResult(r) => serde_json::to_string(r),
            SessionRecord::Decision(r) => serde_json::to_string(r),
        };
        // The record types hold only strings, numbers, enums and JSON values: they always
        // serialize.
        result.expect("records always serialize")
    }

    /// Reads a record of `kind` from its JSON.
    pub fn from_json(kind: Kind, json: &str) -> Result<SessionRecord, serde_json::Error> {
        Ok(match kind {
            Kind::Message => SessionRecord::Message(serde_json::from_str(json)?),
            Kind::ToolOutput => SessionRecord::ToolOutput(serde_json::from_str(json)?),
            Kind::Error => SessionRecord::Error(serde_json::from_str(json)?),
            Kind::File => SessionRecord::File(serde_json::from_str(json)?),
            Kind::Diff => SessionRecord::Diff(serde_json::from_str(json)?),
            Kind::TestResult => SessionRecord::TestResult(serde_json::from_str(json)?),
            Kind::Decision => SessionRecord::Decision(serde_json::from_str(json)?),
            Kind::Task => {
                return Err(serde::de::Error::custom("a task is not a session record"));
            }
        })
    }

    /// Appends the record to its list in `records`.
    pub fn push_into(self, records: &mut Records) {
        match self {
            SessionRecord::Message(r) => records.messages.push(r),
            SessionRecord::ToolOutput(r) => records.tool_outputs.push(r),
            SessionRecord::Error(r) => records.errors.push(r),
            SessionRecord::File(r) => records.files.push(r),
            SessionRecord::Diff(r) => records.diffs.push(r),
            SessionRecord::TestResult(r) => records.test_results.push(r),
            SessionRecord::Decision(r) => records.decisions.push(r),
        }
    }

    /// Every record of `records`, list by list in the format's order (the task is not a
    /// record and is left out).
    pub fn all_of(records: Records) -> Vec<SessionRecord> {
        let mut out = Vec::new();
        out.extend(records.messages.into_iter().map(SessionRecord::Message));
        out.extend(
            records
                .tool_outputs
                .into_iter()
                .map(SessionRecord::ToolOutput),
        );
        out.extend(records.errors.into_iter().map(SessionRecord::Error));
        out.extend(records.files.into_iter().map(SessionRecord::File));
        out.extend(records.diffs.into_iter().map(SessionRecord::Diff));
        out.extend(
            records
                .test_results
                .into_iter()
                .map(SessionRecord::TestResult),
        );
        out.extend(records.decisions.into_iter().map(SessionRecord::Decision));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trips_every_kind() {
        let text = r#"{"messages":[{"role":"user","text":"hi"}],
            "toolOutputs":[{"tool":"ls","output":"a","exitCode":0}],
            "errors":[{"message":"boom","stack":"at x"}],
            "files":[{"path":"a.rs","content":"fn a(){}"}],
            "diffs":[{"path":"a.rs","diff":"@@"}],
            "testResults":[{"name":"t","status":"failed"}],
            "decisions":[{"text":"use sqlite","status":"accepted"}]}"#;
        let records: Records = serde_json::from_str(text).unwrap();
        let all = SessionRecord::all_of(records.clone());
        assert_eq!(all.len(), 7);
        let mut back = Records::default();
        for r in all {
            let kind = r.kind();
            let again = SessionRecord::from_json(kind, &r.to_json()).unwrap();
            assert_eq!(again, r);
            assert_eq!(kind.name().parse::<Kind>().unwrap(), kind);
            again.push_into(&mut back);
        }
        assert_eq!(back, records);
        assert!(
            "task".parse::<Kind>().is_err(),
            "a task is not a stored kind"
        );
        assert!(SessionRecord::from_json(Kind::Task, "{}").is_err());
    }
}
