//! The hooks on the real payloads in `fixtures/real-world/agent-transcripts/claude-hooks`,
//! each with its `transcript_path` pointed at a copy of a real transcript.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;
use crate::import::claude_code::import_transcript;
use crate::import::gemini_cli::import_chat;
use crate::records::SessionRecord;

fn real(sub: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-world/agent-transcripts")
        .join(sub)
}

/// A real transcript with several prompts (Claude Code 1.0.98, inlined subagents).
const TRANSCRIPT: &str =
    "claude-code/d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";

struct Setup {
    _dir: tempfile::TempDir,
    transcript: PathBuf,
    workspace: PathBuf,
    config: HookConfig,
}

fn setup(source: &str) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join(Path::new(source).file_name().unwrap());
    std::fs::copy(real(source), &transcript).unwrap();
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    let config = HookConfig {
        budget: DEFAULT_HOOK_BUDGET,
        store: Some(dir.path().join("store.sqlite3").display().to_string()),
        state_dir: dir.path().join("state"),
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
fn cited(context: &str) -> BTreeSet<String> {
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
fn context_of(run: &HookRun, event: &str) -> String {
    let out: Value = serde_json::from_str(run.stdout.as_deref().expect("an answer")).unwrap();
    let specific = &out["hookSpecificOutput"];
    assert_eq!(specific["hookEventName"], event, "{out}");
    let context = specific["additionalContext"].as_str().unwrap().to_string();
    assert!(
        context.starts_with(crate::import::INJECTED_MARKER),
        "{context}"
    );
    assert!(context.chars().count() <= answer::MAX_CONTEXT_CHARS);
    context
}

#[test]
fn real_prompt_and_session_start_payloads_get_context_citing_the_transcript() {
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
        context::build(only_snapshot.clone(), TASK, DEFAULT_HOOK_BUDGET, exclusions).unwrap()
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
    let input = payload(
        "kesslerio__attio-mcp-server__user_prompt_submit.json",
        |_| true,
        &s,
    );
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
    // What the first run injected is not injected again.
    if let Some(out) = second.stdout {
        let again = cited(&out.replace("\\n", "\n"));
        assert!(cited(&context).is_disjoint(&again), "{again:?}");
    }
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
fn gemini_session_start_cites_the_chat_and_before_agent_repeats_nothing_of_the_last_turn() {
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
    let cites = cited(&context_of(&resumed, "SessionStart"));
    assert!(!cites.is_empty() && cites.is_subset(&chat_ids), "{cites:?}");
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
    assert!(loaded.offset > 0 && loaded.last_prompt.unwrap().contains("[REDACTED:"));
}
