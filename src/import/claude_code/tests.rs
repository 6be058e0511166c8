use super::*;

/// A user entry of `text`.
fn user(uuid: &str, text: &str) -> Value {
    serde_json::json!({"type": "user", "uuid": uuid, "cwd": "/w",
        "message": {"role": "user", "content": text}})
}

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

#[test]
fn paths_stay_relative_to_the_project_folder_after_a_cd() {
    // A command `cd frontend` moves the entries' `cwd`; the file keeps one name.
    let read = |line: u32, cwd: &str| {
        [
            serde_json::json!({"type": "assistant", "uuid": format!("a{line}"), "cwd": cwd,
                "message": {"content": [{"type": "tool_use", "id": format!("t{line}"), "name": "Read",
                    "input": {"file_path": "/w/frontend/src/app.ts"}}]}}),
            serde_json::json!({"type": "user", "uuid": format!("u{line}"), "cwd": cwd,
                "message": {"content": [{"type": "tool_result", "tool_use_id": format!("t{line}"),
                    "content": "     1\tlet a = 1;\n"}]}}),
        ]
    };
    let lines: Vec<Value> = read(1, "/w")
        .into_iter()
        .chain(read(2, "/w/frontend"))
        .collect();
    let (records, _) = import(&lines);
    let paths: Vec<&str> = records.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["frontend/src/app.ts", "frontend/src/app.ts"]);
}

/// A session file of the real corpus.
fn real(name: &str) -> String {
    crate::import::real_data_tests::corpus_file("claude-code", name)
}

/// A real chkit session (Claude Code 2.1.50) with a failed e2e run at line 313 and a
/// `/context` listing at line 348, imported.
fn chkit_failed_e2e_session() -> Records {
    import_transcript(&real(
        "obsessiondb__chkit__bab732db-a82e-410a-b87a-ee2f20b237b8.jsonl",
    ))
    .0
}

/// Whether a record was made from transcript line `line`.
fn from_line(common: &Common, line: usize) -> bool {
    common
        .id
        .as_deref()
        .is_some_and(|id| id.contains(&format!("-L{line}-")))
}

/// The one of `items` (errors, outputs, messages: `common` picks its fields) imported from
/// transcript line `line`.
fn at_line<T>(items: &[T], common: impl Fn(&T) -> &Common, line: usize) -> &T {
    items
        .iter()
        .find(|item| from_line(common(item), line))
        .unwrap_or_else(|| panic!("a record from line {line}"))
}

/// The tool outputs whose id holds `kind` (`plan-L`, also in `side-plan-L…`).
fn outputs_of_kind<'a>(records: &'a Records, kind: &str) -> Vec<&'a ToolOutput> {
    records
        .tool_outputs
        .iter()
        .filter(|o| o.common.id.as_deref().is_some_and(|i| i.contains(kind)))
        .collect()
}

/// The lines of a real transcript that answer a call of `tool` whose input satisfies
/// `pick`, with the answer's `toolUseResult`.
fn answers(text: &str, tool: &str, pick: impl Fn(&Value) -> bool) -> Vec<(usize, Value)> {
    let mut calls = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        for b in v
            .pointer("/message/content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if b["type"] == "tool_use" && b["name"] == tool && pick(&b["input"]) {
                calls.insert(b["id"].as_str().unwrap_or_default().to_string());
            }
            let answered = b["tool_use_id"]
                .as_str()
                .is_some_and(|id| calls.contains(id));
            if b["type"] == "tool_result" && answered && b["is_error"] != true {
                out.push((i + 1, v["toolUseResult"].clone()));
            }
        }
    }
    out
}

#[test]
fn ranged_reads_of_a_real_session_are_file_regions_with_their_lines() {
    let text = real("marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl");
    let ranged = answers(&text, "Read", |i| i.get("offset").is_some());
    assert!(ranged.len() >= 10, "{}", ranged.len());
    let (records, _) = import_transcript(&text);
    for (line, result) in &ranged {
        let id = format!("file-L{line}-");
        let file = records
            .files
            .iter()
            .find(|f| f.common.id.as_deref().is_some_and(|i| i.starts_with(&id)))
            .unwrap_or_else(|| panic!("no file record for the ranged read on line {line}"));
        let start = result["file"]["startLine"].as_u64().unwrap();
        let full = result["file"]["filePath"].as_str().unwrap();
        assert!(
            !file.path.starts_with('/') && full.ends_with(&format!("/{}", file.path)),
            "line {line}: {} for {full}",
            file.path
        );
        if start > 1 {
            // The region says where it starts: the lines before it were not seen (or an
            // earlier read of the same file showed them).
            assert!(
                file.content.contains("not seen]") || file.content.lines().count() > start as usize,
                "line {line}"
            );
        }
        for l in result["file"]["content"].as_str().unwrap().lines() {
            assert!(file.content.contains(l), "line {line}: {l}");
        }
    }
}

