//! `ctxopt replay` as a process: the log it serves is only read, bad logs are refused with
//! line and reason (exit 2), a redacted log says so, `--strict` sets the exit status; and
//! `ctxopt audit --diff`. The replay and verify against real peers are in
//! `interop::evidence`.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn recorded(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("frame-logs")
        .join(name)
}

/// Runs `ctxopt replay ARGS` with `input` on stdin.
fn replay(args: &[&std::ffi::OsStr], input: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .arg("replay")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start ctxopt replay");
    // A log it refuses ends the process before it reads stdin: a broken pipe
    // here is that refusal, which the caller asserts from the exit status.
    match child.stdin.take().unwrap().write_all(input.as_bytes()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other.unwrap(),
    }
    child.wait_with_output().unwrap()
}

const HANDSHAKE: &str = concat!(
    r#"{"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true},"sampling":{},"elicitation":{}},"clientInfo":{"name":"x","version":"1"}},"jsonrpc":"2.0","id":0}"#,
    "\n"
);

#[test]
fn the_replayed_log_is_only_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    std::fs::copy(recorded("ts-everything.jsonl"), &log).unwrap();
    std::fs::set_permissions(&log, std::fs::Permissions::from_mode(0o400)).unwrap();
    let before = (
        std::fs::read(&log).unwrap(),
        std::fs::metadata(&log).unwrap().modified().unwrap(),
    );
    let out = replay(&[log.as_os_str()], HANDSHAKE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.starts_with(r#"{"result":{"protocolVersion":"2025-11-25""#),
        "{stdout}"
    );
    let after = (
        std::fs::read(&log).unwrap(),
        std::fs::metadata(&log).unwrap().modified().unwrap(),
    );
    assert!(before == after, "the log changed");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "nothing written beside it"
    );
}

#[test]
fn bad_logs_are_refused_with_line_and_reason() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(recorded("ts-everything.jsonl")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let cases = [
        (
            "foreign.jsonl",
            "{\"type\":\"user\",\"message\":{}}\n".to_owned(),
            "line 1: not a frame log",
        ),
        (
            "corrupt.jsonl",
            format!(
                "{}\n{{\"type\":\"frame\",\"seq\"\n{}\n",
                lines[..5].join("\n"),
                lines[5..].join("\n")
            ),
            "line 6: not a frame-log record",
        ),
        (
            "cut.jsonl",
            format!("{}\n{}", lines[..9].join("\n"), &lines[9][..40]),
            "line 10: the log ends in a partial line",
        ),
    ];
    for (name, content, reason) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let out = replay(&[path.as_os_str()], HANDSHAKE);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(stderr.contains(reason), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: nothing served");
    }
}

#[test]
fn a_redacted_log_replays_its_placeholders_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("redacted.jsonl");
    let text = std::fs::read_to_string(recorded("ts-everything.jsonl")).unwrap();
    let placeholder = "[REDACTED:generic-api-key:7:0a1b2c3d]";
    let redacted: Vec<String> = text
        .lines()
        .map(|l| {
            if l.contains(r#""seq":1,"#) {
                l.replace("Reference Server\\\"", &format!("{placeholder}\\\""))
                    .replacen(r#""raw":"#, r#""redactions":1,"raw":"#, 1)
            } else {
                l.to_owned()
            }
        })
        .collect();
    assert!(
        redacted[2].contains(placeholder),
        "the test redacts the initialize answer"
    );
    std::fs::write(&log, redacted.join("\n") + "\n").unwrap();
    let out = replay(&[log.as_os_str()], HANDSHAKE);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("1 frames of this log had secrets replaced by placeholders"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(placeholder));
}

#[test]
fn strict_exits_1_when_the_client_did_not_follow_the_recording() {
    let log = recorded("ts-everything.jsonl");
    let lenient = replay(&[log.as_os_str()], HANDSHAKE);
    assert_eq!(lenient.status.code(), Some(0));
    let strict = replay(&["--strict".as_ref(), log.as_os_str()], HANDSHAKE);
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert_eq!(strict.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("recorded client messages never sent"),
        "{stderr}"
    );
}

