//! The exit codes of both binaries, one test per code (docs/exit-codes.md). The proxy's
//! pass-through codes (the server's own, 128 + N for signal N) and 126/127 are tested where
//! the relay is: `relay_faults::the_servers_exit_code_becomes_the_proxys`,
//! `relay_faults::a_server_killed_by_signal_n_makes_the_proxy_exit_128_plus_n` and
//! `relay_faults::a_missing_command_exits_127_and_a_non_executable_one_126`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(rel)
}

fn proxy(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxopt-proxy"))
        .args(args)
        .output()
        .unwrap()
}

fn ctxopt(args: &[&std::ffi::OsStr]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .args(args)
        .output()
        .unwrap()
}

fn code_and_stderr(out: &Output) -> (Option<i32>, String) {
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn proxy_usage_errors_exit_125() {
    for args in [
        &["--tokenizer", "no-such-tokenizer", "--", "true"][..],
        &["--no-log"][..],
        &["--grace-period", "100000", "--", "true"][..],
        &["--log", "x.jsonl", "--no-log", "--", "true"][..],
        // An unknown option before `--` is a usage error, not the server's command.
        &["--no-such-option"][..],
        &["--no-log", "--no-such-option", "--", "true"][..],
    ] {
        let (code, stderr) = code_and_stderr(&proxy(args));
        assert_eq!(code, Some(125), "{args:?}: {stderr}");
        assert!(stderr.contains("error:"), "{args:?}: {stderr}");
    }
}

#[test]
fn arguments_after_the_command_or_after_dashes_reach_the_server() {
    // The script exits 7 only when its first argument is `--weird-server-arg`.
    let script = r#"test "$1" = --weird-server-arg && exit 7; exit 1"#;
    for args in [
        &[
            "--no-log",
            "--",
            "sh",
            "-c",
            script,
            "sh",
            "--weird-server-arg",
        ][..],
        &["--no-log", "sh", "-c", script, "sh", "--weird-server-arg"][..],
    ] {
        let (code, stderr) = code_and_stderr(&proxy(args));
        assert_eq!(code, Some(7), "{args:?}: {stderr}");
    }
    // After `--`, even a first word that looks like an option is the command.
    let (code, stderr) = code_and_stderr(&proxy(&["--no-log", "--", "--weird-server-arg"]));
    assert_eq!(code, Some(127), "spawned, not found: {stderr}");
}

#[test]
fn proxy_help_and_version_exit_0() {
    for flag in ["--help", "--version"] {
        let out = proxy(&[flag]);
        assert_eq!(out.status.code(), Some(0), "{flag}");
        assert!(!out.stdout.is_empty(), "{flag}");
    }
}

#[test]
fn a_workspace_the_proxy_cannot_use_exits_125_and_starts_no_server() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("server-ran");
    let missing = dir.path().join("no-such-workspace");
    let script = format!("touch {}", marker.display());
    let (code, stderr) = code_and_stderr(&proxy(&[
        "--no-log",
        "--store",
        ":memory:",
        "--workspace",
        missing.to_str().unwrap(),
        "--",
        "sh",
        "-c",
        &script,
    ]));
    assert_eq!(code, Some(125), "{stderr}");
    assert!(stderr.contains("ctxopt-proxy: workspace:"), "{stderr}");
    assert!(!marker.exists(), "the server was started");
}

#[test]
fn a_server_exiting_125_is_passed_through_and_its_trailer_tells_it_apart() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("log.jsonl");
    let (code, stderr) = code_and_stderr(&proxy(&[
        "--log",
        log.to_str().unwrap(),
        "--store",
        ":memory:",
        "--",
        "sh",
        "-c",
        "exit 125",
    ]));
    assert_eq!(code, Some(125), "{stderr}");
    let text = std::fs::read_to_string(&log).unwrap();
    let trailer: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert_eq!(trailer["exit"]["code"], 125, "{text}");
}

#[test]
fn ctxopt_exits_0_on_success() {
    let log = fixture("frame-logs/gap-trial.jsonl");
    let out = ctxopt(&["report".as_ref(), log.as_os_str()]);
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn ctxopt_exits_1_when_the_result_is_a_finding() {
    let log = fixture("frame-logs/gap-trial.jsonl");
    let client = fixture("gap/gemini-gap3.json");
    let out = ctxopt(&[
        "gap".as_ref(),
        "--log".as_ref(),
        log.as_os_str(),
        "--client".as_ref(),
        client.as_os_str(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!out.stdout.is_empty());
}

#[test]
fn ctxopt_exits_2_on_bad_input_and_usage_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.jsonl");
    let (code, stderr) = code_and_stderr(&ctxopt(&["report".as_ref(), missing.as_os_str()]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("ctxopt: "), "{stderr}");
    assert!(stderr.contains("missing.jsonl"), "{stderr}");
    let (code, stderr) = code_and_stderr(&ctxopt(&["report".as_ref(), "--no-such-flag".as_ref()]));
    assert_eq!(code, Some(2), "{stderr}");
    // A JSON file that is not a records file (a package manifest) is said so, not built.
    let manifest = dir.path().join("package.json");
    std::fs::write(&manifest, r#"{"name": "left-pad", "version": "1.3.0"}"#).unwrap();
    let out = ctxopt(&["build".as_ref(), "--records".as_ref(), manifest.as_os_str()]);
    let (code, stderr) = code_and_stderr(&out);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(out.stdout.is_empty());
    assert!(
        stderr.contains("package.json: malformed records: (top level): not a records file"),
        "{stderr}"
    );
}

/// `ctxopt auth login` against a server that asks for no authorization (it answers 404 to
/// everything: no 401 challenge, no protected-resource metadata) stores nothing and exits 2,
/// naming the well-known URLs it tried.
#[test]
fn an_auth_login_that_stores_no_token_exits_2() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            std::io::Read::read_exact(&mut reader, &mut body).ok();
            let _ = (&stream).write_all(
                b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            );
        }
    });
    let state = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}/mcp");
    let out = Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .args(["auth", "login", &url, "--no-browser"])
        .env("XDG_STATE_HOME", state.path())
        .output()
        .unwrap();
    let (code, stderr) = code_and_stderr(&out);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "publishes no protected-resource metadata (RFC 9728): it did not answer 401 with a Bearer challenge naming it, and none is at http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp, http://127.0.0.1:{port}/.well-known/oauth-protected-resource"
        )),
        "{stderr}"
    );
    assert!(!state.path().join("ctxopt/auth").exists());
}
