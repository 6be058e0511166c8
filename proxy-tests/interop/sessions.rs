//! Real clients × real servers, each session run direct and through the proxy.
//!
//! For every pair: the client observes the same results through the proxy as direct; the log
//! validates against the schema, holds every message the client wrote and read (in order), pairs
//! every response with its request, and agrees with its own trailer.

use std::ffi::OsString;
use std::path::PathBuf;
use std::thread;

use ctxopt::framelog::{Direction, FrameKind};

use super::peers::{fixture_tree, Client, Peers, Server};
use super::session::{proxied, run_driver, DriverOutput};
use crate::support::log::{read_log, Log};

/// Set to keep each session's temporary directory (its log) for a look after a failure.
const KEEP_VAR: &str = "CTXOPT_INTEROP_KEEP";

/// One session run both ways.
struct Pair {
    direct: DriverOutput,
    proxied: DriverOutput,
    log: Log,
}

/// Runs `client` against `server` direct and through the proxy (concurrently), checks what
/// every pair must satisfy, and returns both runs and the log for scenario-specific checks.
fn run_pair(client: Client, server: Server) -> Option<Pair> {
    let peers = Peers::locate()?;
    let fixture = fixture_tree();
    let keep = std::env::var_os(KEEP_VAR).is_some();
    let tmp = tempfile::Builder::new()
        .disable_cleanup(keep)
        .tempdir()
        .expect("tempdir");
    if keep {
        eprintln!("{client:?} × {server:?}: keeping {}", tmp.path().display());
    }
    let log_path = tmp.path().join("session.jsonl");
    let server_cmd = peers.server_command(server, &fixture);

    let run = |target: Vec<OsString>, memory: PathBuf| {
        let command = peers.client_command(client, server, &fixture, &target);
        run_driver(&command, &[("MEMORY_FILE_PATH", memory)])
    };
    let (direct, proxied_out) = thread::scope(|s| {
        let direct = s.spawn(|| run(server_cmd.clone(), tmp.path().join("direct-memory.jsonl")));
        let proxied_out = s.spawn(|| {
            run(
                proxied(&server_cmd, &log_path),
                tmp.path().join("proxied-memory.jsonl"),
            )
        });
        (direct.join(), proxied_out.join())
    });
    let (direct, proxied_out) = (
        direct.unwrap_or_else(|e| std::panic::resume_unwind(e)),
        proxied_out.unwrap_or_else(|e| std::panic::resume_unwind(e)),
    );

    assert_same_session(&direct, &proxied_out, &format!("{client:?} × {server:?}"));
    let log = read_log(&log_path);
    let argv: Vec<String> = server_cmd
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    assert_eq!(log.header.server_argv, argv, "header.server_argv");
    assert_eq!(log.header.tokenizer, "o200k_base");
    assert_eq!(
        log.trailer.exit.code,
        Some(0),
        "server exit: {:?}",
        log.trailer.exit
    );
    log.assert_trailer_consistent();
    log.assert_matches_client_view(proxied_out.sent(), proxied_out.received());
    log.assert_paired();
    log.assert_protocol(proxied_out.protocol());
    log.assert_token_counts();
    Some(Pair {
        direct,
        proxied: proxied_out,
        log,
    })
}

/// Panics, showing the lines around the first difference, unless the two runs observed the same.
pub(super) fn assert_same_session(direct: &DriverOutput, proxied: &DriverOutput, what: &str) {
    let pretty = |o: &DriverOutput| serde_json::to_string_pretty(&o.comparable()).expect("json");
    let (d, p) = (pretty(direct), pretty(proxied));
    if d == p {
        return;
    }
    let (d, p): (Vec<&str>, Vec<&str>) = (d.lines().collect(), p.lines().collect());
    let first = d.iter().zip(&p).take_while(|(a, b)| a == b).count();
    let around =
        |lines: &[&str]| lines[first.saturating_sub(8)..(first + 8).min(lines.len())].join("\n");
    panic!(
        "{what}: the session through the proxy differs from the direct one at line {first}\n\
         --- direct ---\n{}\n--- proxied ---\n{}",
        around(&d),
        around(&p)
    );
}

