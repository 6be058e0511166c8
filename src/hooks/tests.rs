//! The hooks on the real payloads in `fixtures/real-world/agent-transcripts/claude-hooks`,
//! each with its `transcript_path` pointed at a copy of a real transcript.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;
use crate::import::claude_code::import_transcript;
use crate::import::gemini_cli::import_chat;
use crate::records::SessionRecord;

pub(super) fn real(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-world/agent-transcripts")
        .join(sub)
}

/// A real transcript with several prompts (Claude Code 1.0.98, inlined subagents).
const TRANSCRIPT: &str =
    "claude-code/d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";

pub(super) struct Setup {
    _dir: tempfile::TempDir,
    pub(super) transcript: PathBuf,
    pub(super) workspace: PathBuf,
    pub(super) config: HookConfig,
}

pub(super) fn setup(source: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join(Path::new(source).file_name().unwrap());
    std::fs::copy(real(source), &transcript).unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    let config = HookConfig {
        budget: DEFAULT_HOOK_BUDGET,
        restore_budget: DEFAULT_RESTORE_BUDGET,
        tool_server: ToolServer::Known(Some("ctxopt".into())),
        store: Some(dir.path().join("store.sqlite3").display().to_string()),
        state_dir: dir.path().join("state"),
        summary_instructions: false,
    };
    Setup {
        _dir: dir,
        transcript,
        workspace,
        config,
    }
}

/// A real payload with its paths rewritten to the setup's.
fn payload(file: &str, pick: impl Fn(&Value) -> bool, s: &Setup) -> Vec<u8> {
    let text = std::fs::read_to_string(real(&format!("claude-hooks/{file}"))).unwrap();
    let all: Vec<Value> = serde_json::from_str(&text).unwrap();
    let mut p = all
        .into_iter()
        .find(|p| pick(p))
        .expect("a payload of that kind");
    p["transcript_path"] = Value::from(s.transcript.display().to_string());
    p["cwd"] = Value::from(s.workspace.display().to_string());
    serde_json::to_vec(&p).unwrap()
}

/// The record ids a context cites (`[source: fr_… | record ID …]`), the task left out.
pub(super) fn cited(context: &str) -> BTreeSet<String> {
    context
        .split("| record ")
        .skip(1)
        .map(|rest| {
            rest.split([' ', ']'])
                .next()
                .unwrap_or_default()
                .to_string()
        })
        .filter(|id| id != "task")
        .collect()
}

fn scope_of(s: &Setup) -> Scope {
    Scope {
        workspace: s.workspace.canonicalize().unwrap().display().to_string(),
        server: "claude-code".into(),
        session: String::new(),
    }
}

fn ids_of(records: crate::records::Records) -> BTreeSet<String> {
    SessionRecord::all_of(records)
        .into_iter()
        .filter_map(|r| r.common().id.clone())
        .collect()
}

