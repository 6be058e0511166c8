//! `ctxopt hook claude-code` run the way a client runs it, for the hook benchmark
//! (`benches/hooks.rs`) and the end-to-end tests (`proxy-tests/hooks.rs`): a child process
//! whose store and state live in one directory, the payload written on its stdin from a
//! thread (a hook that never reads stdin cannot block the caller), stdout and stderr piped.
//! Also the real transcript both use, a `UserPromptSubmit` payload for it, and a large
//! transcript made by repeating it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;

/// A real Claude Code transcript (1.0.98, several prompts, inlined subagents), relative to
/// the repository.
pub(super) const REAL_TRANSCRIPT: &str = "fixtures/real-world/agent-transcripts/claude-code/d-kimuson__claude-code-viewer__fe5e1c67-53e7-4862-81ae-d0e013e3270b.jsonl";

/// [`REAL_TRANSCRIPT`] as a path.
pub(super) fn real_transcript() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(REAL_TRANSCRIPT)
}

/// Starts `ctxopt hook ARGS…` (the client, `claude-code` or `gemini-cli`, and any option; the
/// binary `ctxopt`) with its store, state and home folder in `dir` (the client config files it
/// reads are there), and writes `payload` on its stdin; join the thread once the child has
/// exited.
pub(super) fn spawn(
    ctxopt: &str,
    args: &[&str],
    dir: &Path,
    payload: &[u8],
) -> (Child, JoinHandle<()>) {
    let mut child = Command::new(ctxopt)
        .arg("hook")
        .args(args)
        .arg("--store")
        .arg(dir.join("store.sqlite3"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ctxopt hook");
    let mut stdin = child.stdin.take().expect("a piped stdin");
    let payload = payload.to_vec();
    let writer = std::thread::spawn(move || {
        // A hook that exits before reading all of it closes the pipe: not an error here.
        let _ = stdin.write_all(&payload);
    });
    (child, writer)
}

/// A `UserPromptSubmit` payload for `transcript` in the workspace `cwd`, its prompt one the
/// real transcript answers.
pub(super) fn prompt_payload(transcript: &Path, cwd: &Path) -> Vec<u8> {
    event_payload("UserPromptSubmit", transcript, cwd)
}

/// A payload of `event` for `transcript` in the workspace `cwd`: `SessionStart` with
/// `source: compact` (the restore after a compaction), `PreCompact`, a prompt event with a
/// prompt the real transcript answers, or any other event without its fields.
pub(super) fn event_payload(event: &str, transcript: &Path, cwd: &Path) -> Vec<u8> {
    let mut payload = serde_json::json!({"session_id": "e2e", "hook_event_name": event,
        "transcript_path": transcript, "cwd": cwd});
    match event {
        "SessionStart" => payload["source"] = "compact".into(),
        "UserPromptSubmit" | "BeforeAgent" => {
            payload["prompt"] =
                "the todo app build fails with TypeError: generate is not a function".into();
        }
        "PreCompact" => payload["trigger"] = "auto".into(),
        _ => {}
    }
    payload.to_string().into_bytes()
}

/// Writes [`REAL_TRANSCRIPT`] repeated into `path` until it holds at least `size` bytes;
/// returns the open file (to append more turns to) and the bytes written.
pub(super) fn repeated_transcript(path: &Path, size: u64) -> (std::fs::File, u64) {
    let real = std::fs::read(real_transcript()).expect("the real transcript");
    let mut file = std::fs::File::create(path).expect("create the transcript");
    let mut written = 0;
    while written < size {
        file.write_all(&real).expect("write the transcript");
        written += real.len() as u64;
    }
    (file, written)
}
