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

/// A headless run's transcript as `gemini -p … --output-format stream-json` prints it (the
/// event shapes of Gemini CLI's headless reference; written here: no recorded one was
/// found under a licence that allows copying it).
const STREAM: &str = r#"{"type":"init","timestamp":"2026-03-01T10:00:00.000Z","session_id":"s-1","model":"gemini-2.5-pro"}
{"type":"message","timestamp":"2026-03-01T10:00:00.100Z","role":"user","content":"Why does the upload time out?"}
{"type":"message","timestamp":"2026-03-01T10:00:01.000Z","role":"assistant","content":"Let me read ","delta":true}
{"type":"message","timestamp":"2026-03-01T10:00:01.100Z","role":"assistant","content":"the config.","delta":true}
{"type":"tool_use","timestamp":"2026-03-01T10:00:02.000Z","tool_name":"read_file","tool_id":"read_file-1","parameters":{"file_path":"config/upload.toml"}}
{"type":"tool_result","timestamp":"2026-03-01T10:00:02.100Z","tool_id":"read_file-1","status":"success","output":"timeout_seconds = 30\n"}
{"type":"tool_use","timestamp":"2026-03-01T10:00:03.000Z","tool_name":"run_shell_command","tool_id":"run_shell_command-2","parameters":{"command":"pytest -q tests/test_upload.py"}}
{"type":"tool_result","timestamp":"2026-03-01T10:00:09.000Z","tool_id":"run_shell_command-2","status":"error","error":{"type":"shell_error","message":"FAILED tests/test_upload.py::test_big_file - TimeoutError"}}
{"type":"error","timestamp":"2026-03-01T10:00:09.500Z","severity":"warning","message":"Loop detected, stopping"}
{"type":"future_event","timestamp":"2026-03-01T10:00:09.600Z"}
not json
{"type":"message","timestamp":"2026-03-01T10:00:10.000Z","role":"assistant","content":"The timeout is 30 s.","delta":true}
{"type":"result","timestamp":"2026-03-01T10:00:10.100Z","status":"success","stats":{"total_tokens":900}}
"#;

#[test]
fn a_stream_json_transcript_imports_as_a_saved_chat_would() {
    let (records, summary) = import_chat(STREAM).unwrap();
    assert_eq!(
        records.task.as_deref(),
        Some("Why does the upload time out?")
    );
    let said: Vec<(&Role, &str)> = records
        .messages
        .iter()
        .map(|m| (&m.role, m.text.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            (&Role::User, "Why does the upload time out?"),
            (&Role::Assistant, "Let me read the config."),
            (&Role::Assistant, "The timeout is 30 s."),
        ]
    );
    assert_eq!(records.files.len(), 1);
    assert_eq!(records.files[0].path, "config/upload.toml");
    assert_eq!(records.files[0].content, "timeout_seconds = 30\n");
    let errors: Vec<&str> = records.errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        errors,
        [
            "run_shell_command: FAILED tests/test_upload.py::test_big_file - TimeoutError",
            "warning: Loop detected, stopping",
        ]
    );
    assert_eq!(summary.errors.len(), 1, "{summary}");
    assert_eq!(summary.errors[0].line, 11);
    for skipped in ["init", "result", "type:future_event"] {
        assert_eq!(
            summary.skipped.get(skipped),
            Some(&1),
            "{skipped}: {summary}"
        );
    }
}

#[test]
fn a_write_todos_call_is_the_plan() {
    // The shape Gemini CLI's documentation gives (`docs/tools/todos.md`): the whole list
    // each time. No chat of the corpus has one (the tool is off by default).
    let chat = serde_json::json!({"sessionId": "s", "messages": [
        {"id": "u1", "type": "user", "content": "port the parser"},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [
            {"id": "c1", "name": "write_todos", "status": "success", "args": {"todos": [
                {"description": "Read the old parser", "status": "completed"},
                {"description": "Write the new one", "status": "in_progress"},
                {"description": "Drop the old one", "cancelled": true, "status": "cancelled"}]},
             "result": [{"functionResponse": {"id": "c1", "name": "write_todos",
                 "response": {"output": "Successfully updated the todo list."}}}]}]}]});
    let (records, _) = import_chat(&chat.to_string()).unwrap();
    assert_eq!(
        crate::import::plans::plans_of(&records),
        ["Plan (write_todos):\n- [completed] Read the old parser\n- [in_progress] Write the new one\n- [cancelled] Drop the old one"]
    );
}