/// The additional context of a run's answer, checked to be the client JSON for `event`.
pub(super) fn context_of(run: &HookRun, event: &str) -> String {
    let out: Value = serde_json::from_str(run.stdout.as_deref().expect("an answer")).unwrap();
    let specific = &out["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], event, "{out}");
    let context = specific["additionalContext"].as_str().unwrap().to_string();
    assert!(
        context.starts_with(crate::import::INJECTED_MARKER),
        "{context}"
    );
    assert!(context.chars().count() <= answer::MAX_CONTEXT_CHARS);
    // It ends by saying how to get more: the setup's client serves ctxopt's tools.
    let more = answer::more_line(Some("ctxopt"));
    assert!(
        context.ends_with(&format!("\n{more}\n</ctxopt-context>")),
        "{context}"
    );
    context
}

#[test]
fn real_session_start_payloads_restore_the_transcript_and_real_prompts_repeat_none_of_it() {
    let transcript_ids =
        ids_of(import_transcript(&std::fs::read_to_string(real(TRANSCRIPT)).unwrap()).0);
    let cases: [(&str, &str, Option<&str>); 4] = [
        (
            "kesslerio__attio-mcp-server__user_prompt_submit.json",
            "UserPromptSubmit",
            None,
        ),
        (
            "CoorpAcademy__serverless-plugins__user_prompt_submit.json",
            "UserPromptSubmit",
            None,
        ),
        (
            "kesslerio__attio-mcp-server__session_start.json",
            "SessionStart",
            Some("compact"),
        ),
        (
            "kesslerio__attio-mcp-server__session_start.json",
            "SessionStart",
            Some("resume"),
        ),
    ];
    for (file, event, source) in cases {
        let s = setup(TRANSCRIPT);
        let input = payload(file, |p| source.is_none_or(|src| p["source"] == src), &s);
        let run = run(HookClient::ClaudeCode, &input, &s.config).unwrap();
        if event == "UserPromptSubmit" || source == Some("resume") {
            // The session was never compacted and the workspace has no other: the model has
            // every fact there is (a resumed session reloads its transcript).
            assert_eq!(run.stdout, None, "{file}: {}", run.note);
            continue;
        }
        let context = context_of(&run, event);
        let cites = cited(&context);
        assert!(!cites.is_empty(), "{file} {source:?}: {context}");
        for id in &cites {
            assert!(
                transcript_ids.contains(id),
                "{file}: {id} is not a record of the transcript"
            );
        }
    }
}

#[test]
fn other_real_payloads_import_and_stay_silent() {
    let cases: [(&str, Option<&str>); 8] = [
        (
            "kesslerio__attio-mcp-server__session_start.json",
            Some("startup"),
        ),
        (
            "kesslerio__attio-mcp-server__session_start.json",
            Some("clear"),
        ),
        ("kesslerio__attio-mcp-server__pre_compact.json", None),
        ("kesslerio__attio-mcp-server__stop.json", None),
        ("kesslerio__attio-mcp-server__notification.json", None),
        ("kesslerio__attio-mcp-server__subagent_stop.json", None),
        (
            "CoorpAcademy__serverless-plugins__abc7156b__post_tool_use.json",
            None,
        ),
        ("CoorpAcademy__serverless-plugins__session_end.json", None),
    ];
    for (file, source) in cases {
        let s = setup(TRANSCRIPT);
        let input = payload(file, |p| source.is_none_or(|src| p["source"] == src), &s);
        let run = run(HookClient::ClaudeCode, &input, &s.config).unwrap();
        assert_eq!(run.stdout, None, "{file} {source:?}");
        let store = Store::open_arg(s.config.store.as_deref()).unwrap();
        let workspace = s.workspace.canonicalize().unwrap().display().to_string();
        assert!(
            store.count(&workspace).unwrap() > 100,
            "{file}: not imported"
        );
    }
}

#[test]
fn pre_compact_instructs_the_summary_once_with_the_files_in_play() {
    let mut s = setup(TRANSCRIPT);
    s.config.summary_instructions = true;
    let pre = payload(
        "kesslerio__attio-mcp-server__pre_compact.json",
        |_| true,
        &s,
    );
    let first = run(HookClient::ClaudeCode, &pre, &s.config).unwrap();
    let text = first.stdout.expect("instructions");
    // Plain text, which the client gives its summarizer; JSON it would parse as a decision.
    assert!(serde_json::from_str::<Value>(&text).is_err());
    assert!(text.chars().count() <= answer::MAX_INSTRUCTION_CHARS);
    assert!(!text.contains("[source: "), "{text}");
    assert!(
        first.note.contains("; instructed the summary with "),
        "{}",
        first.note
    );
    insta::assert_snapshot!(text);
    // The client fires the hook twice for one compaction: the summary is instructed once.
    let second = run(HookClient::ClaudeCode, &pre, &s.config).unwrap();
    assert_eq!(second.stdout, None, "{}", second.note);
    // Counted beside what the hooks inject, per event.
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    let events: Vec<(String, u64)> = store
        .injection_totals(None)
        .unwrap()
        .into_iter()
        .map(|i| (i.event, i.answers))
        .collect();
    assert_eq!(events, [("PreCompact".to_string(), 1)]);
}

#[test]
fn pre_compact_snapshots_what_the_session_start_after_it_restores_even_from_a_cut_transcript() {
    const TASK: &str = "Thanks! Please update CLAUDE.md for current changes";
    let transcript_ids =
        ids_of(import_transcript(&std::fs::read_to_string(real(TRANSCRIPT)).unwrap()).0);
    let s = setup(TRANSCRIPT);
    let pre = payload(
        "kesslerio__attio-mcp-server__pre_compact.json",
        |_| true,
        &s,
    );
    let snapshot = run(HookClient::ClaudeCode, &pre, &s.config).unwrap();
    assert_eq!(snapshot.stdout, None);
    assert!(
        snapshot.note.contains("; snapshot of "),
        "{}",
        snapshot.note
    );
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    let stored = context::load(&store, &scope_of(&s)).unwrap();
    let log = context::snapshot_log(&s.transcript.display().to_string());
    assert_eq!(context::snapshot_task(&stored, &log).as_deref(), Some(TASK));
    let saved: BTreeSet<String> = stored
        .iter()
        .filter(|r| r.provenance.log_path.as_deref() == Some(log.as_str()))
        .filter_map(|r| r.record.common().id.clone())
        .filter(|id| id != "snapshot-task")
        .collect();
    assert!(
        !saved.is_empty() && saved.is_subset(&transcript_ids),
        "{saved:?}"
    );
    drop(store);

    // The client compacts and the transcript is cut to its last lines: neither the task nor
    // most of the records are in it any more, and the hook's state starts over.
    let text = std::fs::read_to_string(&s.transcript).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len() - 3..].join("\n") + "\n";
    assert!(!tail.contains(TASK));
    std::fs::write(&s.transcript, tail).unwrap();
    let start = payload(
        "kesslerio__attio-mcp-server__session_start.json",
        |p| p["source"] == "compact",
        &s,
    );
    let restored = run(HookClient::ClaudeCode, &start, &s.config).unwrap();
    let context = context_of(&restored, "SessionStart");
    assert!(context.contains(TASK), "{context}");
    // The restore names the files in play, the file the session changed last first among
    // the changed ones, in a section after what the session is doing now.
    let (records, _) = import_transcript(&text);
    let last_changed = records
        .diffs
        .iter()
        .max_by_key(|d| d.common.timestamp.clone())
        .map(|d| d.path.clone())
        .unwrap();
    let index = context
        .split("## Files in play\n")
        .nth(1)
        .expect("a Files in play section")
        .split("\n\n")
        .next()
        .unwrap();
    let first_changed = index
        .lines()
        .find(|l| l.starts_with("- ") && l.contains(": changed"))
        .unwrap();
    assert!(
        first_changed.starts_with(&format!("- {last_changed}: changed")),
        "{index}"
    );
    assert!(context.find("## Files in play") > context.find("## Task"));
    let cites = cited(&context);
    assert!(
        !cites.is_disjoint(&saved),
        "{cites:?} cites nothing of {saved:?}"
    );
    let state = state::load(&s.config.state_dir, &s.transcript.display().to_string()).unwrap();
    assert_eq!(state.generation, 1, "the cut was noticed");

    // Other builds never draw on a snapshot: from its records alone they build nothing.
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    let only_snapshot: Vec<_> = context::load(&store, &scope_of(&s))
        .unwrap()
        .into_iter()
        .filter(|r| r.provenance.log_path.as_deref() == Some(log.as_str()))
        .collect();
    let build = |exclusions: &context::Exclusions| {
        context::build(
            only_snapshot.clone(),
            TASK,
            exclusions,
            context::Shape::budget(DEFAULT_HOOK_BUDGET),
        )
        .unwrap()
    };
    assert_eq!(build(&context::Exclusions::default()), None);
    let restore = context::Exclusions {
        snapshot: Some(log.clone()),
        ..context::Exclusions::default()
    };
    assert!(build(&restore).is_some());
}

