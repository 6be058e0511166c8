use super::*;

/// A session file of the real corpus.
fn real(name: &str) -> String {
    crate::import::real_data_tests::corpus_file("codex-cli", name)
}

#[test]
fn file_reading_commands_of_a_real_rollout_are_file_reads() {
    let text = real("AcidicSoil__codex-session-view__rollout-2025-11-17T15-30-28-019a93b9-f380-7600-98ff-940e6b99603c.jsonl");
    let (records, _) = import_rollout(&text);
    // 18 reads, and 2 current views of files read, then patched.
    assert_eq!(records.files.len(), 20);
    let file = records
        .files
        .iter()
        .find(|f| f.path == "components/chat/chat-helpers/index.ts")
        .expect("the sed -n '1,220p' read");
    assert!(!file.content.contains("Exit code"), "{}", file.content);
    // No read is left as a tool output too.
    assert!(records
        .tool_outputs
        .iter()
        .all(|o| !o.tool.starts_with("sed -n") && !o.tool.starts_with("cat ")));
}

#[test]
fn shell_command_results_keep_their_command_and_exit_code() {
    let text = real("dfinson__traceforge__demo_issue_tracker_get_endpoint.jsonl");
    let (records, _) = import_rollout(&text);
    let sed = records
        .tool_outputs
        .iter()
        .find(|o| o.tool == "sed -n '1,200p' app/repository.py")
        .expect("the command, not the tool's name");
    assert_eq!(sed.exit_code, Some(1));
    assert!(!sed.output.starts_with("Exit code:"), "{}", sed.output);
    assert!(records.errors.iter().any(|e| e
        .message
        .starts_with("sed -n '1,200p' app/repository.py: exit code 1")));
    assert!(records
        .tool_outputs
        .iter()
        .all(|o| o.tool != "shell_command"));
}

#[test]
fn a_compacted_item_is_a_boundary_with_its_summary() {
    let lines = [
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"fix it"}]}}"#,
        r#"{"timestamp":"2026-01-01T00:01:00Z","type":"compacted","payload":{"message":"Working on a.py; tests fail in test_x."}}"#,
        r#"{"timestamp":"2026-01-01T00:02:00Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"bash\",\"-lc\",\"sed -n '3,4p' a.py\"]}","call_id":"c1"}}"#,
        r#"{"timestamp":"2026-01-01T00:02:01Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"c\\nd\\n\",\"metadata\":{\"exit_code\":0}}"}}"#,
    ];
    let (records, summary) = import_rollout(&lines.join("\n"));
    assert_eq!(summary.boundaries, [2]);
    assert!(!summary.skipped.keys().any(|k| k.starts_with("compacted")));
    let m = &records.messages[1];
    assert_eq!(m.common.id.as_deref(), Some("summary-L2"));
    assert_eq!(
        (m.role, m.text.as_str()),
        (Role::System, "Working on a.py; tests fail in test_x.")
    );
    assert_eq!(
        records.files[0].content,
        "[ctxopt: lines 1-2 not seen]\nc\nd\n"
    );
}

#[test]
fn a_windows_rollout_reads_with_get_content_and_patches_with_applypatch() {
    let text = real("dfinson__traceforge__demo_issue_tracker_get_endpoint.jsonl");
    let (records, _) = import_rollout(&text);
    let files: Vec<&str> = records.files.iter().map(|f| f.path.as_str()).collect();
    // The three reads, then service.py as it stands after the patch (read, then patched),
    // and main.py after its third patch: `apply_patch` refused the first two (their lines
    // are not in the file), so they change nothing.
    assert_eq!(
        files,
        [
            "app/repository.py",
            "app/service.py",
            "app/main.py",
            "app/service.py",
            "app/main.py"
        ]
    );
    let refused = records
        .errors
        .iter()
        .filter(|e| e.message.contains("apply_patch verification failed"))
        .count();
    assert_eq!(refused, 2);
    // Every line diff `d` adds is in the view `f` made of it.
    let view_has_what_the_diff_added = |d: usize, f: usize| {
        let added: Vec<&str> = records.diffs[d]
            .diff
            .lines()
            .filter_map(|l| l.strip_prefix('+'))
            .filter(|l| !l.trim().is_empty())
            .collect();
        assert!(!added.is_empty());
        let view = &records.files[f].content;
        assert!(added.iter().all(|l| view.contains(l)), "{view}");
    };
    view_has_what_the_diff_added(3, 4);
    assert!(records.files[0].content.contains("class TicketRepository"));
    view_has_what_the_diff_added(0, 3);
    let diffs: Vec<&str> = records.diffs.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(
        diffs,
        [
            "app/service.py",
            "app/main.py",
            "app/main.py",
            "app/main.py"
        ]
    );
    assert!(records
        .tool_outputs
        .iter()
        .all(|o| !o.tool.starts_with("Get-Content")));
}