#[test]
fn audit_diff_names_a_redefined_tool_and_exits_1_and_0_when_nothing_changed() {
    let dir = tempfile::tempdir().unwrap();
    let before = recorded("ts-everything.jsonl");
    let after = dir.path().join("after.jsonl");
    let text = std::fs::read_to_string(&before).unwrap();
    let changed = text.replacen(
        r#"Echoes back the input string\""#,
        r#"Echoes back the input string, and more\""#,
        1,
    );
    assert_ne!(changed, text);
    std::fs::write(&after, changed).unwrap();
    let audit = |b: &Path| {
        Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["audit", "--format", "json", "--diff"])
            .args([before.as_os_str(), b.as_os_str()])
            .output()
            .unwrap()
    };
    let out = audit(&after);
    assert_eq!(out.status.code(), Some(1));
    let diff: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(diff["redefined"][0]["name"], "echo");
    assert_eq!(
        diff["redefined"][0]["members"],
        serde_json::json!(["description"])
    );
    assert_eq!(
        diff["tokens_now"].as_u64().unwrap() - diff["tokens_then"].as_u64().unwrap(),
        3
    );
    let same = audit(&before);
    assert_eq!(same.status.code(), Some(0));
    let same: serde_json::Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(same["digest_then"], same["digest_now"]);
}

