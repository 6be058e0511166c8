//! The recorded logs in `frame-logs/` (see its README) are what the proxy wrote when they
//! were recorded (frame-log version 1 so far), read today as backward-compatible input: each
//! validates against the current schema, agrees with its trailer and pairs every response;
//! the stateless one carries 2026-07-28 and costs `_meta` tokens. (A log of the current
//! version, with compaction: `fixtures/frame-logs/everything-compaction.jsonl`, checked in
//! `compaction.rs`.)

use std::path::Path;

use ctxopt::framelog::FrameKind;

use crate::support::log::{read_log, Log};

fn recorded(name: &str) -> Log {
    read_log(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("frame-logs")
            .join(name),
    )
}

#[test]
fn recorded_initialize_era_logs_are_valid_and_paired() {
    for name in [
        "ts-filesystem.jsonl",
        "ts-everything.jsonl",
        "py-session-memory.jsonl",
    ] {
        let log = recorded(name);
        log.assert_trailer_consistent();
        log.assert_paired();
        log.assert_protocol("2025-11-25");
        log.assert_token_counts();
    }
}

#[test]
fn recorded_stateless_log_is_2026_07_28_with_meta_tokens() {
    let log = recorded("py-client-stateless.jsonl");
    log.assert_trailer_consistent();
    log.assert_paired();
    log.assert_protocol("2026-07-28");
    log.assert_token_counts();
    assert!(log
        .frames
        .iter()
        .all(|f| f.method.as_deref() != Some("initialize")));
    assert!(log
        .frames
        .iter()
        .filter(|f| f.kind == FrameKind::Response)
        .all(|f| f.meta_tokens > 0));
}