/// The methods of `log`'s frames of `kind` in direction `dir`, in order.
pub(crate) fn methods(log: &Log, dir: Direction, kind: FrameKind) -> Vec<&str> {
    log.dir(dir)
        .into_iter()
        .filter(|f| f.kind == kind)
        .filter_map(|f| f.method.as_deref())
        .collect()
}

/// Server→client requests and notifications from server-everything were relayed and logged,
/// and the client's answers to them were paired.
fn assert_everything_traffic(pair: &Pair) {
    let server_requests = methods(&pair.log, Direction::S2c, FrameKind::Request);
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        assert!(
            server_requests.contains(&method),
            "no {method} in {server_requests:?}"
        );
    }
    let answered = methods(&pair.log, Direction::C2s, FrameKind::Response);
    assert!(answered.contains(&"sampling/createMessage"), "{answered:?}");
    let notifications = methods(&pair.log, Direction::S2c, FrameKind::Notification);
    for method in [
        "notifications/progress",
        "notifications/message",
        "notifications/tools/list_changed",
    ] {
        assert!(
            notifications.contains(&method),
            "no {method} in {notifications:?}"
        );
    }
}

/// An `initialize`-era session: the log carries the negotiated revision.
fn assert_initialize_era(pair: &Pair) {
    let initialize = methods(&pair.log, Direction::C2s, FrameKind::Request);
    assert!(initialize.contains(&"initialize"), "{initialize:?}");
    assert_eq!(pair.proxied.protocol(), "2025-11-25");
    assert_eq!(pair.direct.protocol(), "2025-11-25");
}

#[test]
fn ts_client_filesystem() {
    let Some(pair) = run_pair(Client::Ts, Server::Filesystem) else {
        return;
    };
    assert_initialize_era(&pair);
    let server_requests = methods(&pair.log, Direction::S2c, FrameKind::Request);
    assert_eq!(server_requests, ["roots/list"]);
    // The session is fully sequential, so its frames and their classification are stable.
    let frames: Vec<String> = pair
        .log
        .frames
        .iter()
        .map(|f| {
            format!(
                "{} {:?} id={} {} {} {}",
                f.dir.as_str(),
                f.kind,
                f.id.as_deref().unwrap_or("-"),
                f.method.as_deref().unwrap_or("-"),
                f.tool.as_deref().unwrap_or("-"),
                f.protocol.as_deref().unwrap_or("-"),
            )
        })
        .collect();
    insta::assert_json_snapshot!(frames);
}

#[test]
fn ts_client_everything() {
    let Some(pair) = run_pair(Client::Ts, Server::Everything) else {
        return;
    };
    assert_initialize_era(&pair);
    assert_everything_traffic(&pair);
    assert_pinned(&pair, "ctxopt-interop-ts", "1.0.0");
}

/// The trailer pins both peers as the client saw them (`client_name` and `client_version`
/// are what the driver declares), the revision the client uses, ctxopt's version and the
/// digest of the catalog the server listed last.
fn assert_pinned(pair: &Pair, client_name: &str, client_version: &str) {
    let pins = pair
        .log
        .trailer
        .pins
        .as_ref()
        .expect("the trailer has pins");
    let client = pins.client.as_ref().expect("client pinned");
    assert_eq!(
        (client.name.as_str(), client.version.as_deref()),
        (client_name, Some(client_version))
    );
    let seen = &pair.proxied.json["server"];
    let server = pins.server.as_ref().expect("server pinned");
    assert_eq!(Some(server.name.as_str()), seen["name"].as_str());
    assert!(server.version.is_some(), "{server:?}");
    assert_eq!(server.version.as_deref(), seen["version"].as_str());
    assert!(pins.protocols.iter().any(|p| p == pair.proxied.protocol()));
    assert_eq!(pins.ctxopt_version, pair.log.header.proxy_version);
    let last_list = pair
        .log
        .dir(Direction::S2c)
        .into_iter()
        .rfind(|f| f.kind == FrameKind::Response && f.method.as_deref() == Some("tools/list"))
        .and_then(|f| f.server_raw.as_deref().or(f.raw.as_deref()))
        .map(|raw| serde_json::from_str::<serde_json::Value>(raw).expect("json"))
        .expect("a tools/list answer");
    let tools = last_list["result"]["tools"].as_array().expect("tools");
    assert_eq!(
        pins.catalog_digests.last(),
        Some(&ctxopt::evidence::catalog::digest(tools))
    );
}

