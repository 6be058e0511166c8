//! `ctxopt hook` run the way a client runs it: a child process, the payload on stdin, a
//! timeout. Whatever the input, it exits 0 and prints either nothing or one JSON object.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

#[path = "../benches/common/hook_run.rs"]
mod hook_run;

use hook_run::{event_payload, prompt_payload as payload, real_transcript, repeated_transcript};

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");

/// How long a hook may take here (a debug build; the benchmark measures a release build).
const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `ctxopt hook claude-code` with `stdin`; returns (exit code, stdout, log text).
fn hook(dir: &Path, stdin: &[u8]) -> (i32, String, String) {
    hook_with(dir, &["claude-code"], stdin)
}

/// Runs `ctxopt hook ARGS…` with `stdin`; returns (exit code, stdout, log text).
fn hook_with(dir: &Path, args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let (mut child, writer) = hook_run::spawn(CTXOPT, args, dir, stdin);
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let status = crate::support::poll_until(TIMEOUT, Duration::from_millis(20), || {
        child.try_wait().unwrap()
    });
    let Some(status) = status else {
        child.kill().unwrap();
        panic!("the hook did not answer within {TIMEOUT:?}");
    };
    writer.join().unwrap();
    let stdout = reader.join().unwrap();
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(stderr, "", "a hook writes nothing on stderr");
    let log = std::fs::read_to_string(dir.join("state/hook.log")).unwrap_or_default();
    (status.code().unwrap_or(-1), stdout, log)
}

/// A folder holding a copy of the real transcript, and the copy's path.
fn with_real_transcript() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    std::fs::copy(real_transcript(), &transcript).unwrap();
    (dir, transcript)
}

/// Exit 0, and stdout empty or one JSON object with the client's fields.
fn assert_harmless(code: i32, stdout: &str) {
    assert_eq!(code, 0);
    if !stdout.trim().is_empty() {
        let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
        assert!(
            v["hookSpecificOutput"]["additionalContext"].is_string(),
            "{v}"
        );
    }
}

#[test]
fn garbage_input_exits_0_silently_and_logs_why() {
    let dir = tempfile::tempdir().unwrap();
    for input in [&b"\x00\xffnot json"[..], b"", b"{\"hook_event_name\": 3}"] {
        let (code, stdout, log) = hook(dir.path(), input);
        assert_eq!((code, stdout.as_str()), (0, ""));
        assert!(log.lines().last().unwrap().contains("no-output"), "{log}");
        assert!(log.contains("bad payload"), "{log}");
    }
    let mode = std::fs::metadata(dir.path().join("state/hook.log")).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
}

#[test]
fn a_command_line_the_hook_cannot_read_exits_0_silently_and_logs_why() {
    // A client takes exit code 2 as a decision (Claude Code blocks the prompt, the compaction
    // or the tool call): an option of a newer ctxopt, an unknown client or a bad value in the
    // settings must not make the hook answer so.
    let dir = tempfile::tempdir().unwrap();
    let big = vec![b' '; 1 << 20];
    for (args, said) in [
        (
            &["claude-code", "--an-option-of-a-newer-ctxopt"][..],
            "an-option-of-a-newer-ctxopt",
        ),
        (&["claude-code", "--budget", "lots"], "'lots'"),
        (&["cursor"], "'cursor'"),
    ] {
        let (code, stdout, log) = hook_with(dir.path(), args, &big);
        assert_eq!((code, stdout.as_str()), (0, ""), "{args:?}");
        let last = log.lines().last().unwrap_or_default();
        assert!(last.contains("no-output") && last.contains(said), "{log}");
    }
    // The canary: the same run with a command line it reads logs no such line.
    let (code, _, log) = hook(dir.path(), b"{}");
    assert_eq!(code, 0);
    assert!(
        !log.lines().last().unwrap().contains("the command line"),
        "{log}"
    );
}

#[test]
fn an_unreadable_transcript_exits_0_silently() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the transcript should be: it exists, and it cannot be read as one.
    let transcript = dir.path().join("session.jsonl");
    std::fs::create_dir(&transcript).unwrap();
    let (code, stdout, log) = hook(dir.path(), &payload(&transcript, dir.path()));
    assert_eq!((code, stdout.as_str()), (0, ""));
    assert!(log.contains("transcript:"), "{log}");
}