#[test]
fn importing_in_pieces_stores_what_one_import_stores() {
    let text = std::fs::read(real(TRANSCRIPT)).unwrap();
    let whole = setup(TRANSCRIPT);
    let prompt = |s: &Setup| payload("kesslerio__attio-mcp-server__stop.json", |_| true, s);
    run(HookClient::ClaudeCode, &prompt(&whole), &whole.config).unwrap();
    let pieces = setup(TRANSCRIPT);
    // Cut in the middle of a line: the first run imports only the complete lines.
    let cut = text.len() / 2 + 7;
    assert_ne!(text[cut - 1], b'\n');
    std::fs::write(&pieces.transcript, &text[..cut]).unwrap();
    run(HookClient::ClaudeCode, &prompt(&pieces), &pieces.config).unwrap();
    let state = state::load(
        &pieces.config.state_dir,
        &pieces.transcript.display().to_string(),
    )
    .unwrap();
    assert!(state.offset < cut as u64 && text[state.offset as usize - 1] == b'\n');
    std::fs::write(&pieces.transcript, &text).unwrap();
    run(HookClient::ClaudeCode, &prompt(&pieces), &pieces.config).unwrap();
    let stored = |s: &Setup| -> BTreeSet<String> {
        let store = Store::open_arg(s.config.store.as_deref()).unwrap();
        let workspace = s.workspace.canonicalize().unwrap().display().to_string();
        store
            .load(&crate::store::Filter::workspace(&workspace))
            .unwrap()
            .into_iter()
            .map(|r| r.record.to_json())
            .collect()
    };
    let (a, b) = (stored(&whole), stored(&pieces));
    assert_eq!(
        a.len(),
        ids_of(import_transcript(&String::from_utf8(text).unwrap()).0).len()
    );
    assert_eq!(a, b);
}

