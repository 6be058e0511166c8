//! Reading a records file: JSON text in, validated [`Records`] out, or an error that names
//! the place (`errors[3].message: expected a string, found a number`).
//!
//! Three passes, each reporting the first problem it finds:
//! 1. the text must be one JSON value (no trailing characters) and that value an object;
//! 2. the fields every record shares (`id`, `timestamp`, `priority`) are checked on the raw
//!    JSON, so their errors carry the full path (serde reports flattened fields only by
//!    their record);
//! 3. serde reads the value into [`Records`] (types, required fields, enum values), then the
//!    checks serde cannot do: timestamps are RFC 3339, priorities lie in 0..=1, required
//!    strings are not blank, and caller ids are unique.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::records::{Common, Records};

/// Why a records file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordsError {
    /// The text is not a single JSON value.
    #[error("not JSON: {message} at line {line} column {column}")]
    Syntax {
        /// What the JSON reader saw.
        message: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
    },
    /// The JSON is well formed but does not follow the records format.
    #[error("{path}: {message}")]
    Invalid {
        /// Where: `errors[3].message`, or `(top level)`.
        path: String,
        /// What is wrong there.
        message: String,
    },
}

impl RecordsError {
    fn invalid(path: impl Into<String>, message: impl Into<String>) -> Self {
        RecordsError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

/// The path reported for a problem with the whole document.
const TOP_LEVEL: &str = "(top level)";

/// The record lists of the format, by their JSON names.
const LISTS: [&str; 7] = [
    "messages",
    "toolOutputs",
    "errors",
    "files",
    "diffs",
    "testResults",
    "decisions",
];

/// Parses and validates a records file.
pub fn parse_records(text: &str) -> Result<Records, RecordsError> {
    let value: Value = serde_json::from_str(text).map_err(|err| RecordsError::Syntax {
        message: syntax_message(&err),
        line: err.line(),
        column: err.column(),
    })?;
    let Value::Object(top) = &value else {
        return Err(RecordsError::invalid(
            TOP_LEVEL,
            format!("expected a JSON object, found {}", describe(&value)),
        ));
    };
    check_common_fields(top)?;
    let records: Records = serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        let path = if path == "." { TOP_LEVEL.into() } else { path };
        let message = clean_serde_message(&err.inner().to_string());
        match message.strip_prefix("missing required field ") {
            // serde names the object; name the missing field's own place.
            Some(field) if path != TOP_LEVEL => RecordsError::invalid(
                format!("{path}.{}", field.trim_matches('"')),
                "required field is missing",
            ),
            _ => RecordsError::invalid(path, message),
        }
    })?;
    check_semantics(&records)?;
    Ok(records)
}