#[test]
fn a_shell_commands_output_is_what_it_printed_and_a_read_is_the_file() {
    // A real chat (Gemini CLI, December 2025) reads a file through `run_shell_command`.
    let (records, _) = import_chat(&real(
        "mischa-thisness__M-Gemini__session-2025-12-24T21-37-2ccb51c5.json",
    ))
    .unwrap();
    let read = records
        .files
        .iter()
        .find(|f| f.path == "/etc/pam.d/sudo")
        .expect("the read is a file");
    assert!(read.content.starts_with("#%PAM"), "{}", read.content);
    assert!(!read.content.contains("Exit Code:"), "{}", read.content);
    // No output keeps the text Gemini CLI wraps it in; each keeps its exit code.
    assert!(!records.tool_outputs.is_empty());
    for run in &records.tool_outputs {
        assert!(!run.output.starts_with("Command: "), "{}", run.output);
        assert!(
            !run.output.contains("\nProcess Group PGID: "),
            "{}",
            run.output
        );
    }
    assert!(records.tool_outputs.iter().any(|o| o.exit_code == Some(2)));
}

#[test]
fn a_shell_result_is_taken_apart_from_its_end() {
    let text = "Command: ./check\nDirectory: web\nOutput: ok\nError: not this one\nlast\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 7";
    assert_eq!(
        ShellResult::of(text),
        ShellResult {
            output: "ok\nError: not this one\nlast".into(),
            exit_code: Some(1),
            directory: Some("web".into()),
        }
    );
    let failed =
        "Command: x\nDirectory: (root)\nOutput: (empty)\nError: spawn x ENOENT\nExit Code: (none)";
    assert_eq!(
        ShellResult::of(failed),
        ShellResult {
            output: "Error: spawn x ENOENT".into(),
            exit_code: None,
            directory: None,
        }
    );
    // Another shape is all output.
    assert_eq!(ShellResult::of("3 passed").output, "3 passed");
    assert_eq!(ShellResult::of("boom\nExit Code: 3").exit_code, Some(3));
}

#[test]
fn a_replace_gives_the_current_view_of_a_file_read_or_written_whole() {
    let call = |id: &str, name: &str, args: Value, output: &str| {
        serde_json::json!({"id": id, "name": name, "status": "success", "args": args,
            "result": [{"functionResponse": {"id": id, "name": name,
                "response": {"output": output}}}]})
    };
    let chat = |replace_args: Value| {
        serde_json::json!({"sessionId": "s", "messages": [
        {"id": "u1", "type": "user", "content": "fix it"},
        {"id": "g1", "type": "gemini", "content": "", "toolCalls": [
            call("c1", "read_file", serde_json::json!({"file_path": "/w/a.py"}),
                "x = 1\ny = 2\n"),
            call("c2", "replace", replace_args, "Successfully modified file: /w/a.py"),
        ]}]})
    };
    let views = |replace_args: Value| {
        let (records, _) = import_chat(&chat(replace_args).to_string()).unwrap();
        crate::import::files_of(&records)
            .into_iter()
            .map(|(p, c)| (p.to_string(), c.to_string()))
            .collect::<Vec<_>>()
    };
    let once = serde_json::json!({"file_path": "/w/a.py", "old_string": "y = 2",
        "new_string": "y = 3"});
    assert_eq!(
        views(once),
        [
            ("/w/a.py".to_string(), "x = 1\ny = 2\n".to_string()),
            ("/w/a.py".to_string(), "x = 1\ny = 3\n".to_string())
        ]
    );
    // The canary: an old text the view holds twice, where the call expects one, makes no view.
    let twice = serde_json::json!({"file_path": "/w/a.py", "old_string": " = ",
        "new_string": " := "});
    assert_eq!(views(twice).len(), 1);
    let expected = serde_json::json!({"file_path": "/w/a.py", "old_string": " = ",
        "new_string": " := ", "expected_replacements": 2});
    assert_eq!(views(expected)[1].1, "x := 1\ny := 2\n");
}

#[test]
fn replaces_of_real_chats_give_current_views() {
    // The corpus's saved Gemini CLI chats with edits: most replace in files read or written whole.
    let mut with_view = 0;
    let mut diffs = 0;
    for name in [
        "mischa-thisness__M-Gemini__session-2025-12-24T06-40-c330aea9.json",
        "mischa-thisness__M-Gemini__session-2025-12-24T21-37-2ccb51c5.json",
        "mischa-thisness__M-Gemini__session-2025-12-30T01-31-271ace30.json",
        "mischa-thisness__M-Gemini__session-2026-01-01T06-42-b1fc1c13.json",
        "mischa-thisness__M-Gemini__session-2026-01-11T00-25-17b4d5e9.json",
    ] {
        let (records, _) = import_chat(&real(name)).unwrap();
        let ids: std::collections::HashSet<&str> = records
            .files
            .iter()
            .filter_map(|f| f.common.id.as_deref())
            .collect();
        for d in &records.diffs {
            diffs += 1;
            // The view is the record made right after the diff, from the same call.
            let id = d.common.id.as_deref().unwrap();
            let (stem, part) = id.rsplit_once('-').unwrap();
            let next = format!(
                "{}-{}",
                stem.replace("diff-", "file-"),
                part.parse::<u32>().unwrap() + 1
            );
            with_view += usize::from(ids.contains(next.as_str()));
        }
    }
    // Before the importer kept views, none had one.
    assert!(
        diffs > 40 && with_view * 2 >= diffs,
        "{with_view} of {diffs}"
    );
}
