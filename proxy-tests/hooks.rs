//! `ctxopt hook` run the way a client runs it: a child process, the payload on stdin, a
//! timeout. Whatever the input, it exits 0 and prints either nothing or one JSON object.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

#[path = "../benches/common/hook_run.rs"]
mod hook_run;

use hook_run::{prompt_payload as payload, real_transcript, repeated_transcript};

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");

/// How long a hook may take here (a debug build; the benchmark measures a release build).
const TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `ctxopt hook claude-code` with `stdin`; returns (exit code, stdout, log text).
fn hook(dir: &Path, stdin: &[u8]) -> (i32, String, String) {
    let (mut child, writer) = hook_run::spawn(CTXOPT, dir, stdin);
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
    let dir = tempfile::tempdir().unwrap();
    let transcript = dir.path().join("session.jsonl");
    std::fs::copy(real_transcript(), &transcript).unwrap();
    let (code, stdout, _) = hook(dir.path(), &payload(&transcript, dir.path()));
    assert_harmless(code, &stdout);
    assert!(stdout.contains("generate is not a function"), "{stdout}");
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
    let (mut child, writer) =
        hook_run::spawn(CTXOPT, dir.path(), &payload(&transcript, dir.path()));
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