/// `ctxopt report --format json LOGS…`.
fn report(logs: &[&Path]) -> serde_json::Value {
    let out = crate::support::command::run_ok(
        Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["report", "--format", "json"])
            .args(logs),
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn report_pins_each_session_and_lists_catalog_changes_across_and_within_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let before = recorded("ts-everything.jsonl");
    let text = std::fs::read_to_string(&before).unwrap();
    let rewrite = |s: &str| {
        s.replacen(
            r#"Echoes back the input string\""#,
            r#"Echoes back the input string, and more\""#,
            1,
        )
    };
    // Another session of the same server whose echo description changed.
    let after = dir.path().join("after.jsonl");
    std::fs::write(&after, rewrite(&text)).unwrap();
    // One session that lists its tools again at the end, the second time changed.
    let lines: Vec<&str> = text.lines().collect();
    let relisted: Vec<String> = [lines[10], lines[12]]
        .iter()
        .zip([50, 51])
        .map(|(l, seq)| {
            let mut frame: serde_json::Value = serde_json::from_str(l).unwrap();
            frame["seq"] = seq.into();
            rewrite(&frame.to_string())
        })
        .collect();
    assert!(
        relisted[1].contains("and more"),
        "line 13 is the tools/list answer"
    );
    let within = dir.path().join("within.jsonl");
    let mut all: Vec<String> = lines[..lines.len() - 1]
        .iter()
        .map(|l| (*l).to_owned())
        .collect();
    all.extend(relisted);
    all.push(lines[lines.len() - 1].to_owned());
    std::fs::write(&within, all.join("\n") + "\n").unwrap();

    let r = report(&[&before, &after]);
    let sessions = r["sessions"].as_array().unwrap();
    assert_eq!(sessions[0]["ctxopt_version"], "0.1.0");
    assert_ne!(
        sessions[0]["catalog_digests"],
        sessions[1]["catalog_digests"]
    );
    let changes = r["catalog_changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1, "{changes:#?}");
    assert_eq!(changes[0]["log_then"], "ts-everything.jsonl");
    assert_eq!(changes[0]["diff"]["redefined"][0]["name"], "echo");
    assert_eq!(sessions[1]["changed_mid_run"], serde_json::json!([]));

    let r = report(&[&within]);
    let session = &r["sessions"][0];
    assert_eq!(session["changed_mid_run"], serde_json::json!(["catalog"]));
    assert_eq!(session["catalog_digests"].as_array().unwrap().len(), 2);
    assert_eq!(r["catalog_changes"][0]["log_now"], "within.jsonl");
    // The canary's other side: one session, one catalog, nothing changed.
    assert!(report(&[&before]).get("catalog_changes").is_none());
}

/// Item 4 of the evidence issue: a session in which the client's version or the
/// server's answers' revision changed mid-run is marked as such; the recorded session
/// unchanged is not (the canary).
#[test]
fn report_marks_a_session_whose_client_or_protocol_changed_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let original = recorded("py-client-stateless.jsonl");
    let text = std::fs::read_to_string(&original).unwrap();
    let r = report(&[&original]);
    assert_eq!(r["sessions"][0]["changed_mid_run"], serde_json::json!([]));
    assert_eq!(
        r["sessions"][0]["client"],
        serde_json::json!({"name": "ctxopt-interop-py", "version": "1.0.0"})
    );
    assert_eq!(
        r["sessions"][0]["protocols"],
        serde_json::json!(["2026-07-28"])
    );

    // Line 15 is a later request (tools/call), line 16 its answer: the client names another
    // version, the server answers under another revision.
    let lines: Vec<String> = text
        .lines()
        .enumerate()
        .map(|(i, l)| match i {
            14 => l.replacen(r#"\"version\":\"1.0.0\""#, r#"\"version\":\"2.0.0\""#, 1),
            15 => l.replacen(
                r#""protocol":"2026-07-28""#,
                r#""protocol":"2025-11-25""#,
                1,
            ),
            _ => l.to_owned(),
        })
        .collect();
    assert!(lines[14].contains("2.0.0") && lines[15].contains("2025-11-25"));
    let changed = dir.path().join("changed.jsonl");
    std::fs::write(&changed, lines.join("\n") + "\n").unwrap();
    let r = report(&[&changed]);
    assert_eq!(
        r["sessions"][0]["changed_mid_run"],
        serde_json::json!(["client", "protocol"]),
        "{:#}",
        r["sessions"][0]
    );
}

#[test]
fn the_proxy_flags_a_server_whose_catalog_changed_since_its_previous_session() {
    use crate::support::log::read_log;
    use crate::support::proxy::ProxyCmd;

    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let original = recorded("ts-everything.jsonl");
    let text = std::fs::read_to_string(&original).unwrap();
    let changed = dir.path().join("changed.jsonl");
    std::fs::write(
        &changed,
        text.replacen(
            r#"Echoes back the input string\""#,
            r#"Echoes back the input string, and more\""#,
            1,
        ),
    )
    .unwrap();
    // The client's side: initialize, initialized, tools/list, as recorded.
    let raw = |seq: usize| -> String {
        let frame: serde_json::Value =
            serde_json::from_str(text.lines().nth(seq + 1).unwrap()).unwrap();
        frame["raw"].as_str().unwrap().to_owned() + "\n"
    };
    let input = raw(0) + &raw(2) + &raw(9);
    // Each session: the proxy (remembering catalogs beside its store) in front of
    // `ctxopt replay` serving one of the two logs, under the same server name.
    let session = |log: &Path| {
        let run = ProxyCmd::server([
            env!("CARGO_BIN_EXE_ctxopt").as_ref(),
            "replay".as_ref(),
            log.as_os_str(),
        ])
        .option(&[
            "--name".as_ref(),
            "everything".as_ref(),
            "--store".as_ref(),
            store.as_os_str(),
            "--inject".as_ref(),
            "none".as_ref(),
        ])
        .run(input.as_bytes());
        assert!(
            String::from_utf8_lossy(&run.stdout).contains("\"tools\""),
            "{}",
            run.stderr
        );
        let errors = read_log(&run.log).trailer.errors;
        (run.stderr, errors)
    };
    let (stderr, errors) = session(&original);
    assert!(
        !stderr.contains("catalog changed") && errors.is_empty(),
        "{stderr} {errors:?}"
    );
    let (stderr, errors) = session(&original);
    assert!(
        !stderr.contains("catalog changed") && errors.is_empty(),
        "the same catalog again: {stderr} {errors:?}"
    );
    let (stderr, errors) = session(&changed);
    assert!(
        stderr.contains("everything since its previous session: tool catalog changed"),
        "{stderr}"
    );
    assert!(stderr.contains("redefined  echo (description;"), "{stderr}");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].starts_with("catalog: everything since its previous session"),
        "{errors:?}"
    );
    let remembered = dir
        .path()
        .join("catalogs/everything--mcp-servers_everything.json");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&remembered).unwrap().permissions().mode() & 0o777,
        0o600
    );
}