#[test]
fn an_injected_context_is_never_imported_back_nor_repeated() {
    let s = setup(TRANSCRIPT);
    for (i, earlier) in EARLIER.iter().enumerate() {
        import_session(&s, earlier, &format!("earlier-{i}"));
    }
    let input = prompt_payload(&s, "update CLAUDE.md with the project structure");
    let first = run(HookClient::ClaudeCode, &input, &s.config).unwrap();
    let context = context_of(&first, "UserPromptSubmit");
    // Claude Code writes the hook's context into the transcript; so does an older version
    // as a user message.
    let attachment = serde_json::json!({"type": "attachment", "uuid": "x1",
        "attachment": {"type": "hook_additional_context", "content": [context]}});
    let message = serde_json::json!({"type": "user", "uuid": "x2", "message": {"role": "user", "content": context}});
    let mut text = std::fs::read_to_string(&s.transcript).unwrap();
    text.push_str(&format!("{attachment}\n{message}\n"));
    std::fs::write(&s.transcript, text).unwrap();
    let input = prompt_payload(&s, "and describe the project structure of CLAUDE.md");
    let second = run(HookClient::ClaudeCode, &input, &s.config).unwrap();
    assert!(second.note.contains("ctxopt-context 2"), "{}", second.note);
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    let workspace = s.workspace.canonicalize().unwrap().display().to_string();
    let stored = store
        .load(&crate::store::Filter::workspace(&workspace))
        .unwrap();
    assert!(stored
        .iter()
        .all(|r| !r.record.to_json().contains("ctxopt-context")));
    // What the first run injected is in the window now: not injected again.
    let first_cites = cited(&context);
    assert!(!first_cites.is_empty());
    if let Some(out) = second.stdout {
        let again = cited(&out.replace("\\n", "\n"));
        assert!(first_cites.is_disjoint(&again), "{again:?}");
    }
}

#[test]
fn an_event_fired_twice_injects_once_and_is_counted_once() {
    let s = setup(TRANSCRIPT);
    for (i, earlier) in EARLIER.iter().enumerate() {
        import_session(&s, earlier, &format!("earlier-{i}"));
    }
    let input = prompt_payload(&s, "update CLAUDE.md with the project structure");
    // Twice at once (two hook entries for the event), then once more after them.
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(|| run(HookClient::ClaudeCode, &input, &s.config).unwrap());
        let b = scope.spawn(|| run(HookClient::ClaudeCode, &input, &s.config).unwrap());
        (a.join().unwrap(), b.join().unwrap())
    });
    let again = run(HookClient::ClaudeCode, &input, &s.config).unwrap();
    let printed = [&a, &b, &again]
        .iter()
        .filter(|r| r.stdout.is_some())
        .count();
    assert_eq!(printed, 1, "{}\n{}\n{}", a.note, b.note, again.note);
    assert!(again.note.contains("answered already"), "{}", again.note);
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    let totals = store.injection_totals(None).unwrap();
    assert_eq!(totals.len(), 1, "{totals:?}");
    let answer = [a, b].into_iter().find_map(|r| r.stdout).unwrap();
    let text = serde_json::from_str::<Value>(&answer).unwrap()["hookSpecificOutput"]
        ["additionalContext"]
        .as_str()
        .unwrap()
        .to_string();
    let t = &totals[0];
    assert_eq!(
        (t.session.as_str(), t.event.as_str(), t.answers),
        ("now", "UserPromptSubmit", 1)
    );
    assert_eq!(t.characters, text.chars().count() as u64);
    assert_eq!(
        t.tokens,
        crate::tokenizer::Tokenizer::default().count(&text) as u64
    );
    // A new prompt is a new event: answered (or not) on its own.
    let other = prompt_payload(&s, "describe the components of the TODO app");
    let next = run(HookClient::ClaudeCode, &other, &s.config).unwrap();
    assert!(!next.note.contains("answered already"), "{}", next.note);
}

