//! Secrets in what the proxy writes to disk: a tool result holding an AWS key and a GitHub
//! token reaches the client byte for byte, and neither the frame log nor the store keeps
//! them (issue 16, item 3). The secrets are assembled at run time so that the repository
//! holds no live-looking credential.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use ctxopt::framelog::Direction;
use ctxopt::store::{Filter, Store};
use serde_json::json;

use crate::support::log::read_log;
use crate::support::proxy::{ProxyCmd, Run};

pub(crate) fn aws_key() -> String {
    format!("AK{}{}", "IA", "Q3EGHVTW7LZ5NX2M")
}

pub(crate) fn github_token() -> String {
    format!("gh{}_{}", "p", "k3J9vQ2mXw8LrT5yZb1NcF7hD4sG6aP0eUiO")
}

/// A proxied session whose one tool call returns `~/.aws/credentials` and a `.netrc`-style
/// token, with the store in a temp dir (`extra`: more proxy options).
fn session(dir: &Path, extra: &[&str]) -> Run {
    let file = format!(
        "[default]\naws_access_key_id = {}\nregion = eu-west-1\n# github: {}\n",
        aws_key(),
        github_token()
    );
    let result = json!({"content": [{"type": "text", "text": file}]});
    let steps = [
        format!("method-result:tools/call:{result}"),
        "respond".to_string(),
    ];
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "read_file", "arguments": {"path": "~/.aws/credentials"}}})
        .to_string(),
        String::new(),
    ]
    .join("\n");
    let store = dir.join("store.sqlite3");
    let mut options = vec![
        "--inject",
        "none",
        "--store",
        store.to_str().unwrap(),
        "--workspace",
        dir.to_str().unwrap(),
    ];
    options.extend(extra);
    let run = ProxyCmd::fixture(&steps)
        .option(&options)
        .run(input.as_bytes());
    assert!(run.status.success(), "{}", run.stderr);
    run
}

/// Every byte the store left on disk (the database and its write-ahead log).
fn store_bytes(dir: &Path) -> Vec<u8> {
    ["store.sqlite3", "store.sqlite3-wal"]
        .iter()
        .filter_map(|name| std::fs::read(dir.join(name)).ok())
        .flatten()
        .collect()
}

fn contains(haystack: &[u8], needle: &str) -> bool {
    memchr::memmem::find(haystack, needle.as_bytes()).is_some()
}

#[test]
fn secrets_reach_the_client_but_neither_the_log_nor_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let run = session(dir.path(), &[]);
    let secrets = [aws_key(), github_token()];
    for secret in &secrets {
        assert!(contains(&run.stdout, secret), "the client lost {secret}");
    }

    let log_bytes = std::fs::read(&run.log).unwrap();
    for secret in &secrets {
        assert!(!contains(&log_bytes, secret), "the log holds {secret}");
    }
    assert!(contains(&log_bytes, "[REDACTED:aws-access-key-id:20:"));
    assert!(contains(&log_bytes, "[REDACTED:github-token:40:"));
    let log = read_log(&run.log);
    let response = log.dir(Direction::S2c)[0];
    assert_eq!(response.redactions, Some(2));
    // The figures are the wire's: the frame as the client received it.
    assert_eq!(response.bytes, run.stdout.len() as u64);

    let store = store_bytes(dir.path());
    assert!(!store.is_empty());
    for secret in &secrets {
        assert!(!contains(&store, secret), "the store holds {secret}");
    }
    let workspace = dir.path().canonicalize().unwrap().display().to_string();
    let records = Store::open_path(&dir.path().join("store.sqlite3"))
        .unwrap()
        .load(&Filter::workspace(&workspace))
        .unwrap();
    assert!(!records.is_empty());
    let text: String = records.iter().map(|r| r.record.search_text()).collect();
    assert!(text.contains("[REDACTED:github-token:40:"), "{text}");

    let key = dir.path().join("redact.key");
    let mode = std::fs::metadata(&key).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the key file beside the store");
}

#[test]
fn no_redact_keeps_raw_copies_with_a_warning_and_the_same_counts() {
    let redacted_dir = tempfile::tempdir().unwrap();
    let redacted = session(redacted_dir.path(), &[]);
    let raw_dir = tempfile::tempdir().unwrap();
    let raw = session(raw_dir.path(), &["--no-redact"]);
    assert!(raw.stderr.contains("--no-redact"), "{}", raw.stderr);
    assert!(
        !redacted.stderr.contains("--no-redact"),
        "{}",
        redacted.stderr
    );
    assert_eq!(
        raw.stdout, redacted.stdout,
        "the wire is the same either way"
    );

    let log_bytes = std::fs::read(&raw.log).unwrap();
    assert!(contains(&log_bytes, &github_token()));
    assert!(contains(&store_bytes(raw_dir.path()), &github_token()));
    let (raw_log, redacted_log) = (read_log(&raw.log), read_log(&redacted.log));
    let counts = |log: &crate::support::log::Log| -> Vec<(u64, u64, u64)> {
        log.frames
            .iter()
            .map(|f| (f.bytes, f.tokens, f.meta_tokens))
            .collect()
    };
    assert_eq!(
        counts(&raw_log),
        counts(&redacted_log),
        "counts before redaction"
    );
    assert!(raw_log.frames.iter().all(|f| f.redactions.is_none()));
}
