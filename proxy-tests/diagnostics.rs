//! Diagnostics through `tracing`: by default the user-facing lines reach stderr as bare text
//! (the same words as ever) and nothing at debug level; `CTXOPT_LOG` turns the debug
//! diagnostics on, `CTXOPT_LOG_FILE` sends them to a private file instead.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A copy of a real fixture log with one damaged line appended.
fn damaged_log(dir: &Path) -> PathBuf {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/frame-logs/gap-trial.jsonl");
    let mut text = std::fs::read_to_string(source).unwrap();
    text.push_str("this line is not a record\n");
    let path = dir.join("damaged.jsonl");
    std::fs::write(&path, text).unwrap();
    path
}

fn ingest(dir: &Path, log: &Path, env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ctxopt"));
    cmd.arg("ingest")
        .arg("--store")
        .arg(":memory:")
        .arg("--workspace")
        .arg(dir)
        .arg(log)
        .env_remove("CTXOPT_LOG")
        .env_remove("CTXOPT_LOG_FILE");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

#[test]
fn by_default_the_user_facing_lines_reach_stderr_bare_and_debug_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let log = damaged_log(dir.path());
    let out = ingest(dir.path(), &log, &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 2, "{stderr}");
    let damaged = format!(
        "ctxopt ingest: {}: 1 line(s) are not frame-log records",
        log.display()
    );
    assert_eq!(lines[0], damaged);
    let stored = lines[1].strip_prefix("ctxopt ingest: ").unwrap_or_default();
    let (count, rest) = stored.split_once(' ').unwrap_or_default();
    assert!(count.parse::<u64>().is_ok_and(|n| n > 0), "{stderr}");
    assert_eq!(rest, "record(s) stored, 0 already present");
}

#[test]
fn ctxopt_log_debug_turns_the_debug_diagnostics_on() {
    let dir = tempfile::tempdir().unwrap();
    let log = damaged_log(dir.path());
    let out = ingest(dir.path(), &log, &[("CTXOPT_LOG", Path::new("debug"))]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let debug = stderr.lines().filter(|l| l.contains(" DEBUG ")).count();
    assert!(debug > 0, "{stderr}");
    assert!(stderr.contains("is not a record"), "{stderr}");
    assert!(stderr.contains(" WARN "), "{stderr}");
}

#[test]
fn ctxopt_log_file_takes_every_diagnostic_into_a_private_file() {
    let dir = tempfile::tempdir().unwrap();
    let log = damaged_log(dir.path());
    let file = dir.path().join("diagnostics.log");
    let out = ingest(
        dir.path(),
        &log,
        &[
            ("CTXOPT_LOG", Path::new("debug")),
            ("CTXOPT_LOG_FILE", &file),
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains(" DEBUG "), "{text}");
    assert!(text.contains("record(s) stored"), "{text}");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_bad_filter_is_said_and_the_defaults_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let log = damaged_log(dir.path());
    let out = ingest(
        dir.path(),
        &log,
        &[("CTXOPT_LOG", Path::new("ctxopt=loud"))],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("CTXOPT_LOG=ctxopt=loud"), "{stderr}");
    assert!(stderr.contains("record(s) stored"), "{stderr}");
}
