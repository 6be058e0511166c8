use super::*;

/// A session file of the real corpus.
fn real(name: &str) -> String {
    crate::import::real_data_tests::corpus_file("gemini-cli", name)
}

#[test]
fn the_json_lines_chat_of_2026_imports_with_updates_in_place() {
    let text = real("Mai0313__VibeCodingTracker__test_conversation_gemini__2026-05-21.jsonl");
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Each message once, in its latest version.
    let mut latest: Vec<&Value> = Vec::new();
    for v in lines.iter().filter(|v| v.get("type").is_some()) {
        match latest.iter().position(|m| m["id"] == v["id"]) {
            Some(at) => latest[at] = v,
            None => latest.push(v),
        }
    }
    let calls: usize = latest
        .iter()
        .map(|m| m["toolCalls"].as_array().map_or(0, Vec::len))
        .sum();
    assert_eq!(calls, 12);
    let (records, summary) = import_chat(&text).unwrap();
    assert!(summary.errors.is_empty(), "{summary}");
    assert_eq!(summary.lines, lines.len());
    assert_eq!(
        summary.skipped.get("message update").copied().unwrap_or(0),
        lines.iter().filter(|v| v.get("type").is_some()).count() - latest.len()
    );
    let said = |role: Role| records.messages.iter().filter(|m| m.role == role).count();
    assert_eq!((said(Role::User), said(Role::Assistant)), (3, 2));
    assert!(records
        .task
        .as_deref()
        .is_some_and(|t| t.starts_with("You are an AI agent")));
    let from_calls = records.tool_outputs.len() + records.files.len() + records.diffs.len();
    assert!(from_calls >= calls, "{summary}");
}

#[test]
fn a_bad_line_of_a_json_lines_chat_is_named_and_the_rest_imports() {
    let text = [
        r#"{"sessionId":"s","projectHash":"h","startTime":"2026-04-23T12:52:52.759Z"}"#,
        r#"{"id":"u1","type":"user","content":[{"text":"fix a.py"}]}"#,
        "{not json",
        r#"{"id":"g1","type":"gemini","content":""}"#,
        r#"{"id":"g1","type":"gemini","content":"done"}"#,
    ]
    .join("\n");
    let (records, summary) = import_chat(&text).unwrap();
    assert_eq!(summary.errors.len(), 1);
    assert_eq!(summary.errors[0].line, 3);
    assert_eq!(records.task.as_deref(), Some("fix a.py"));
    assert_eq!(records.messages[1].text, "done");
    assert!(import_chat("{not json").is_err());
}

#[test]
fn a_chat_whose_messages_are_not_a_list_is_refused_naming_the_place() {
    match import_chat(r#"{"sessionId": "s", "messages": {"0": {}}}"#) {
        Err(ImportError::Format { path, message }) => {
            assert_eq!(path, "messages");
            assert!(message.contains("invalid type"), "{message}");
        }
        other => panic!("expected a format error, got {other:?}"),
    }
    // A message that is not an object is counted by its place, and the rest imports.
    let (records, summary) = import_chat(
        r#"{"messages": [7, {"id": "m1", "type": "user", "content": "fix the build"}]}"#,
    )
    .unwrap();
    assert_eq!(summary.errors.len(), 1, "{summary}");
    assert!(
        summary.errors[0].message.contains("messages[0]"),
        "{summary}"
    );
    assert_eq!(records.task.as_deref(), Some("fix the build"));
}