#[test]
fn ranged_reads_merge_and_an_edit_applies_to_the_lines_seen_or_forgets_them() {
    let read = |id: &str, input: Value| {
        serde_json::json!({"type": "assistant", "cwd": "/w", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "id": id, "name": "Read", "input": input}]}})
    };
    let answer = |id: &str, text: &str| {
        serde_json::json!({"type": "user", "cwd": "/w", "message": {"role": "user",
            "content": [{"type": "tool_result", "tool_use_id": id, "content": text}]}})
    };
    let (records, _) = import(&[
        serde_json::json!({"type": "user", "message": {"role": "user", "content": "go"}}),
        read(
            "r1",
            serde_json::json!({"file_path": "/w/a.rs", "offset": 3, "limit": 2}),
        ),
        answer("r1", "     3\u{2192}c\n     4\u{2192}d"),
        read(
            "r2",
            serde_json::json!({"file_path": "/w/a.rs", "offset": 6, "limit": 1}),
        ),
        answer("r2", "     6\u{2192}f"),
        serde_json::json!({"type": "assistant", "cwd": "/w", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "id": "e1", "name": "Edit",
              "input": {"file_path": "/w/a.rs", "old_string": "f", "new_string": "g"}}]}}),
        answer("e1", "ok"),
        read(
            "r3",
            serde_json::json!({"file_path": "/w/a.rs", "offset": 6, "limit": 1}),
        ),
        answer("r3", "     6\u{2192}g"),
        // An edit whose old text is no whole line seen: what was seen is forgotten.
        serde_json::json!({"type": "assistant", "cwd": "/w", "message": {"role": "assistant",
            "content": [{"type": "tool_use", "id": "e2", "name": "Edit",
              "input": {"file_path": "/w/a.rs", "old_string": "zz", "new_string": "y"}}]}}),
        answer("e2", "ok"),
        read(
            "r4",
            serde_json::json!({"file_path": "/w/a.rs", "offset": 3, "limit": 1}),
        ),
        answer("r4", "     3\u{2192}c"),
    ]);
    let contents: Vec<&str> = records.files.iter().map(|f| f.content.as_str()).collect();
    let edited = "[ctxopt: lines 1-2 not seen]\nc\nd\n[ctxopt: lines 5-5 not seen]\ng\n";
    assert_eq!(
        contents,
        [
            "[ctxopt: lines 1-2 not seen]\nc\nd\n",
            "[ctxopt: lines 1-2 not seen]\nc\nd\n[ctxopt: lines 5-5 not seen]\nf\n",
            edited,
            edited,
            "[ctxopt: lines 1-2 not seen]\nc\n",
        ]
    );
    assert!(records.files.iter().all(|f| f.path == "a.rs"));
    assert!(records.tool_outputs.is_empty());
}

#[test]
fn todo_writes_of_a_real_session_are_its_plan() {
    let text = real("d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl");
    let todos = answers(&text, "TodoWrite", |_| true);
    assert!(todos.len() >= 10, "{}", todos.len());
    let (records, _) = import_transcript(&text);
    // A subagent's plan too (`side-plan-L…`).
    let plans = outputs_of_kind(&records, "plan-L");
    assert_eq!(plans.len(), todos.len());
    let (_, last) = todos.last().unwrap();
    let plan = &plans.last().unwrap().output;
    assert!(plan.starts_with("Plan (TodoWrite):\n- ["), "{plan}");
    for item in last["newTodos"].as_array().unwrap() {
        let line = crate::import::plans::item_line(item, "content");
        assert!(plan.contains(&line), "{line} not in {plan}");
    }
}