#[test]
fn a_real_transcript_gets_client_json() {
    let (dir, transcript) = with_real_transcript();
    // A prompt on a session never compacted: the model has every fact, nothing is added.
    let (code, stdout, log) = hook(dir.path(), &payload(&transcript, dir.path()));
    assert_eq!((code, stdout.as_str()), (0, ""), "{log}");
    assert!(log.contains("nothing to inject"), "{log}");
    // The restore after a compaction.
    let restore = event_payload("SessionStart", &transcript, dir.path());
    let (code, stdout, _) = hook(dir.path(), &restore);
    assert_harmless(code, &stdout);
    assert!(stdout.contains("generate is not a function"), "{stdout}");
}

/// The `additionalContext` of a hook's answer.
fn additional_context(stdout: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .to_string()
}

/// `ctxopt ARGS` with its home folder and working directory in `dir`; its stdout.
fn ctxopt_in(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new(CTXOPT)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join(".config"))
        .env("XDG_STATE_HOME", dir.join(".state"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn pre_compact_prints_instructions_for_the_summary_only_when_asked() {
    let (dir, transcript) = with_real_transcript();
    let pre = event_payload("PreCompact", &transcript, dir.path());
    // By default a `PreCompact` prints nothing.
    let (code, stdout, log) = hook(dir.path(), &pre);
    assert_eq!((code, stdout.as_str()), (0, ""), "{log}");
    // Asked to, it prints plain text, which Claude Code gives its summarizer.
    let (code, text, log) = hook_with(dir.path(), &["claude-code", "--summary-instructions"], &pre);
    assert_eq!(code, 0, "{log}");
    assert!(
        text.starts_with("ctxopt, for the summary: ") && text.contains("The files in play"),
        "{text}"
    );
    assert!(serde_json::from_str::<serde_json::Value>(&text).is_err());
}

#[test]
fn a_restore_names_the_context_tool_and_status_and_report_count_what_it_injected() {
    let (dir, transcript) = with_real_transcript();
    let restore = event_payload("SessionStart", &transcript, dir.path());
    // Without a `ctxopt serve` entry in the client's config, the answer cannot name the tool.
    let (_, without, _) = hook(dir.path(), &restore);
    let last = additional_context(&without);
    assert!(!last.contains("build_context"), "{last}");
    // The project serves ctxopt's tools: the next restore (the transcript has grown) ends
    // by naming them.
    std::fs::write(
        dir.path().join(".mcp.json"),
        r#"{"mcpServers": {"context": {"command": "ctxopt", "args": ["serve"]}}}"#,
    )
    .unwrap();
    let turn: Vec<u8> = std::fs::read(real_transcript())
        .unwrap()
        .split_inclusive(|b| *b == b'\n')
        .take(6)
        .flatten()
        .copied()
        .collect();
    let mut grown = std::fs::read(&transcript).unwrap();
    grown.extend_from_slice(&turn);
    std::fs::write(&transcript, grown).unwrap();
    let (code, stdout, log) = hook(dir.path(), &restore);
    assert_harmless(code, &stdout);
    let context = additional_context(&stdout);
    assert!(context.chars().count() <= 10_000, "{}", context.len());
    assert!(
        context.ends_with(
            "call the `build_context` tool of the `context` MCP server (ctxopt) with {\"task\": \"what you need now\"}.\n</ctxopt-context>"
        ),
        "{context}"
    );
    // The same event fired again: nothing printed, nothing counted.
    let (code, again, log_again) = hook(dir.path(), &restore);
    assert_eq!((code, again.as_str()), (0, ""));
    assert!(log_again.contains("answered already"), "{log}\n{log_again}");

    let tokenizer = ctxopt::tokenizer::Tokenizer::default();
    let injected = tokenizer.count(&last) + tokenizer.count(&context);
    let store = dir.path().join("store.sqlite3");
    let mode = std::fs::metadata(&store).unwrap();
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&mode.permissions()) & 0o777,
        0o600
    );
    let status = ctxopt_in(dir.path(), &["status", "--store", store.to_str().unwrap()]);
    assert!(
        status.contains(&format!("{injected} tokens injected in all")),
        "{status}"
    );
    let session = status
        .lines()
        .find(|l| l.contains("claude-code session e2e"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(
        session.contains("SessionStart 2 answers")
            && session.contains(&format!("{injected} tokens")),
        "{session}"
    );
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/frame-logs/everything-compaction.jsonl");
    let json = ctxopt_in(
        dir.path(),
        &[
            "report",
            log.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
            "--format",
            "json",
        ],
    );
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let rows = report["hook_injections"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["tokens"], injected as u64);
    assert_eq!(rows[0]["answers"], 2);
    let saved: u64 = report["compaction"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["saved_tokens"].as_u64().unwrap())
        .sum();
    assert!(saved > 0);
    let table = ctxopt_in(
        dir.path(),
        &[
            "report",
            log.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
        ],
    );
    assert!(
        table.contains(&format!(
            "hooks added {injected} tokens to 1 sessions' context; wire compaction saved {saved} tokens; net {} tokens",
            saved as i64 - injected as i64
        )),
        "{table}"
    );
}

#[test]
fn a_50_mb_transcript_answers_within_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    drop(repeated_transcript(&transcript, 50 * 1024 * 1024));
    let (code, stdout, log) = hook(dir.path(), &payload(&transcript, dir.path()));
    assert_harmless(code, &stdout);
    assert!(log.contains("lines before the last"), "{log}");
}

#[test]
fn a_fifo_transcript_is_refused_at_once() {
    // Nobody ever writes to it: a hook that opened it to read would wait for good.
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    let path = std::ffi::CString::new(transcript.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let (code, stdout, log) = hook(dir.path(), &payload(&transcript, dir.path()));
    assert_eq!((code, stdout.as_str()), (0, ""));
    assert!(log.contains("not a regular file (a FIFO)"), "{log}");
}

#[cfg(target_os = "linux")]
/// The peak resident memory the hook's log line gives (`; peak N KiB`: its own `VmHWM`).
fn logged_peak_kib(log: &str) -> u64 {
    let line = log.lines().last().expect("a log line");
    let at = line.rfind("; peak ").expect("the peak on the log line") + "; peak ".len();
    line[at..]
        .trim_end_matches(" KiB")
        .parse()
        .unwrap_or_else(|_| panic!("{line}"))
}

#[cfg(target_os = "linux")]
/// The bound on a hook's peak memory on a transcript of any size: the 8 MiB window it
/// imports, what it builds from it, the binary. A hook that read the skipped prefix would
/// need the prefix's size on top (2 GiB here).
const HOOK_PEAK_KIB: u64 = 256 * 1024;

/// The peak is the hook's own `VmHWM` (Linux), which it writes on its log line: measured
/// from outside (`wait4`), a child started by `posix_spawn` also counts the peak of the
/// test process it was started from.
#[cfg(target_os = "linux")]
#[test]
fn a_sparse_2_gb_transcript_is_imported_in_bounded_memory() {
    // 2 GiB as the probe had it, and ten times that: the peak must not follow the size.
    for gib in [2u64, 20] {
        let peak_kib = sparse_transcript_peak_kib(gib << 30);
        eprintln!("hook peak RSS on a {gib} GiB sparse transcript: {peak_kib} KiB");
        assert!(
            peak_kib < HOOK_PEAK_KIB,
            "{gib} GiB: peak RSS {peak_kib} KiB, over {HOOK_PEAK_KIB} KiB"
        );
    }
}

#[cfg(target_os = "linux")]
/// Runs the hook on a transcript of `size` bytes of holes followed by a real session's
/// lines; returns its peak RSS in KiB.
fn sparse_transcript_peak_kib(size: u64) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    {
        // Holes, then a real session's lines: only the end is on disk.
        let file = std::fs::File::create(&transcript).unwrap();
        file.set_len(size).unwrap();
    }
    let real = std::fs::read(real_transcript()).unwrap();
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&transcript)
        .unwrap();
    std::io::Write::write_all(&mut file, b"\n").unwrap();
    std::io::Write::write_all(&mut file, &real).unwrap();
    drop(file);
    // The restore after a compaction (a prompt on a session never compacted adds nothing).
    let restore = event_payload("SessionStart", &transcript, dir.path());
    let (mut child, writer) = hook_run::spawn(CTXOPT, &["claude-code"], dir.path(), &restore);
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let code = child.wait().unwrap().code().unwrap_or(-1);
    writer.join().unwrap();
    let stdout = reader.join().unwrap();
    let log = std::fs::read_to_string(dir.path().join("state/hook.log")).unwrap();
    assert_eq!(code, 0);
    assert_harmless(code, &stdout);
    // The canary: the session's lines at the end were imported and answered from.
    assert!(
        stdout.contains("generate is not a function"),
        "{stdout}\n{log}"
    );
    assert!(log.contains("uncounted lines before the last"), "{log}");
    logged_peak_kib(&log)
}