#[test]
fn a_unified_exec_process_polled_to_its_end_is_one_command_and_its_reads_are_file_reads() {
    let call = |id: &str, name: &str, args: &str| {
        format!(
            r#"{{"timestamp":"2026-01-01T00:00:0{id}Z","type":"response_item","payload":{{"type":"function_call","name":"{name}","arguments":{},"call_id":"c{id}"}}}}"#,
            serde_json::to_string(args).unwrap()
        )
    };
    let output = |id: &str, text: &str| {
        format!(
            r#"{{"timestamp":"2026-01-01T00:00:0{id}Z","type":"response_item","payload":{{"type":"function_call_output","call_id":"c{id}","output":{}}}}}"#,
            serde_json::to_string(text).unwrap()
        )
    };
    let header = "Chunk ID: 60a5a7\nWall time: 1.0011 seconds\n";
    let lines = [
        call("1", "exec_command", r#"{"cmd":"sed -n '3,5p' src/a.rs"}"#),
        output(
            "1",
            &format!("{header}Process running with session ID 58192\nOriginal token count: 0\nOutput:\n"),
        ),
        call("2", "write_stdin", r#"{"session_id":58192,"chars":""}"#),
        output(
            "2",
            &format!("{header}Process running with session ID 58192\nOriginal token count: 4\nOutput:\nfn three() {{}}\n"),
        ),
        call("3", "write_stdin", r#"{"session_id":58192,"chars":""}"#),
        output(
            "3",
            &format!("{header}Process exited with code 0\nOriginal token count: 8\nOutput:\nfn four() {{}}\nfn five() {{}}\n"),
        ),
        call("4", "exec_command", r#"{"cmd":"cargo test"}"#),
        output(
            "4",
            &format!("{header}Process exited with code 101\nOriginal token count: 3\nOutput:\nerror: boom\n"),
        ),
    ];
    let (records, _) = import_rollout(&lines.join("\n"));
    assert_eq!(records.files.len(), 1, "{records:#?}");
    let file = &records.files[0];
    assert_eq!(file.path, "src/a.rs");
    assert!(
        file.content
            .ends_with("fn three() {}\nfn four() {}\nfn five() {}\n"),
        "{}",
        file.content
    );
    assert_eq!(
        file.common.id.as_deref(),
        Some("file-L6"),
        "placed at the poll that ended it"
    );
    // No poll is left as a tool output; the other command keeps its exit code, without its header.
    assert!(records.tool_outputs.iter().all(|o| o.tool != "write_stdin"));
    let test = records
        .tool_outputs
        .iter()
        .find(|o| o.tool == "cargo test")
        .unwrap();
    assert_eq!(
        (test.exit_code, test.output.as_str()),
        (Some(101), "error: boom\n")
    );
}

#[test]
fn a_real_unified_exec_rollout_has_no_header_in_its_files_and_no_polls_left() {
    let text = real("codemie-ai__codemie-code__rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl");
    let (records, _) = import_rollout(&text);
    assert!(records.files.len() >= 10, "{}", records.files.len());
    assert!(records
        .files
        .iter()
        .all(|f| !f.content.contains("Chunk ID:")));
    assert!(records
        .tool_outputs
        .iter()
        .all(|o| !o.output.starts_with("Chunk ID:")));
    assert!(records
        .tool_outputs
        .iter()
        .all(|o| !o.tool.starts_with("write_stdin")));
    assert!(records.tool_outputs.iter().any(|o| o.exit_code.is_some()));
}

#[test]
fn an_added_file_is_its_current_view_and_a_failed_patch_changes_no_view() {
    let patch = |id: &str, body: &str| {
        let input =
            serde_json::to_string(&format!("*** Begin Patch\n{body}*** End Patch")).unwrap();
        format!(
            r#"{{"timestamp":"2026-01-01T00:01:00Z","type":"response_item","payload":{{"type":"custom_tool_call","status":"completed","call_id":"{id}","name":"apply_patch","input":{input}}}}}"#
        )
    };
    let result = |id: &str, code: i64| {
        format!(
            r#"{{"timestamp":"2026-01-01T00:01:01Z","type":"response_item","payload":{{"type":"custom_tool_call_output","call_id":"{id}","output":"{{\"output\":\"done\",\"metadata\":{{\"exit_code\":{code}}}}}"}}}}"#
        )
    };
    let lines = [
        r#"{"timestamp":"2026-01-01T00:00:00Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"add a.py"}]}}"#.to_string(),
        patch("p1", "*** Add File: a.py\n+def f():\n+    return 1\n"),
        result("p1", 0),
        patch("p2", "*** Update File: a.py\n@@\n def f():\n-    return 1\n+    return 2\n"),
        result("p2", 0),
        // Fails: the view stays what the second patch made.
        patch("p3", "*** Update File: a.py\n@@\n def f():\n-    return 2\n+    return 3\n"),
        result("p3", 1),
        // Refused with no exit code, as `apply_patch` answers when its check fails: no change.
        patch("p4", "*** Update File: a.py\n@@\n def f():\n-    return 2\n+    return 4\n"),
        format!(
            r#"{{"timestamp":"2026-01-01T00:01:01Z","type":"response_item","payload":{{"type":"custom_tool_call_output","call_id":"p4","output":{}}}}}"#,
            serde_json::to_string(
                "apply_patch verification failed: Failed to find expected lines in a.py:\n    return 9"
            )
            .unwrap()
        ),
        // So the next patch applies to the view the second one made.
        patch("p5", "*** Update File: a.py\n@@\n def f():\n-    return 2\n+    return 5\n"),
        result("p5", 0),
    ];
    let (records, _) = import_rollout(&lines.join("\n"));
    assert_eq!(
        crate::import::files_of(&records),
        [
            ("a.py", "def f():\n    return 1\n"),
            ("a.py", "def f():\n    return 2\n"),
            ("a.py", "def f():\n    return 5\n"),
        ]
    );
    assert_eq!(records.diffs.len(), 5, "every section is still a diff");
    let errors: Vec<&str> = records.errors.iter().map(|e| e.message.as_str()).collect();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[1].starts_with("apply_patch: apply_patch verification failed"),
        "{errors:?}"
    );
    // The canary: an answer that is no refusal is a patch applied.
    assert!(!patch_refused(
        "Success. Updated the following files:\nM a.py"
    ));
    assert!(patch_refused(
        "error: Failed to find expected lines in a.py"
    ));
}

#[test]
fn a_patch_is_placed_as_apply_patch_places_it() {
    let call = |id: &str, command: &str| {
        let args = serde_json::json!({ "command": ["bash", "-lc", command] }).to_string();
        let payload = serde_json::json!({"type": "function_call", "name": "shell",
            "call_id": id, "arguments": args});
        serde_json::json!({"timestamp": "2026-01-01T00:01:00Z", "type": "response_item",
            "payload": payload})
        .to_string()
    };
    let result = |id: &str, output: &str| {
        let output = serde_json::json!({"output": output, "metadata": {"exit_code": 0}});
        let payload = serde_json::json!({"type": "function_call_output", "call_id": id,
            "output": output.to_string()});
        serde_json::json!({"timestamp": "2026-01-01T00:01:01Z", "type": "response_item",
            "payload": payload})
        .to_string()
    };
    // `return 1` twice: the `@@ def g():` header says which; the patch's context line
    // lost its trailing space, as a model writes it.
    let patch = "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: a.py\n@@ def g():\n-    return 1\n+    return 2\n@@\n # end\n+# more\n*** End Patch\nPATCH";
    let lines = [
        call("r1", "cat a.py"),
        result(
            "r1",
            "def f():\n    return 1\ndef g():\n    return 1\n# end \n",
        ),
        call("p1", patch),
        result("p1", "Success. Updated the following files:\nM a.py\n"),
    ];
    let (records, _) = import_rollout(&lines.join("\n"));
    let files = crate::import::files_of(&records);
    assert_eq!(
        files.last(),
        Some(&(
            "a.py",
            "def f():\n    return 1\ndef g():\n    return 2\n# end\n# more\n"
        )),
        "{files:?}"
    );
}

#[test]
fn the_project_instructions_are_not_the_task() {
    let text = real("codemie-ai__codemie-code__rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl");
    let (records, summary) = import_rollout(&text);
    assert_eq!(summary.skipped.get("project_instructions"), Some(&1));
    let task = records.task.as_deref().unwrap_or_default();
    assert!(!task.contains("AGENTS.md instructions"), "{task}");
    assert!(!task.is_empty());
    assert!(records
        .messages
        .iter()
        .all(|m| !m.text.contains("<INSTRUCTIONS>")));
    // The canary: a prompt that only mentions the file is the task.
    assert!(!is_project_instructions(
        "please update AGENTS.md instructions"
    ));
    assert!(is_project_instructions(
        "<user_instructions>\nUse tabs.\n</user_instructions>"
    ));
}

#[test]
fn update_plan_calls_of_a_real_rollout_are_its_plan() {
    let text = real("EntityProcess__agentv__019ed917-1cf7-72a3-92f5-c0aa98fb134e.jsonl");
    // The calls as the rollout has them, in order.
    let calls: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["payload"]["name"] == "update_plan")
        .map(|v| serde_json::from_str(v["payload"]["arguments"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(calls.len(), 4);
    let (records, _) = import_rollout(&text);
    let plans = crate::import::plans::plans_of(&records);
    assert_eq!(plans.len(), calls.len());
    // Nothing is left as the client's bare acknowledgement.
    assert!(records
        .tool_outputs
        .iter()
        .all(|o| o.output != "Plan updated"));
    for (plan, call) in plans.iter().zip(&calls) {
        assert!(plan.starts_with("Plan (update_plan):\n- ["), "{plan}");
        for step in call["plan"].as_array().unwrap() {
            let line = crate::import::plans::item_line(step, "step");
            assert!(plan.contains(&line), "{line} not in {plan}");
        }
        assert!(crate::optimizer::working_state::is_plan(plan), "{plan}");
    }
}

#[test]
fn a_call_runs_in_its_workdir_so_its_reads_and_patches_name_one_file() {
    let call = |id: &str, args: serde_json::Value| {
        let payload = serde_json::json!({"type": "function_call", "name": "exec_command",
            "call_id": id, "arguments": args.to_string()});
        serde_json::json!({"timestamp": "2026-01-01T00:01:00Z", "type": "response_item",
            "payload": payload})
        .to_string()
    };
    let result = |id: &str, output: &str| {
        let payload = serde_json::json!({"type": "function_call_output", "call_id": id,
            "output": format!("Chunk ID: 1\nWall time: 0.1 seconds\nProcess exited with code 0\nOutput:\n{output}")});
        serde_json::json!({"timestamp": "2026-01-01T00:01:01Z", "type": "response_item",
            "payload": payload})
        .to_string()
    };
    let patch = |id: &str, path: &str| {
        let input =
            format!("*** Begin Patch\n*** Update File: {path}\n@@\n-x = 1\n+x = 2\n*** End Patch");
        let payload = serde_json::json!({"type": "custom_tool_call", "name": "apply_patch",
            "call_id": id, "input": input});
        serde_json::json!({"timestamp": "2026-01-01T00:02:00Z", "type": "response_item",
            "payload": payload})
        .to_string()
    };
    let done = |id: &str| {
        let payload = serde_json::json!({"type": "custom_tool_call_output", "call_id": id,
            "output": "{\"output\":\"Success. Updated the following files:\\nM a.py\\n\",\"metadata\":{\"exit_code\":0}}"});
        serde_json::json!({"timestamp": "2026-01-01T00:02:01Z", "type": "response_item",
            "payload": payload})
        .to_string()
    };
    let lines = [
        serde_json::json!({"timestamp": "2026-01-01T00:00:00Z", "type": "session_meta",
            "payload": {"id": "s", "cwd": "/repo"}})
        .to_string(),
        // Read in a worktree, relative to it; patched by its absolute path.
        call(
            "r1",
            serde_json::json!({"cmd": "cat src/a.py", "workdir": "/wt/feature"}),
        ),
        result("r1", "x = 1\n"),
        patch("p1", "/wt/feature/src/a.py"),
        done("p1"),
        // Read in the session's own folder: named relative to it.
        call("r2", serde_json::json!({"cmd": "cat /repo/b.py"})),
        result("r2", "y = 1\n"),
    ];
    let (records, _) = import_rollout(&lines.join("\n"));
    assert_eq!(
        crate::import::files_of(&records),
        [
            ("/wt/feature/src/a.py", "x = 1\n"),
            ("/wt/feature/src/a.py", "x = 2\n"),
            ("b.py", "y = 1\n"),
        ]
    );
    assert_eq!(records.diffs[0].path, "/wt/feature/src/a.py");
    // The canary: without its workdir, the read is the folder's `src/a.py`, and the patch
    // finds no view of its file.
    let elsewhere = lines[1].replace(r#",\"workdir\":\"/wt/feature\""#, "");
    assert_ne!(elsewhere, lines[1]);
    let moved = [&lines[..1], &[elsewhere], &lines[2..]].concat();
    let (records, _) = import_rollout(&moved.join("\n"));
    assert_eq!(
        crate::import::files_of(&records),
        [("src/a.py", "x = 1\n"), ("b.py", "y = 1\n")]
    );
}