#[test]
fn bad_payloads_and_missing_transcripts_are_errors() {
    let s = setup(TRANSCRIPT);
    for input in [
        &b"garbage"[..],
        b"{}",
        b"[1]",
        br#"{"hook_event_name":"UserPromptSubmit"}"#,
    ] {
        assert!(matches!(
            run(HookClient::ClaudeCode, input, &s.config),
            Err(HookError::Payload(_))
        ));
    }
    let missing = serde_json::json!({"hook_event_name": "UserPromptSubmit", "cwd": s.workspace,
        "prompt": "x", "transcript_path": s.workspace.join("none.jsonl")});
    let err = run(
        HookClient::ClaudeCode,
        missing.to_string().as_bytes(),
        &s.config,
    )
    .unwrap_err();
    assert!(matches!(err, HookError::Transcript(_)), "{err}");
}

#[test]
fn gemini_session_start_and_before_agent_repeat_nothing_of_the_chat() {
    const CHAT: &str =
        "gemini-cli/Mai0313__VibeCodingTracker__test_conversation_gemini__2026-03-27.json";
    let s = setup(CHAT);
    let chat_ids = ids_of(
        import_chat(&std::fs::read_to_string(real(CHAT)).unwrap())
            .unwrap()
            .0,
    );
    // Gemini CLI's hook input (its hooks reference): the common fields plus `source` or
    // `prompt`.
    let input = |event: &str, extra: (&str, &str)| {
        let mut p = serde_json::json!({"session_id": "s1", "hook_event_name": event,
            "timestamp": "2026-03-27T10:30:00.000Z", "cwd": s.workspace,
            "transcript_path": s.transcript});
        p[extra.0] = Value::from(extra.1);
        p.to_string().into_bytes()
    };
    let resumed = run(
        HookClient::GeminiCli,
        &input("SessionStart", ("source", "resume")),
        &s.config,
    )
    .unwrap();
    // A resumed chat is reloaded whole: the model has all of it. The hook imported it all
    // the same.
    assert_eq!(resumed.stdout, None, "{}", resumed.note);
    let stored: BTreeSet<String> = stored_of(&s)
        .into_iter()
        .filter_map(|r| r.record.common().id.clone())
        .collect();
    assert!(chat_ids.is_subset(&stored), "{chat_ids:?}");
    // The chat is one turn: all of it is what the model saw last.
    let prompt = (
        "prompt",
        "also move the build steps of README.md into CONTRIBUTING.md",
    );
    let next = run(
        HookClient::GeminiCli,
        &input("BeforeAgent", prompt),
        &s.config,
    )
    .unwrap();
    assert_eq!(next.stdout, None, "{}", next.note);
}

