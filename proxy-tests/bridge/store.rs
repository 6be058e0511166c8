//! The store under several `ctxopt ingest` processes at once, a SIGKILL, and corruption.

use std::process::{Command, Stdio};
use std::time::Duration;

use ctxopt::store::Store;

use super::{ctxopt, write_log};
use crate::support::command::run_ok;

const PER_PROCESS: usize = 1000;

fn ingest(store: &std::path::Path, logs: &[&std::path::Path]) -> Command {
    let mut cmd = Command::new(ctxopt());
    cmd.arg("ingest")
        .arg("--store")
        .arg(store)
        .arg("--workspace")
        .arg(store.parent().unwrap());
    cmd.args(logs);
    cmd
}

/// The `N record(s) stored` figure of an ingest run.
fn stored(stderr: &[u8]) -> usize {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .find(|l| l.contains("record(s) stored"))
        .unwrap_or_else(|| panic!("no summary in {text}"));
    line.split_whitespace()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("bad summary {line}"))
}

#[test]
fn four_writers_at_once_store_every_record_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let logs: Vec<_> = (0..4)
        .map(|i| write_log(dir.path(), &format!("server{i}"), PER_PROCESS))
        .collect();
    // Each process writes its own log and its neighbour's: every record is written twice,
    // by two processes racing each other.
    let children: Vec<_> = (0..4)
        .map(|i| {
            ingest(&store, &[&logs[i], &logs[(i + 1) % 4]])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut total = 0;
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        total += stored(&out.stderr);
    }
    assert_eq!(total, 4 * PER_PROCESS, "inserts across processes");
    let store = Store::open_path(&store).unwrap();
    let workspace = dir.path().canonicalize().unwrap().display().to_string();
    assert_eq!(store.count(&workspace).unwrap(), (4 * PER_PROCESS) as u64);
    for log in &logs {
        let log = log.display().to_string();
        for k in 0..PER_PROCESS as u64 {
            assert!(
                store
                    .find_by_frame(&workspace, &log, 2 * k + 1, 0)
                    .unwrap()
                    .is_some(),
                "{log} seq {} missing",
                2 * k + 1
            );
        }
    }
    store.check_integrity().unwrap();
}

#[test]
fn a_writer_killed_mid_ingest_leaves_a_store_that_opens_and_completes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let calls = 5_000;
    let log = write_log(dir.path(), "big", calls);
    let workspace = dir.path().canonicalize().unwrap().display().to_string();
    let mut child = ingest(&path, &[&log])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let seen =
        crate::support::poll_until(Duration::from_secs(60), Duration::from_millis(5), || {
            let n = Store::open_path(&path)
                .and_then(|s| s.count(&workspace))
                .unwrap_or(0);
            (n > 0).then_some(n)
        })
        .expect("the writer stored nothing");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let store = Store::open_path(&path).unwrap();
    store.check_integrity().unwrap();
    let after_kill = store.count(&workspace).unwrap();
    assert!(
        (seen..calls as u64).contains(&after_kill),
        "killed mid-ingest: {seen} <= {after_kill} < {calls}"
    );
    drop(store);
    // The next run finds the store usable and completes it without duplicates.
    run_ok(&mut ingest(&path, &[&log]));
    let store = Store::open_path(&path).unwrap();
    assert_eq!(store.count(&workspace).unwrap(), calls as u64);
}

#[test]
fn a_corrupt_store_is_reported_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    std::fs::write(&path, b"this is not a database, just bytes ".repeat(200)).unwrap();
    let log = write_log(dir.path(), "s", 1);
    let out = ingest(&path, &[&log]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is corrupt"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
