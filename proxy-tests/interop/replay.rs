//! A real session recorded through the proxy and served back by `ctxopt replay` to the same
//! real client: the client observes exactly what it observed from the live server.

use std::ffi::OsString;

use super::peers::{fixture_tree, Client, Peers, Server};
use super::session::{proxied, run_driver};
use super::sessions::assert_same_session;

/// `ctxopt replay --strict LOG`.
fn replay_command(log: &std::path::Path) -> Vec<OsString> {
    vec![
        env!("CARGO_BIN_EXE_ctxopt").into(),
        "replay".into(),
        "--strict".into(),
        log.into(),
    ]
}

#[test]
fn ts_client_everything_replayed_from_its_own_log_sees_identical_results() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let fixture = fixture_tree();
    let tmp = tempfile::tempdir().expect("tempdir");
    let log = tmp.path().join("session.jsonl");
    let server = peers.server_command(Server::Everything, &fixture);
    let client = |target: &[OsString]| {
        peers.client_command(Client::Ts, Server::Everything, &fixture, target)
    };
    let live = run_driver(&client(&proxied(&server, &log)), &[]);
    let replayed = run_driver(&client(&replay_command(&log)), &[]);
    assert_same_session(&live, &replayed, "ts × everything, live vs replayed");
    // The canary: the transcript holds real results (a tool's answer, a sampling round trip).
    let transcript = live.json["transcript"].to_string();
    assert!(
        transcript.contains("Echo: hello through the tap"),
        "{transcript}"
    );
    assert!(
        transcript.contains("a canned sampling answer"),
        "{transcript}"
    );
}