#[test]
fn ts_client_memory() {
    let Some(pair) = run_pair(Client::Ts, Server::Memory) else {
        return;
    };
    assert_initialize_era(&pair);
    let tools: Vec<&str> = pair
        .log
        .dir(Direction::S2c)
        .into_iter()
        .filter_map(|f| f.tool.as_deref())
        .collect();
    assert!(tools.contains(&"create_entities"), "{tools:?}");
}

#[test]
fn py_session_filesystem() {
    let Some(pair) = run_pair(Client::PySession, Server::Filesystem) else {
        return;
    };
    assert_initialize_era(&pair);
}

#[test]
fn py_session_everything() {
    let Some(pair) = run_pair(Client::PySession, Server::Everything) else {
        return;
    };
    assert_initialize_era(&pair);
    assert_everything_traffic(&pair);
}

#[test]
fn py_session_memory() {
    let Some(pair) = run_pair(Client::PySession, Server::Memory) else {
        return;
    };
    assert_initialize_era(&pair);
}

#[test]
fn py_session_python_server_negotiates_initialize() {
    let Some(pair) = run_pair(Client::PySession, Server::PythonSdk) else {
        return;
    };
    assert_initialize_era(&pair);
}

/// The high-level `Client` probes `server/discover`; the TypeScript servers answer with an
/// error, and it falls back to `initialize`. Both exchanges are in the log.
fn assert_discover_then_initialize(pair: &Pair) {
    let requests = methods(&pair.log, Direction::C2s, FrameKind::Request);
    assert_eq!(requests.first(), Some(&"server/discover"), "{requests:?}");
    assert!(requests.contains(&"initialize"), "{requests:?}");
    let refused = pair
        .log
        .dir(Direction::S2c)
        .into_iter()
        .find(|f| f.method.as_deref() == Some("server/discover"))
        .expect("the probe's answer is logged");
    assert_eq!(refused.kind, FrameKind::Error);
    assert_initialize_era(pair);
}

#[test]
fn py_client_filesystem() {
    let Some(pair) = run_pair(Client::PyHighLevel, Server::Filesystem) else {
        return;
    };
    assert_discover_then_initialize(&pair);
}

#[test]
fn py_client_everything() {
    let Some(pair) = run_pair(Client::PyHighLevel, Server::Everything) else {
        return;
    };
    assert_discover_then_initialize(&pair);
    assert_everything_traffic(&pair);
}

#[test]
fn py_client_memory() {
    let Some(pair) = run_pair(Client::PyHighLevel, Server::Memory) else {
        return;
    };
    assert_discover_then_initialize(&pair);
}

/// Canary for `protocol` and `meta_tokens`: against the Python SDK's server the high-level
/// client runs stateless 2026-07-28 (no `initialize`), every request and response is logged
/// with that revision, and the server-identity `_meta` (with an inline icon) costs tokens.
#[test]
fn py_client_python_server_is_stateless_2026_07_28() {
    let Some(pair) = run_pair(Client::PyHighLevel, Server::PythonSdk) else {
        return;
    };
    assert_eq!(pair.proxied.protocol(), "2026-07-28");
    let requests = methods(&pair.log, Direction::C2s, FrameKind::Request);
    assert!(!requests.contains(&"initialize"), "{requests:?}");
    assert_eq!(requests.first(), Some(&"server/discover"));
    for frame in pair
        .log
        .frames
        .iter()
        .filter(|f| f.kind != FrameKind::Notification)
    {
        assert_eq!(
            frame.protocol.as_deref(),
            Some("2026-07-28"),
            "frame {}",
            frame.seq
        );
    }
    let with_meta: Vec<u64> = pair
        .log
        .dir(Direction::S2c)
        .into_iter()
        .filter(|f| f.kind == FrameKind::Response)
        .map(|f| f.meta_tokens)
        .collect();
    assert!(
        with_meta.iter().all(|&t| t > 100),
        "each result carries the server-identity _meta with an icon: {with_meta:?}"
    );
}