#[test]
fn the_state_file_holds_no_secret_of_the_transcript() {
    let s = setup(TRANSCRIPT);
    let token = format!("ghp_{}", "a1B2".repeat(9));
    let line = |v: serde_json::Value| format!("{v}\n");
    let mut text = std::fs::read_to_string(&s.transcript).unwrap();
    text.push_str(&line(
        serde_json::json!({"type": "user", "uuid": "u-secret",
        "timestamp": "2025-09-03T01:00:00.000Z",
        "message": {"role": "user", "content": format!("deploy with the token {token}")}}),
    ));
    text.push_str(&line(serde_json::json!({"type": "assistant", "uuid": "a-secret",
        "timestamp": "2025-09-03T01:00:01.000Z",
        "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_secret",
            "name": "Bash", "input": {"command": format!("GH_TOKEN={token} gh release create")}}]}})));
    std::fs::write(&s.transcript, text).unwrap();
    let input = serde_json::json!({"session_id": "s", "hook_event_name": "Stop",
        "transcript_path": s.transcript, "cwd": s.workspace});
    run(
        HookClient::ClaudeCode,
        input.to_string().as_bytes(),
        &s.config,
    )
    .unwrap();
    let dir = s.config.state_dir.join("hooks");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let state = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        !state.contains(&token),
        "the token in clear in {}",
        files[0].display()
    );
    // The canary: the prompt and the pending call are there, with placeholders.
    assert!(
        state.matches("[REDACTED:github-token:40:").count() >= 2,
        "{state}"
    );
    // A state read back goes on importing from where it was.
    let loaded = state::load(&s.config.state_dir, &s.transcript.display().to_string()).unwrap();
    assert!(loaded.offset > 0 && loaded.importer.last_prompt.unwrap().contains("[REDACTED:"));
}

/// The earlier sessions of the workspace of [`TRANSCRIPT`] (same project, `/path/to/Demo`).
const EARLIER: [&str; 2] = [
    "claude-code/d-kimuson__claude-code-viewer__1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl",
    "claude-code/d-kimuson__claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
];

/// Imports `source` into the setup's workspace as a session of its own (a `Stop` event).
fn import_session(s: &Setup, source: &str, session: &str) {
    let copy = s
        .workspace
        .parent()
        .unwrap()
        .join(format!("{session}.jsonl"));
    std::fs::copy(real(source), &copy).unwrap();
    let input = serde_json::json!({"session_id": session, "hook_event_name": "Stop",
        "transcript_path": copy, "cwd": s.workspace});
    let run = run(
        HookClient::ClaudeCode,
        input.to_string().as_bytes(),
        &s.config,
    )
    .unwrap();
    assert_eq!(run.stdout, None);
}

/// A `UserPromptSubmit` payload for the setup's transcript.
fn prompt_payload(s: &Setup, prompt: &str) -> Vec<u8> {
    serde_json::json!({"session_id": "now", "hook_event_name": "UserPromptSubmit",
        "transcript_path": s.transcript, "cwd": s.workspace, "prompt": prompt})
    .to_string()
    .into_bytes()
}

/// The stored records of the transcript at `log`, and all of the workspace's.
pub(super) fn stored_of(s: &Setup) -> Vec<crate::store::StoredRecord> {
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    context::load(&store, &scope_of(s)).unwrap()
}

#[test]
fn a_prompt_time_answer_repeats_nothing_the_model_still_has() {
    // A real uncompacted session, cut before its last prompt, after two earlier sessions of
    // the same project: the model has the whole session in its window.
    const PROMPT: &str = "Thanks! Please update CLAUDE.md for current changes";
    let s = setup(TRANSCRIPT);
    for (i, earlier) in EARLIER.iter().enumerate() {
        import_session(&s, earlier, &format!("earlier-{i}"));
    }
    let text = std::fs::read_to_string(&s.transcript).unwrap();
    let before: String = text.lines().take(433).map(|l| format!("{l}\n")).collect();
    assert!(!before.contains(PROMPT) && text.contains(PROMPT));
    std::fs::write(&s.transcript, &before).unwrap();
    let answer = run(
        HookClient::ClaudeCode,
        &prompt_payload(&s, PROMPT),
        &s.config,
    )
    .unwrap();
    let log = s.transcript.display().to_string();
    let stored = stored_of(&s);
    let window = context::window_lines(
        stored
            .iter()
            .filter(|r| r.provenance.log_path.as_deref() == Some(log.as_str())),
    );
    let context = context_of(&answer, "UserPromptSubmit");
    assert!(
        !context.contains("## Files in play"),
        "only a restore names them"
    );
    // It injects facts of the earlier sessions that bear on the prompt, none of this one's…
    let cites = cited(&context);
    let session_ids = ids_of(import_transcript(&before).0);
    assert!(!cites.is_empty(), "{context}");
    assert!(cites.is_disjoint(&session_ids), "{cites:?}");
    // … and no line the model still has.
    assert_eq!(context::repeated_lines(&context, &window), 0, "{context}");

    // The canary: the old rule (leave out only the last turn of this transcript, here from
    // its first prompt on, line 2) repeats lines the model has.
    let old: Vec<_> = stored
        .into_iter()
        .filter(|r| {
            r.provenance.log_path.as_deref() != Some(log.as_str())
                || r.record
                    .common()
                    .id
                    .as_deref()
                    .and_then(ingest::id_line)
                    .is_some_and(|line| line < 2)
        })
        .collect();
    let built = context::build(
        old,
        PROMPT,
        &context::Exclusions::default(),
        context::Shape::budget(DEFAULT_HOOK_BUDGET),
    )
    .unwrap()
    .unwrap();
    let repeated = context::repeated_lines(&built.context, &window);
    assert!(repeated > 0, "{}", built.context);
}