#[test]
fn task_list_calls_of_a_real_session_are_its_plan_after_each_change() {
    // Claude Code 2.1 keeps the plan as a task list: TaskCreate, TaskUpdate, TaskList.
    let text = real("obsessiondb__chkit__5f45db97-60ca-45bc-a8d3-eb35afee4786.jsonl");
    let creates = answers(&text, "TaskCreate", |_| true);
    let updates = answers(&text, "TaskUpdate", |_| true);
    let lists = answers(&text, "TaskList", |_| true);
    assert_eq!((creates.len(), updates.len(), lists.len()), (9, 17, 1));
    let (records, _) = import_transcript(&text);
    let plans = outputs_of_kind(&records, "plan-L");
    let plan_at = |line: usize| &at_line(&plans, |o| &o.common, line).output;
    // Each create adds its subject, pending; the first plan has the first task alone.
    let first = plan_at(creates[0].0);
    assert_eq!(
        first,
        "Plan (tasks):\n- [pending] Rename plugin-typegen directory and package to plugin-codegen"
    );
    let subject = |id: &str| {
        creates
            .iter()
            .find(|(_, r)| r["task"]["id"] == id)
            .map(|(_, r)| r["task"]["subject"].as_str().unwrap().to_string())
            .unwrap()
    };
    // Each update moves its task to the status the client recorded.
    for (line, result) in &updates {
        let item = format!(
            "- [{}] {}",
            result["statusChange"]["to"].as_str().unwrap(),
            subject(result["taskId"].as_str().unwrap())
        );
        assert!(plan_at(*line).contains(&item), "line {line}: {item}");
    }
    // The list as the client printed it is the plan, item for item.
    let (line, listed) = &lists[0];
    let plan = plan_at(*line);
    for task in listed["tasks"].as_array().unwrap() {
        let item = crate::import::plans::item_line(task, "subject");
        assert!(plan.contains(&item), "{item} not in {plan}");
    }
    assert_eq!(plans.len(), creates.len() + updates.len() + lists.len());
    // The last plan: every task completed.
    let last = &plans.last().unwrap().output;
    assert_eq!(last.matches("- [completed] ").count(), 9, "{last}");
}

#[test]
fn a_call_the_client_did_not_run_because_a_sibling_failed_makes_no_record() {
    let lines = [
        serde_json::json!({"type": "assistant", "uuid": "a1", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "cargo tset"}},
            {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/w/src/lib.rs"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u1", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "is_error": true,
             "content": "Exit code 101\nerror: no such command: `tset`"},
            {"type": "tool_result", "tool_use_id": "t2", "is_error": true,
             "content": "<tool_use_error>Sibling tool call errored</tool_use_error>"}]}}),
    ];
    let (records, summary) = import(&lines);
    // The failed command is an error and a run; the read that never ran is nothing.
    let errors: Vec<&str> = records.errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(
        errors,
        ["cargo tset: exit code 101: error: no such command: `tset`"]
    );
    assert_eq!(records.tool_outputs.len(), 1);
    assert_eq!(
        summary.skipped.get("call not run (a sibling call failed)"),
        Some(&1)
    );
}

#[test]
fn resuming_keeps_the_task_list_so_far() {
    let line = |v: Value| v.to_string();
    let lines = [
        line(
            serde_json::json!({"type": "assistant", "uuid": "a1", "message": {"content": [
            {"type": "tool_use", "id": "t1", "name": "TaskCreate",
             "input": {"subject": "write the parser", "description": "…"}},
            {"type": "tool_use", "id": "t2", "name": "TaskCreate",
             "input": {"subject": "test the parser", "description": "…"}}]}}),
        ),
        line(
            serde_json::json!({"type": "user", "uuid": "u1", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "Task #1 created successfully: write the parser"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "Task #2 created successfully: test the parser"}]}}),
        ),
        line(
            serde_json::json!({"type": "assistant", "uuid": "a2", "message": {"content": [
            {"type": "tool_use", "id": "t3", "name": "TaskUpdate",
             "input": {"taskId": "1", "status": "in_progress"}}]}}),
        ),
        line(
            serde_json::json!({"type": "user", "uuid": "u2", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t3", "content": "Updated task #1 status"}]}}),
        ),
    ];
    let (mut out, mut summary) = (Vec::new(), ImportSummary::default());
    let mut first = ClaudeImporter::default();
    for (i, l) in lines[..3].iter().enumerate() {
        first.feed_line(i + 1, l, &mut out, &mut summary);
    }
    // The hooks save the importer's state as JSON between runs.
    let saved = serde_json::to_string(&first).unwrap();
    let mut second: ClaudeImporter = serde_json::from_str(&saved).unwrap();
    second.feed_line(4, &lines[3], &mut out, &mut summary);
    let SessionRecord::ToolOutput(plan) = &out.last().unwrap().record else {
        panic!("{out:?}");
    };
    assert_eq!(
        plan.output,
        "Plan (tasks):\n- [in_progress] write the parser\n- [pending] test the parser"
    );
}