/// Pass 2: the shared fields of every record, on the raw JSON.
fn check_common_fields(top: &Map<String, Value>) -> Result<(), RecordsError> {
    for list in LISTS {
        let Some(Value::Array(items)) = top.get(list) else {
            continue;
        };
        for (index, item) in items.iter().enumerate() {
            let Value::Object(fields) = item else {
                continue;
            };
            for (field, expected) in [("id", "a string"), ("timestamp", "a string")] {
                if let Some(v) = fields.get(field) {
                    if !v.is_string() {
                        return Err(RecordsError::invalid(
                            format!("{list}[{index}].{field}"),
                            format!("expected {expected}, found {}", describe(v)),
                        ));
                    }
                }
            }
            if let Some(v) = fields.get("priority") {
                if !v.is_number() {
                    return Err(RecordsError::invalid(
                        format!("{list}[{index}].priority"),
                        format!("expected a number in 0..=1, found {}", describe(v)),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Pass 3b: what serde cannot check.
fn check_semantics(records: &Records) -> Result<(), RecordsError> {
    if let Some(task) = &records.task {
        not_blank("task", task)?;
    }
    let mut ids: BTreeMap<String, String> = BTreeMap::new();
    let mut check = |place: String, common: &Common| -> Result<(), RecordsError> {
        if let Some(id) = &common.id {
            not_blank(&format!("{place}.id"), id)?;
            if let Some(first) = ids.insert(id.clone(), place.clone()) {
                return Err(RecordsError::invalid(
                    format!("{place}.id"),
                    format!("duplicate id \"{id}\" (first used by {first})"),
                ));
            }
        }
        if let Some(ts) = &common.timestamp {
            if let Err(err) = chrono::DateTime::parse_from_rfc3339(ts) {
                return Err(RecordsError::invalid(
                    format!("{place}.timestamp"),
                    format!("expected an RFC 3339 time such as 2026-01-31T09:30:00Z, found \"{ts}\" ({err})"),
                ));
            }
        }
        if let Some(p) = common.priority {
            if !(0.0..=1.0).contains(&p) {
                return Err(RecordsError::invalid(
                    format!("{place}.priority"),
                    format!("expected a number in 0..=1, found {p}"),
                ));
            }
        }
        Ok(())
    };
    for (i, r) in records.messages.iter().enumerate() {
        check(format!("messages[{i}]"), &r.common)?;
    }
    for (i, r) in records.tool_outputs.iter().enumerate() {
        check(format!("toolOutputs[{i}]"), &r.common)?;
        not_blank(&format!("toolOutputs[{i}].tool"), &r.tool)?;
    }
    for (i, r) in records.errors.iter().enumerate() {
        check(format!("errors[{i}]"), &r.common)?;
        not_blank(&format!("errors[{i}].message"), &r.message)?;
    }
    for (i, r) in records.files.iter().enumerate() {
        check(format!("files[{i}]"), &r.common)?;
        not_blank(&format!("files[{i}].path"), &r.path)?;
    }
    for (i, r) in records.diffs.iter().enumerate() {
        check(format!("diffs[{i}]"), &r.common)?;
        not_blank(&format!("diffs[{i}].path"), &r.path)?;
    }
    for (i, r) in records.test_results.iter().enumerate() {
        check(format!("testResults[{i}]"), &r.common)?;
        not_blank(&format!("testResults[{i}].name"), &r.name)?;
    }
    for (i, r) in records.decisions.iter().enumerate() {
        check(format!("decisions[{i}]"), &r.common)?;
        not_blank(&format!("decisions[{i}].text"), &r.text)?;
    }
    Ok(())
}

fn not_blank(path: &str, text: &str) -> Result<(), RecordsError> {
    if text.trim().is_empty() {
        Err(RecordsError::invalid(
            path,
            "expected a non-empty string, found a blank one",
        ))
    } else {
        Ok(())
    }
}

/// How a JSON value is named in messages.
fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON reader's message without its position (reported separately).
fn syntax_message(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let message = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    match message {
        "trailing characters" => "trailing characters after the JSON value".into(),
        "EOF while parsing a value"
        | "EOF while parsing an object"
        | "EOF while parsing a list" => "the text ends before the JSON value does".into(),
        other => other.into(),
    }
}

/// Rewrites serde's messages into the format's words:
/// `invalid type: number, expected a string` → `expected a string, found a number`;
/// `missing field `x`` → `missing required field "x"`;
/// `unknown variant `x`, expected one of `a`, `b`` → `unknown value "x", expected one of a, b`.
fn clean_serde_message(raw: &str) -> String {
    if let Some(rest) = raw.strip_prefix("invalid type: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            return format!(
                "expected {}, found {}",
                name_expected(expected),
                name_found(found)
            );
        }
    }
    if let Some(field) = raw.strip_prefix("missing field ") {
        return format!("missing required field \"{}\"", field.trim_matches('`'));
    }
    if let Some(rest) = raw.strip_prefix("unknown variant ") {
        if let Some((variant, expected)) = rest.split_once(", expected one of ") {
            return format!(
                "unknown value \"{}\", expected one of {}",
                variant.trim_matches('`'),
                expected.replace('`', "")
            );
        }
    }
    if let Some(rest) = raw.strip_prefix("invalid value: ") {
        if let Some((found, expected)) = rest.split_once(", expected ") {
            return format!(
                "expected {}, found {}",
                name_expected(expected),
                name_found(found)
            );
        }
    }
    raw.into()
}

/// serde's "expected" phrases in the format's words.
fn name_expected(expected: &str) -> String {
    if expected.starts_with("struct ") || expected == "a map" {
        "an object".into()
    } else if expected == "a sequence" {
        "an array".into()
    } else if expected == "i64" || expected == "u64" || expected == "i32" {
        "an integer".into()
    } else if expected == "f64" {
        "a number".into()
    } else if expected.starts_with("variant identifier") || expected.starts_with("enum ") {
        "one of the listed values".into()
    } else {
        expected.into()
    }
}

/// serde's "found" phrases in the format's words.
fn name_found(found: &str) -> String {
    match found {
        "map" => "an object".into(),
        "sequence" => "an array".into(),
        "number" => "a number".into(),
        "null" | "unit value" => "null".into(),
        other if other.starts_with("boolean") => "a boolean".into(),
        other if other.starts_with("string") => "a string".into(),
        other if other.starts_with("integer") || other.starts_with("floating point") => {
            "a number".into()
        }
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        parse_records(text).unwrap_err().to_string()
    }

    #[test]
    fn accepts_a_full_record_set() {
        let records = parse_records(
            r#"{"task":"fix it",
                "messages":[{"id":"m1","role":"user","text":"hi","timestamp":"2026-01-02T03:04:05Z","priority":0.9}],
                "toolOutputs":[{"tool":"npm test","args":{"a":1},"output":"ok","exitCode":0}],
                "errors":[{"message":"boom","stack":"at x"}],
                "files":[{"path":"a.ts","content":""}],
                "diffs":[{"path":"a.ts","diff":"@@"}],
                "testResults":[{"name":"t","status":"failed"}],
                "decisions":[{"text":"use X","status":"accepted","timestamp":"2026-01-02T03:04:05+02:00"}]}"#,
        )
        .unwrap();
        assert_eq!(records.messages[0].common.priority, Some(0.9));
        assert_eq!(records.tool_outputs[0].exit_code, Some(0));
        assert_eq!(records.decisions.len(), 1);
    }

    #[test]
    fn accepts_an_empty_object() {
        assert_eq!(parse_records("{}").unwrap(), Records::default());
    }

    #[test]
    fn wrong_type_names_the_place() {
        assert_eq!(
            err(r#"{"errors":[{"message":"a"},{"message":"b"},{"message":"c"},{"message":3}]}"#),
            "errors[3].message: expected a string, found a number"
        );
        assert_eq!(
            err(r#"{"toolOutputs":[{"tool":"t","output":"o","exitCode":"1"}]}"#),
            "toolOutputs[0].exitCode: expected an integer, found a string"
        );
        assert_eq!(
            err(r#"{"messages":{"role":"user"}}"#),
            "messages: expected an array, found an object"
        );
        assert_eq!(
            err(r#"{"files":["a.ts"]}"#),
            "files[0]: expected an object, found a string"
        );
        assert_eq!(
            err(r#"{"task":7}"#),
            "task: expected a string, found a number"
        );
    }

    #[test]
    fn shared_fields_name_their_own_place() {
        assert_eq!(
            err(r#"{"messages":[{"role":"user","text":"x","priority":"high"}]}"#),
            "messages[0].priority: expected a number in 0..=1, found a string"
        );
        assert_eq!(
            err(r#"{"decisions":[{"text":"x","status":"accepted","timestamp":5}]}"#),
            "decisions[0].timestamp: expected a string, found a number"
        );
        assert_eq!(
            err(r#"{"diffs":[{"path":"a","diff":"d","id":["x"]}]}"#),
            "diffs[0].id: expected a string, found an array"
        );
    }

    #[test]
    fn missing_field_names_the_field() {
        assert_eq!(
            err(r#"{"errors":[{"stack":"at x"}]}"#),
            "errors[0].message: required field is missing"
        );
        assert_eq!(
            err(r#"{"testResults":[{"status":"passed"}]}"#),
            "testResults[0].name: required field is missing"
        );
    }

    #[test]
    fn bad_enum_value_lists_the_allowed_ones() {
        assert_eq!(
            err(r#"{"testResults":[{"name":"a","status":"done"}]}"#),
            "testResults[0].status: unknown value \"done\", expected one of passed, failed, skipped"
        );
        assert_eq!(
            err(r#"{"messages":[{"role":"robot","text":"x"}]}"#),
            "messages[0].role: unknown value \"robot\", expected one of user, assistant, system, tool"
        );
    }

    #[test]
    fn bad_timestamps_are_rejected() {
        for ts in [
            "yesterday",
            "2026-01-02",
            "2026-01-02 03:04:05",
            "2026-13-02T03:04:05Z",
        ] {
            let text = format!(
                r#"{{"messages":[{{"role":"user","text":"x"}},{{"role":"user","text":"y","timestamp":"{ts}"}}]}}"#
            );
            let message = err(&text);
            assert!(
                message.starts_with("messages[1].timestamp: expected an RFC 3339 time"),
                "{message}"
            );
        }
    }

    #[test]
    fn priority_out_of_range_is_rejected() {
        assert_eq!(
            err(r#"{"files":[{"path":"a","content":"","priority":1.5}]}"#),
            "files[0].priority: expected a number in 0..=1, found 1.5"
        );
        assert_eq!(
            err(r#"{"files":[{"path":"a","content":"","priority":-0.1}]}"#),
            "files[0].priority: expected a number in 0..=1, found -0.1"
        );
        assert!(parse_records(r#"{"files":[{"path":"a","content":"","priority":1}]}"#).is_ok());
    }

    #[test]
    fn blank_required_strings_are_rejected() {
        assert_eq!(
            err(r#"{"toolOutputs":[{"tool":"  ","output":""}]}"#),
            "toolOutputs[0].tool: expected a non-empty string, found a blank one"
        );
        assert_eq!(
            err(r#"{"task":""}"#),
            "task: expected a non-empty string, found a blank one"
        );
    }

    #[test]
    fn duplicate_ids_are_rejected() {
        assert_eq!(
            err(
                r#"{"messages":[{"id":"a","role":"user","text":"x"}],"errors":[{"id":"a","message":"m"}]}"#
            ),
            "errors[0].id: duplicate id \"a\" (first used by messages[0])"
        );
    }

    #[test]
    fn not_json_reports_line_and_column() {
        assert_eq!(
            err("{\n  \"task\": \"x\",\n  oops\n}"),
            "not JSON: key must be a string at line 3 column 3"
        );
        assert_eq!(
            err("{\"task\": "),
            "not JSON: the text ends before the JSON value does at line 1 column 9"
        );
        assert_eq!(
            err(""),
            "not JSON: the text ends before the JSON value does at line 1 column 0"
        );
    }

    #[test]
    fn trailing_garbage_is_rejected() {
        assert_eq!(
            err("{} x"),
            "not JSON: trailing characters after the JSON value at line 1 column 4"
        );
        assert!(parse_records("{}\n").is_ok());
    }

    #[test]
    fn top_level_must_be_an_object() {
        assert_eq!(
            err("[1]"),
            "(top level): expected a JSON object, found an array"
        );
        assert_eq!(
            err("\"x\""),
            "(top level): expected a JSON object, found a string"
        );
        assert_eq!(
            err("null"),
            "(top level): expected a JSON object, found null"
        );
    }
}