#[test]
fn after_a_real_compaction_a_prompt_gets_only_facts_from_before_the_boundary() {
    // A real session compacted once (its `compact_boundary` at line 1256), cut 300 lines on.
    const COMPACTED: &str =
        "claude-code/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl";
    const BOUNDARY: usize = 1256;
    let s = setup(COMPACTED);
    let text = std::fs::read_to_string(&s.transcript).unwrap();
    assert!(text
        .lines()
        .nth(BOUNDARY - 1)
        .unwrap()
        .contains("compact_boundary"));
    let cut: String = text
        .lines()
        .take(BOUNDARY + 300)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(&s.transcript, &cut).unwrap();
    let answer = run(
        HookClient::ClaudeCode,
        &prompt_payload(
            &s,
            "continue with spotter-gqc: what did the earlier tests show?",
        ),
        &s.config,
    )
    .unwrap();
    let state = state::load(&s.config.state_dir, &s.transcript.display().to_string()).unwrap();
    assert_eq!(state.boundary, Some(BOUNDARY));
    let context = context_of(&answer, "UserPromptSubmit");
    let lines: Vec<usize> = cited(&context)
        .iter()
        .map(|id| ingest::id_line(id).unwrap())
        .collect();
    // Facts come back from before the boundary, none from after it.
    assert!(!lines.is_empty(), "{context}");
    assert!(lines.iter().all(|l| *l < BOUNDARY), "{lines:?}");
    let stored = stored_of(&s);
    let log = s.transcript.display().to_string();
    let window = context::window_lines(stored.iter().filter(|r| {
        r.provenance.log_path.as_deref() == Some(log.as_str())
            && r.record
                .common()
                .id
                .as_deref()
                .and_then(ingest::id_line)
                .is_none_or(|l| l >= BOUNDARY)
    }));
    assert_eq!(context::repeated_lines(&context, &window), 0, "{context}");
}

#[test]
fn a_build_over_its_character_limit_is_made_again_smaller_not_cut_at_its_end() {
    let s = setup(TRANSCRIPT);
    let pre = payload(
        "kesslerio__attio-mcp-server__pre_compact.json",
        |_| true,
        &s,
    );
    run(HookClient::ClaudeCode, &pre, &s.config).unwrap();
    let store = Store::open_arg(s.config.store.as_deref()).unwrap();
    let stored = context::load(&store, &scope_of(&s)).unwrap();
    let build = |max_chars| {
        let shape = context::Shape {
            max_chars,
            files_in_play: true,
            ..context::Shape::budget(DEFAULT_RESTORE_BUDGET)
        };
        let restore = context::Exclusions {
            restore: true,
            ..context::Exclusions::default()
        };
        context::build(stored.clone(), "go on", &restore, shape)
            .unwrap()
            .unwrap()
    };
    let whole = build(None);
    let chars = whole.context.chars().count();
    let limit = chars * 2 / 3;
    let fitted = build(Some(limit));
    assert!(fitted.context.chars().count() <= limit, "{chars}");
    // Selected again at a smaller budget, not cut from the end: its text is no prefix of the
    // whole build's (fragments are left out by score, wherever they render), with no cut
    // note, and it cites fewer of the same records.
    assert!(!whole.context.starts_with(fitted.context.trim_end()));
    assert!(!fitted.context.contains("[… cut at"));
    assert!(fitted.cited.len() < whole.cited.len());
    assert!(fitted.cited.iter().all(|id| whole.cited.contains(id)));
}