#[test]
fn compaction_boundaries_of_real_sessions_are_recognised_with_their_summaries() {
    let mut seen = 0;
    for name in [
        "marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl",
        "marot__spotter__4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
        "marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl",
        "marot__spotter__ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
        "marot__spotter__fa812bfe-b295-4cca-9c2f-fdf01028cb46.jsonl",
    ] {
        let text = real(name);
        let expected: Vec<usize> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("\"subtype\":\"compact_boundary\""))
            .map(|(i, _)| i + 1)
            .collect();
        let (records, summary) = import_transcript(&text);
        assert_eq!(summary.boundaries, expected, "{name}");
        assert!(!summary.skipped.contains_key("system:compact_boundary"));
        for b in &expected {
            // The summary Claude Code wrote comes right after its boundary.
            let after = records.messages.iter().find_map(|m| {
                let id = m.common.id.as_deref()?.strip_prefix("summary-L")?;
                let line: usize = id.split('-').next()?.parse().ok()?;
                (line > *b).then_some(line)
            });
            assert!(
                after.is_some_and(|l| l <= b + 3),
                "{name}: {after:?} after {b}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 5);
}

#[test]
fn grep_and_glob_results_of_a_real_session_are_relative_path_hits() {
    let text = real("marot__spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl");
    let answered = answers(&text, "Glob", |_| true).len() + answers(&text, "Grep", |_| true).len();
    assert!(answered >= 20, "{answered}");
    let (records, _) = import_transcript(&text);
    let hits = outputs_of_kind(&records, "hits-L");
    assert_eq!(hits.len(), answered);
    let cwd = "/home/USER/projects/spotter-worktrees/spotter-fum/";
    assert!(text.contains(&format!(
        "\"filenames\":[\"{cwd}test/spotter/services/transcript_renderer_test.exs\""
    )));
    assert!(hits.iter().all(|h| !h.output.contains(cwd)));
    assert!(hits.iter().any(|h| h
        .output
        .lines()
        .any(|l| l == "test/spotter/services/transcript_renderer_test.exs")));
}

#[test]
fn windows_paths_are_made_relative_to_a_windows_working_directory() {
    let cwd = r"C:\Users\me\app";
    let (records, _) = import(&[
        serde_json::json!({"type": "user", "uuid": "u1", "cwd": cwd,
            "message": {"role": "user", "content": "read it"}}),
        serde_json::json!({"type": "assistant", "uuid": "a1", "cwd": cwd,
            "message": {"role": "assistant", "content": [
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": r"C:\Users\me\app\src\main.ts"}},
                {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": r"D:\other\x.ts"}}]}}),
        serde_json::json!({"type": "user", "uuid": "r1", "cwd": cwd,
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "     1\u{2192}let a = 1;"},
                {"type": "tool_result", "tool_use_id": "t2", "content": "     1\u{2192}let b = 2;"}]}}),
    ]);
    let paths: Vec<&str> = records.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, [r"src\main.ts", r"D:\other\x.ts"]);
}

#[test]
fn an_edit_gives_the_current_view_of_a_file_read_whole_or_of_the_lines_seen() {
    let session = |read_input: &str, shown: &str| {
        [
            format!(
                r#"{{"type":"assistant","uuid":"a1","message":{{"content":[{{"type":"tool_use","id":"t1","name":"Read","input":{read_input}}}]}}}}"#
            ),
            format!(
                r#"{{"type":"user","uuid":"r1","message":{{"content":[{{"type":"tool_result","tool_use_id":"t1","content":"{shown}"}}]}}}}"#
            ),
            r#"{"type":"assistant","uuid":"a2","message":{"content":[{"type":"tool_use","id":"t2","name":"Edit","input":{"file_path":"src/a.rs","old_string":"    old_call();","new_string":"    new_call();\n    log();"}}]}}"#.to_string(),
            r#"{"type":"user","uuid":"r2","message":{"content":[{"type":"tool_result","tool_use_id":"t2","content":"The file src/a.rs has been updated."}]}}"#.to_string(),
        ]
        .join("\n")
    };
    let (whole, _) = import_transcript(&session(
        r#"{"file_path":"src/a.rs"}"#,
        r"     1→fn a() {\n     2→    old_call();\n     3→}\n",
    ));
    let views: Vec<&str> = whole.files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(
        views,
        [
            "fn a() {\n    old_call();\n}",
            "fn a() {\n    new_call();\n    log();\n}\n"
        ]
    );
    assert_eq!(whole.diffs.len(), 1);
    // A read of line 2 alone: the edit applies to the line seen, the rest stays unseen.
    let (partial, _) = import_transcript(&session(
        r#"{"file_path":"src/a.rs","offset":2,"limit":1}"#,
        r"     2→    old_call();\n",
    ));
    let views: Vec<&str> = partial.files.iter().map(|f| f.content.as_str()).collect();
    assert_eq!(
        views,
        [
            "[ctxopt: lines 1-1 not seen]\n    old_call();\n",
            "[ctxopt: lines 1-1 not seen]\n    new_call();\n    log();\n"
        ]
    );
    assert_eq!(partial.diffs.len(), 1);
    // The canary: a read of line 3 did not show the old text, so no view is made up.
    let (elsewhere, _) = import_transcript(&session(
        r#"{"file_path":"src/a.rs","offset":3,"limit":1}"#,
        r"     3→}\n",
    ));
    assert_eq!(elsewhere.files.len(), 1, "{:?}", elsewhere.files);
    assert_eq!(elsewhere.diffs.len(), 1);
}

#[test]
fn an_edit_whose_old_text_the_view_does_not_hold_once_leaves_no_view() {
    let one = serde_json::json!({"old_string": "x = 1", "new_string": "x = 2"});
    let read = |content: &str| apply_edits(content, &one);
    assert_eq!(read("x = 1\ny\n").as_deref(), Some("x = 2\ny\n"));
    assert_eq!(read("y\n"), None);
    assert_eq!(read("x = 1\nx = 1\n"), None);
    let all =
        serde_json::json!({"old_string": "x = 1", "new_string": "x = 2", "replace_all": true});
    assert_eq!(
        apply_edits("x = 1\nx = 1\n", &all).as_deref(),
        Some("x = 2\nx = 2\n")
    );
    let multi = serde_json::json!({"edits": [
        {"old_string": "a", "new_string": "b"},
        {"old_string": "b c", "new_string": "d"}
    ]});
    assert_eq!(apply_edits("a c\n", &multi).as_deref(), Some("d\n"));
}

#[test]
fn a_prompt_that_opens_with_a_tag_is_a_prompt_and_the_clients_own_wrappers_are_not() {
    // The client's own wrapped texts first: none of them is the task.
    let (records, _) = import(&[
        user("u1", "<system-reminder>The file changed.</system-reminder>"),
        user("u2", "<local-command-stdout>Compacted</local-command-stdout>"),
        user(
            "u3",
            "<task-notification>done</task-notification>\nFull transcript available at: /tmp/x",
        ),
        user(
            "u4",
            "<system_instruction>\nYou are working inside an app.\n</system_instruction>\n\nimplement the plan",
        ),
        user("u5", "<objective>\nDisable synchronize in CI.\n</objective>"),
    ]);
    // An app's instructions before the user's words are the app's text; the words are the task.
    assert_eq!(records.task.as_deref(), Some("implement the plan"));
    let app = records
        .messages
        .iter()
        .find(|m| m.text.starts_with("<system_instruction>"))
        .expect("the app's instructions");
    assert_eq!(app.role, Role::Tool);
    assert!(prompt_text("<objective>\nDisable synchronize in CI.\n</objective>").is_some());
    assert!(prompt_text("<bash-input>ls</bash-input>").is_none());
    assert!(prompt_text("<ide_opened_file>The user opened a.ts</ide_opened_file>").is_none());
}

#[test]
fn an_apps_instructions_before_the_users_words_are_split_off() {
    assert_eq!(
        app_instructions("<system_instruction>\na\n</system_instruction>\n\n<system-instruction>b</system-instruction>\nfix it"),
        ("<system_instruction>\na\n</system_instruction>\n\n<system-instruction>b</system-instruction>", "fix it")
    );
    // Only at the start, only closed blocks, only the app's tags.
    for text in [
        "fix it <system_instruction>a</system_instruction>",
        "<system_instruction>never closed\nfix it",
        "<objective>a</objective>\nfix it",
    ] {
        assert_eq!(app_instructions(text), ("", text));
    }
    // Real sessions run by an app (Conductor): its workspace notes and attachment lists come
    // first, in one or two blocks; the task is what the user wrote after them.
    let task = |name: &str| {
        let (records, _) = import_transcript(&real(name));
        records.task.unwrap_or_default()
    };
    assert_eq!(
        task("obsessiondb__chkit__5f45db97-60ca-45bc-a8d3-eb35afee4786.jsonl"),
        "implement"
    );
    let two_blocks = task("obsessiondb__chkit__bab732db-a82e-410a-b87a-ee2f20b237b8.jsonl");
    assert!(
        two_blocks.starts_with("Currently we are storing the state of whether the migrations"),
        "{two_blocks}"
    );
}

#[test]
fn a_command_keeps_the_directory_it_ran_in_where_an_earlier_cd_left_the_shell() {
    // A real session: `cd packages/cli && npx biome lint …` ran at the workspace's root and
    // left the shell in `packages/cli`, where the next commands ran (each entry records the
    // shell's directory; a result's entry already shows where its command's `cd` went).
    let text = real("obsessiondb__chkit__bb4f4bed-1bd6-4e7c-94f5-eed775720d74.jsonl");
    let (records, _) = import_transcript(&text);
    let cwd_of = |command: &str| {
        records
            .tool_outputs
            .iter()
            .find(|o| o.tool == command)
            .and_then(|o| o.cwd.clone())
            .unwrap_or_else(|| panic!("{command}"))
    };
    let root = "/Users/marc/conductor/workspaces/chkit/kingston";
    assert_eq!(
        cwd_of("cd packages/cli && npx biome lint src/bin/chkit.ts 2>&1 | tail -5"),
        root
    );
    assert_eq!(
        cwd_of("npx biome lint src 2>&1 | tail -10"),
        format!("{root}/packages/cli")
    );
    assert_eq!(
        cwd_of(
            "cd /Users/marc/conductor/workspaces/chkit/kingston && bun run verify 2>&1 | tail -40"
        ),
        format!("{root}/packages/cli")
    );
}

#[test]
fn a_failed_commands_output_written_twice_is_taken_once() {
    let doubled = "Exit code 1\nerror: a\n  at b\n\nerror: a\n  at b".to_string();
    assert_eq!(failure_once(doubled), "Exit code 1\nerror: a\n  at b");
    // Not a copy: two different halves, an output with one line repeated inside it, and a
    // result that is not a command's failure stay as they are.
    for text in [
        "Exit code 1\nerror: a\n\nerror: b",
        "Exit code 2\nok\nok\nfailed",
        "error: a\n\nerror: a",
        "Exit code 1\n\n\n",
    ] {
        assert_eq!(failure_once(text.to_string()), text);
    }
    // A real one (Claude Code 2.1.50): the failing e2e run's output once, in the error and in
    // the command's output.
    let records = chkit_failed_e2e_session();
    let error = at_line(&records.errors, |e| &e.common, 313);
    let stack = error.stack.as_deref().unwrap_or_default();
    assert_eq!(
        stack.matches("Ran 4 tests across 1 file").count(),
        1,
        "{stack}"
    );
    let output = at_line(&records.tool_outputs, |o| &o.common, 313);
    assert_eq!(
        output.output.matches("Ran 4 tests across 1 file").count(),
        1
    );
}

#[test]
fn what_the_client_writes_in_the_users_place_is_not_the_users_words() {
    let (records, _) = import(&[
        user("u1", "fix the flaky test"),
        user(
            "u2",
            "<local-command-stdout>## Context Usage\n### Memory Files</local-command-stdout>",
        ),
        user(
            "u3",
            "<system-reminder>The file was modified.</system-reminder>",
        ),
        user(
            "u4",
            "<command-name>/review</command-name><command-args>src</command-args>",
        ),
    ]);
    let roles: Vec<Role> = records.messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Tool, Role::Tool, Role::User]);
    // A real one: Claude Code's `/context` listing in a chkit session.
    let records = chkit_failed_e2e_session();
    // The `/context` listing.
    let listing = at_line(&records.messages, |m| &m.common, 348);
    assert!(listing.text.contains("### Memory Files"));
    assert_eq!(listing.role, Role::Tool);
}

#[test]
fn a_bash_command_that_reads_a_file_is_the_files_content() {
    // A real session (Claude Code 2.1.7) reads 40 lines of a script it wrote, through Bash.
    let text = real("entireio__cli__0276a600-2f22-4d2b-844c-3feb9c5aa108.jsonl");
    let command = "head -40 /Users/soph/Work/entire/devenv/cli/scripts/test-attribution-e2e.sh";
    let answered = answers(&text, "Bash", |i| i["command"] == command);
    let [(line, _)] = answered[..] else {
        panic!("{answered:?}")
    };
    let (records, _) = import_transcript(&text);
    let file = at_line(&records.files, |f| &f.common, line);
    // The path is the project's, as a Read or the Write before gives it.
    assert_eq!(file.path, "scripts/test-attribution-e2e.sh");
    assert!(
        file.content.starts_with("#!/bin/bash\n"),
        "{}",
        file.content
    );
    assert!(!records.tool_outputs.iter().any(|o| o.tool == command));
}

#[test]
fn a_bash_command_that_may_write_a_file_leaves_no_view_of_it() {
    let call = |n: u32, name: &str, input: Value, result: &str| {
        [
            serde_json::json!({"type": "assistant", "uuid": format!("a{n}"), "cwd": "/w",
                "message": {"content": [{"type": "tool_use", "id": format!("t{n}"),
                    "name": name, "input": input}]}}),
            serde_json::json!({"type": "user", "uuid": format!("u{n}"), "cwd": "/w",
                "message": {"content": [{"type": "tool_result", "tool_use_id": format!("t{n}"),
                    "content": result}]}}),
        ]
    };
    let session = |command: &str| {
        let lines: Vec<Value> = [
            call(
                1,
                "Bash",
                serde_json::json!({"command": "cd src && sed -n '1,2p' a.py"}),
                "x = 1\ny = 2",
            ),
            call(2, "Bash", serde_json::json!({ "command": command }), ""),
            call(
                3,
                "Edit",
                serde_json::json!({"file_path": "/w/src/a.py", "old_string": "x = 1",
                    "new_string": "x = 3"}),
                "The file /w/src/a.py has been updated.",
            ),
        ]
        .into_iter()
        .flatten()
        .collect();
        import(&lines).0
    };
    // The read through Bash is the file's view, which the edit then changes.
    let kept = session("git status");
    assert_eq!(
        crate::import::files_of(&kept),
        [
            ("src/a.py", "x = 1\ny = 2\n"),
            ("src/a.py", "x = 3\ny = 2\n")
        ]
    );
    // After `sed -i` on it, what was seen is not the file any more: the edit makes no view.
    let forgotten = session("sed -i 's/y = 2/y = 4/' src/a.py");
    assert_eq!(forgotten.files.len(), 1, "{:?}", forgotten.files);
}

#[test]
fn a_bash_read_and_an_edit_on_windows_name_one_file_with_one_view() {
    // Claude Code on Windows: `Edit` names `D:\w\src\a.py`, a Git Bash command `src/a.py`.
    let lines = [
        serde_json::json!({"type": "assistant", "uuid": "a1", "cwd": "D:\\w",
            "message": {"content": [{"type": "tool_use", "id": "t1", "name": "Bash",
                "input": {"command": "sed -n '1,2p' src/a.py"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u1", "cwd": "D:\\w",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t1",
                "content": "x = 1\ny = 2"}]}}),
        serde_json::json!({"type": "assistant", "uuid": "a2", "cwd": "D:\\w",
            "message": {"content": [{"type": "tool_use", "id": "t2", "name": "Edit",
                "input": {"file_path": "D:\\w\\src\\a.py", "old_string": "y = 2",
                    "new_string": "y = 3"}}]}}),
        serde_json::json!({"type": "user", "uuid": "u2", "cwd": "D:\\w",
            "message": {"content": [{"type": "tool_result", "tool_use_id": "t2",
                "content": "The file D:\\w\\src\\a.py has been updated."}]}}),
    ];
    let (records, _) = import(&lines);
    assert_eq!(
        crate::import::files_of(&records),
        [
            ("src/a.py", "x = 1\ny = 2\n"),
            ("src\\a.py", "x = 1\ny = 3\n")
        ]
    );
}
