use super::*;

fn import(lines: &[serde_json::Value]) -> (Records, ImportSummary) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    import_transcript(&text)
}

#[test]
fn a_call_and_its_result_in_later_lines_become_one_record() {
    let (records, summary) = import(&[
        serde_json::json!({"type": "user", "uuid": "u1", "cwd": "/w", "timestamp": "2026-01-21T06:19:38.056Z",
            "message": {"role": "user", "content": "fix the test"}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "cwd": "/w",
            "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/src/a.py"}}]}}),
        serde_json::json!({"type": "user", "uuid": "r1", "cwd": "/w",
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
                 "content": "Exit code 1\nFAILED tests/test_a.py::test_x - assert 1 == 2"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "     1\u{2192}x = 1\n     2\u{2192}y = 2"}]}}),
        serde_json::json!({"type": "progress", "data": {}}),
    ]);
    assert_eq!(records.task.as_deref(), Some("fix the test"));
    assert_eq!(records.messages[0].common.id.as_deref(), Some("msg-L1-u1"));
    let run = &records.tool_outputs[0];
    assert_eq!((run.tool.as_str(), run.exit_code), ("pytest -q", Some(1)));
    assert_eq!(
        records.errors[0].message,
        "pytest -q: exit code 1: FAILED tests/test_a.py::test_x - assert 1 == 2"
    );
    assert_eq!(records.test_results[0].name, "tests/test_a.py::test_x");
    assert_eq!(
        records.test_results[0].status,
        crate::records::TestStatus::Failed
    );
    assert_eq!(records.files[0].path, "src/a.py");
    assert_eq!(records.files[0].content, "x = 1\ny = 2");
    assert!(records.files[0]
        .common
        .id
        .as_deref()
        .unwrap()
        .starts_with("file-L3-r1-"));
    assert_eq!(summary.skipped.get("type:progress"), Some(&1));
}

#[test]
fn a_bad_line_is_named_and_the_rest_imports() {
    let text = "{\"type\":\"user\",\"uuid\":\"u1\",\"message\":{\"content\":\"hello\"}}\n{not json\n[1]\n{\"type\":\"user\",\"uuid\":\"u2\",\"message\":{\"content\":\"again\"}}\n";
    let (records, summary) = import_transcript(text);
    assert_eq!(records.messages.len(), 2);
    let lines: Vec<usize> = summary.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3]);
    assert!(summary.errors[0]
        .to_string()
        .starts_with("line 2: not JSON: "));
    assert_eq!(
        summary.errors[1].to_string(),
        "line 3: expected a JSON object"
    );
}

#[test]
fn injected_context_summaries_and_sidechains() {
    let (records, summary) = import(&[
        serde_json::json!({"type": "user", "uuid": "u1", "message": {"content": format!("{INJECTED_MARKER} v=\"1\">old facts</ctxopt-context>")}}),
        serde_json::json!({"type": "user", "uuid": "u2", "isCompactSummary": true, "message": {"content": "This session is being continued. Summary: …"}}),
        serde_json::json!({"type": "assistant", "uuid": "a3", "isSidechain": true, "message": {"content": [{"type": "text", "text": "subagent says"}]}}),
        serde_json::json!({"type": "user", "uuid": "u4", "isMeta": true, "message": {"content": "Caveat"}}),
    ]);
    let ids: Vec<&str> = records
        .messages
        .iter()
        .map(|m| m.common.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["summary-L2-u2", "side-msg-L3-a3"]);
    assert_eq!(records.messages[0].role, Role::System);
    assert_eq!(summary.skipped.get("ctxopt-context"), Some(&1));
    assert_eq!(summary.skipped.get("meta"), Some(&1));
}

#[test]
fn resuming_between_a_call_and_its_result_loses_nothing() {
    let lines = [
        r#"{"type":"assistant","uuid":"a1","message":{"content":[{"type":"tool_use","id":"t1","name":"Write","input":{"file_path":"n.txt","content":"hi"}}]}}"#,
        r#"{"type":"user","uuid":"r1","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"ok"}]}}"#,
    ];
    let mut first = ClaudeImporter::default();
    let (mut out, mut summary) = (Vec::new(), ImportSummary::default());
    first.feed_line(1, lines[0], &mut out, &mut summary);
    let saved = serde_json::to_string(&first).unwrap();
    let mut second: ClaudeImporter = serde_json::from_str(&saved).unwrap();
    second.feed_line(2, lines[1], &mut out, &mut summary);
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].line, out[0].part), (2, 0));
    assert!(matches!(&out[0].record, SessionRecord::File(f) if f.content == "hi"));
}
