//! Remote servers over Streamable HTTP and the legacy HTTP+SSE transport: a real server started
//! in its HTTP mode, the TypeScript SDK client talking HTTP to it directly and stdio to
//! `ctxopt-proxy --url` in front of it, at the same time. Both sessions observe the same; the log validates, pairs, counts and agrees
//! with the client's view like a stdio log, carries the HTTP facts of every server frame, and
//! holds no header secret.

use std::ffi::OsString;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread;
use std::time::Duration;

use ctxopt::framelog::{Direction, FrameKind, HttpVia};

use super::peers::{fixture_tree, Client, Peers, Server};
use super::session::{proxy_binary, run_driver, DriverOutput};
use super::sessions::{assert_same_session, methods};
use crate::support::log::{read_log, Log};
use crate::support::poll_until;
use crate::support::proxy::ProxyCmd;

/// The variable the proxy's `--header` takes its token from, and the token.
pub(super) const TOKEN_VAR: &str = "CTXOPT_TEST_REMOTE_TOKEN";
pub(super) const TOKEN: &str = "remote-token-that-must-never-reach-the-log";

/// A server process serving Streamable HTTP, stopped when dropped.
pub(crate) struct Served {
    child: Child,
    /// Its MCP endpoint.
    pub(crate) url: String,
}

impl Served {
    /// Starts `command` (which serves on `port`, its endpoint `/mcp`) and waits until the
    /// port takes connections.
    pub(crate) fn start(command: std::process::Command, port: u16) -> Served {
        Served::start_at(command, port, "/mcp")
    }

    /// The peers' `server` in its HTTP mode (answering in JSON when `json`) on a free port,
    /// started.
    pub(crate) fn peer(peers: &Peers, server: Server, json: bool) -> Served {
        let port = free_port();
        Served::start(peers.http_server_command(server, port, json), port)
    }

    /// [`Served::start`] for a server whose endpoint is `path`.
    pub(crate) fn start_at(mut command: std::process::Command, port: u16, path: &str) -> Served {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {command:?}: {e}"));
        let mut served = Served {
            child,
            url: format!("http://127.0.0.1:{port}{path}"),
        };
        let up = poll_until(Duration::from_secs(120), Duration::from_millis(20), || {
            if let Ok(Some(status)) = served.child.try_wait() {
                panic!("{command:?} exited before it listened: {status}");
            }
            TcpStream::connect(("127.0.0.1", port)).ok()
        });
        assert!(up.is_some(), "{command:?} never listened on port {port}");
        served
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// A port on 127.0.0.1 that was free a moment ago (bound, then released).
pub(crate) fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// `ctxopt-proxy --url URL --header 'Authorization: Bearer ${TOKEN_VAR}'`, the relay alone.
pub(crate) fn proxied_url(url: &str, log: &Path) -> Vec<OsString> {
    let mut command: Vec<OsString> = vec![proxy_binary().into(), "--log".into(), log.into()];
    for arg in ["--inject", "none", "--store", ":memory:", "--url", url] {
        command.push(arg.into());
    }
    command.push("--header".into());
    command.push(format!("Authorization: Bearer ${{{TOKEN_VAR}}}").into());
    command
}

/// Runs `client`'s `server` scenario against the served endpoint directly and through the
/// proxy (concurrently), checks what every pair must satisfy and returns the log. `json`: the
/// server answers with JSON bodies, else with event streams.
fn run_remote_pair(client: Client, server: Server, json: bool) -> Option<Log> {
    let peers = Peers::locate()?;
    let served = Served::peer(&peers, server, json);
    let direct = peers.client_over_http(client, server, &fixture_tree(), &served.url);
    let proxied =
        |target: &[OsString]| peers.client_command(client, server, &fixture_tree(), target);
    let what = format!("{client:?} × {server:?} over HTTP");
    Some(run_pair(&served, &direct, proxied, json, &what).1)
}

/// Runs the driver `direct` against `served` and, at the same time, the driver that
/// `proxied` makes for a target command (the proxy in front of `served`); checks what every
/// pair must satisfy and returns the proxied session and its log.
fn run_pair(
    served: &Served,
    direct_cmd: &[OsString],
    proxied: impl Fn(&[OsString]) -> Vec<OsString>,
    json: bool,
    what: &str,
) -> (DriverOutput, Log) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let proxied_cmd = proxied(&proxied_url(&served.url, &log_path));
    let env = [(TOKEN_VAR, PathBuf::from(TOKEN))];
    let (direct, proxied) = thread::scope(|s| {
        let direct = s.spawn(|| run_driver(direct_cmd, &[]));
        let proxied = s.spawn(|| run_driver(&proxied_cmd, &env));
        (direct.join(), proxied.join())
    });
    let direct = direct.unwrap_or_else(|e| std::panic::resume_unwind(e));
    let proxied = proxied.unwrap_or_else(|e| std::panic::resume_unwind(e));
    assert_same_session(&direct, &proxied, what);
    let log = assert_remote_log(&log_path, served, &proxied, json);
    (proxied, log)
}

/// What the log of a session through `ctxopt-proxy --url` to `served` must satisfy: no header
/// secret, the URL and the transport in its header, a clean exit, and a record that pairs,
/// counts and agrees with the client's view (`proxied`), with the HTTP facts of every server
/// frame. Returns the log.
pub(super) fn assert_remote_log(
    log_path: &Path,
    served: &Served,
    proxied: &DriverOutput,
    json: bool,
) -> Log {
    let text = std::fs::read_to_string(log_path).expect("the log");
    assert!(!text.contains(TOKEN), "the header's token reached the log");
    let log = read_log(log_path);
    assert_eq!(log.header.transport.as_deref(), Some("streamable-http"));
    assert_eq!(log.header.server_argv, std::slice::from_ref(&served.url));
    assert_eq!(log.header.server_pid, None);
    assert_eq!(log.trailer.exit.code, Some(0), "{:?}", log.trailer.exit);
    log.assert_trailer_consistent();
    log.assert_matches_client_view(proxied.sent(), proxied.received());
    log.assert_paired();
    log.assert_protocol(proxied.protocol());
    log.assert_token_counts();
    assert_http_facts(&log, json);
    log
}

/// Every server frame came over HTTP: by a POST's answer (JSON only when `json`) or the GET
/// stream, with a status and the one session (or none at all); client frames carry no HTTP
/// facts.
fn assert_http_facts(log: &Log, json: bool) {
    let session = log
        .dir(Direction::S2c)
        .first()
        .and_then(|f| f.http.as_ref())
        .map(|h| h.session_id.clone())
        .expect("the first server frame came over HTTP");
    // A session id exactly when the session began with `initialize`.
    let initialized = log
        .frames
        .iter()
        .any(|f| f.method.as_deref() == Some("initialize"));
    assert_eq!(session.is_some(), initialized, "{session:?}");
    for frame in &log.frames {
        let Some(http) = &frame.http else {
            assert_eq!(
                frame.dir,
                Direction::C2s,
                "server frame {} without http",
                frame.seq
            );
            continue;
        };
        assert_eq!(frame.dir, Direction::S2c, "frame {}", frame.seq);
        assert!(matches!(http.via, HttpVia::Post | HttpVia::Get), "{http:?}");
        assert_eq!(http.status, Some(200), "frame {}: {http:?}", frame.seq);
        assert_eq!(http.session_id, session, "frame {}", frame.seq);
        assert!(http.fault.is_none(), "{http:?}");
        // The time to the first byte of a POST's answer, apart from the time to its end.
        match http.via {
            HttpVia::Post => {
                let ttfb = http.ttfb_us.unwrap_or_else(|| {
                    panic!("frame {}: no time to the first byte: {http:?}", frame.seq)
                });
                if let Some(latency) = frame.latency_us {
                    assert!(ttfb <= latency, "frame {}: {ttfb} > {latency}", frame.seq);
                }
            }
            _ => assert_eq!(http.ttfb_us, None, "{http:?}"),
        }
        let content_type = http.content_type.as_deref();
        if json {
            assert_eq!(content_type, Some("application/json"), "{http:?}");
        } else {
            let either = ["application/json", "text/event-stream"];
            assert!(
                content_type.is_some_and(|t| either.contains(&t)),
                "{http:?}"
            );
        }
    }
}

/// server-everything answers over event streams (with event ids) and asks the client for
/// roots, sampling and elicitation: all of it crosses the proxy, the client's answers POSTed.
#[test]
fn ts_client_everything_over_streamable_http() {
    let Some(log) = run_remote_pair(Client::Ts, Server::Everything, false) else {
        return;
    };
    let server_requests = methods(&log, Direction::S2c, FrameKind::Request);
    for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
        assert!(
            server_requests.contains(&method),
            "no {method} in {server_requests:?}"
        );
    }
    let answered = methods(&log, Direction::C2s, FrameKind::Response);
    assert!(answered.contains(&"sampling/createMessage"), "{answered:?}");
    let notifications = methods(&log, Direction::S2c, FrameKind::Notification);
    assert!(
        notifications.contains(&"notifications/progress"),
        "{notifications:?}"
    );
    // The server asks for roots of its own accord, on the standalone GET stream the proxy
    // opened after `initialized`; sampling comes on the stream of the call that needs it.
    let via = |method: &str| {
        log.dir(Direction::S2c)
            .into_iter()
            .find(|f| f.kind == FrameKind::Request && f.method.as_deref() == Some(method))
            .and_then(|f| f.http.as_ref())
            .map(|h| h.via)
    };
    assert_eq!(via("roots/list"), Some(HttpVia::Get));
    assert_eq!(via("sampling/createMessage"), Some(HttpVia::Post));
    let with_ids = log
        .dir(Direction::S2c)
        .into_iter()
        .filter(|f| f.http.as_ref().is_some_and(|h| h.event_id.is_some()))
        .count();
    assert!(with_ids > 0, "server-everything gives event ids");
}

/// server-everything in its legacy HTTP+SSE mode (2024-11-05): the TypeScript SDK client's SSE
/// transport directly, and through the proxy both with `--transport sse` and with
/// auto-detection (the server refuses the POST to its stream's URL with 404, and the proxy
/// falls back to the GET stream), the three sessions at once and the same.
#[test]
fn ts_client_everything_over_legacy_sse_chosen_and_detected() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let port = free_port();
    let served = Served::start_at(peers.sse_server_command(port), port, "/sse");
    let tmp = tempfile::tempdir().expect("tempdir");
    let fixture = fixture_tree();
    let direct_cmd = peers.client_over_sse(Client::Ts, Server::Everything, &fixture, &served.url);
    let logs = [tmp.path().join("sse.jsonl"), tmp.path().join("auto.jsonl")];
    let mut chosen = proxied_url(&served.url, &logs[0]);
    chosen.extend(["--transport".into(), "sse".into()]);
    let detected = proxied_url(&served.url, &logs[1]);
    let proxied_cmds = [chosen, detected]
        .map(|target| peers.client_command(Client::Ts, Server::Everything, &fixture, &target));
    let env = [(TOKEN_VAR, PathBuf::from(TOKEN))];
    let (direct, proxied) = thread::scope(|s| {
        let direct = s.spawn(|| run_driver(&direct_cmd, &[]));
        let proxied = proxied_cmds
            .each_ref()
            .map(|cmd| s.spawn(|| run_driver(cmd, &env)));
        let join = |h: thread::ScopedJoinHandle<'_, _>| {
            h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))
        };
        (join(direct), proxied.map(join))
    });
    for (proxied, log_path) in proxied.iter().zip(&logs) {
        let label = format!("everything over legacy SSE, {}", log_path.display());
        assert_same_session(&direct, proxied, &label);
        let text = std::fs::read_to_string(log_path).expect("the log");
        assert!(!text.contains(TOKEN), "the header's token reached the log");
        let log = read_log(log_path);
        assert_eq!(log.header.transport.as_deref(), Some("sse"), "{label}");
        assert_eq!(log.header.server_argv, std::slice::from_ref(&served.url));
        assert_eq!(log.trailer.exit.code, Some(0), "{:?}", log.trailer.exit);
        assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
        log.assert_trailer_consistent();
        log.assert_matches_client_view(proxied.sent(), proxied.received());
        log.assert_paired();
        log.assert_protocol(proxied.protocol());
        log.assert_token_counts();
        // Every server message came on the one GET stream, in no session of Streamable HTTP.
        for frame in log.dir(Direction::S2c) {
            let http = frame.http.as_ref().expect("http facts");
            assert_eq!(http.via, HttpVia::Get, "frame {}", frame.seq);
            assert_eq!(http.status, Some(200), "frame {}", frame.seq);
            assert_eq!(http.content_type.as_deref(), Some("text/event-stream"));
            assert_eq!(http.session_id, None, "frame {}", frame.seq);
        }
        let server_requests = methods(&log, Direction::S2c, FrameKind::Request);
        for method in ["roots/list", "sampling/createMessage", "elicitation/create"] {
            assert!(server_requests.contains(&method), "{label}: no {method}");
        }
    }
}

/// The Python SDK's server, answering with event streams: count_words's progress comes on
/// its call's stream, before the result.
#[test]
fn ts_client_python_server_over_streamable_http_sse() {
    let Some(log) = run_remote_pair(Client::Ts, Server::PythonSdk, false) else {
        return;
    };
    let server = methods(&log, Direction::S2c, FrameKind::Notification);
    assert_eq!(
        server
            .iter()
            .filter(|m| **m == "notifications/progress")
            .count(),
        3
    );
}

/// The Python SDK's server, answering with JSON bodies.
#[test]
fn ts_client_python_server_over_streamable_http_json() {
    let Some(log) = run_remote_pair(Client::Ts, Server::PythonSdk, true) else {
        return;
    };
    // A JSON answer carries the response alone: count_words's progress is not sent.
    let server = methods(&log, Direction::S2c, FrameKind::Notification);
    assert!(server.is_empty(), "{server:?}");
    let calls = methods(&log, Direction::S2c, FrameKind::Response);
    assert_eq!(calls.iter().filter(|m| **m == "tools/call").count(), 4);
}

/// A 16 MiB tool result that the Python SDK's server streams as one server-sent event reaches
/// the TypeScript SDK client through the proxy whole: the same length, SHA-256 and last record
/// as the same client reading it from the server directly; the log holds it as one frame.
#[test]
fn a_16_mib_result_streamed_as_an_event_arrives_whole_through_the_proxy() {
    const SIZE: u64 = 16 << 20;
    let Some(peers) = Peers::locate() else {
        return;
    };
    let port = free_port();
    let mut command = peers.http_server_command(Server::PythonSdk, port, false);
    command.env("PY_SERVER_BLOB_TOOL", "1");
    let served = Served::start(command, port);
    let driver = |rest: &[OsString]| {
        let mut command: Vec<OsString> = vec![
            "node".into(),
            peers.dir.join("ts_client.mjs").into(),
            "blob".into(),
        ];
        command.extend(rest.iter().cloned());
        command
    };
    let direct = driver(&["--url".into(), served.url.clone().into()]);
    let proxied = |target: &[OsString]| driver(&[&["--".into()], target].concat());
    let (session, log) = run_pair(&served, &direct, proxied, false, "a 16 MiB result");
    let result = &session.json["transcript"][0]["result"];
    assert_eq!(result["length"], SIZE, "{result}");
    assert_eq!(result["isError"], false, "{result}");
    let frame = log
        .dir(Direction::S2c)
        .into_iter()
        .find(|f| f.method.as_deref() == Some("tools/call"))
        .expect("the tools/call result in the log");
    assert!(frame.bytes > SIZE, "{} bytes", frame.bytes);
    let http = frame.http.as_ref().expect("http facts");
    assert_eq!(http.content_type.as_deref(), Some("text/event-stream"));
}

/// Requests answered by event streams share one connection: once a request is answered, the
/// proxy reads the rest of its stream (the server closes it), and the HTTP client puts the
/// connection back in its pool for the next request. A forwarder between the proxy and the
/// Python SDK's server counts the connections: 20 sequential `tools/list` (each its own
/// POST, each answered by an event stream) took one connection each before, and now take a
/// few at most (a request sent before the last one's stream was read to its end opens one).
#[test]
fn requests_answered_by_event_streams_reuse_their_connections() {
    const REQUESTS: u64 = 20;
    let Some(peers) = Peers::locate() else {
        return;
    };
    let port = free_port();
    let served = Served::start(
        peers.http_server_command(Server::PythonSdk, port, false),
        port,
    );
    let (url, connections) = counting_forwarder(&served.url, port);
    let mut session =
        crate::http_faults::Session::spawn(ProxyCmd::remote(&url).option(&["--inject", "none"]));
    session.ask(0, "initialize");
    session.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    for id in 1..=REQUESTS {
        let answer = session.ask(id, "tools/list");
        assert!(answer["result"]["tools"].is_array(), "{answer}");
    }
    let log = session.close();
    let streams = log
        .dir(Direction::S2c)
        .into_iter()
        .filter(|f| {
            f.http
                .as_ref()
                .is_some_and(|h| h.content_type.as_deref() == Some("text/event-stream"))
        })
        .count();
    assert_eq!(streams as u64, REQUESTS + 1, "every answer an event stream");
    // `initialize`, `notifications/initialized` and the GET stream may take one each.
    let opened = connections.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        opened <= REQUESTS / 2,
        "{opened} connections for {} POSTs",
        REQUESTS + 2
    );
}

/// A TCP forwarder on a new port to the server at `port`, counting the connections it takes;
/// `url` with the forwarder's port.
fn counting_forwarder(
    url: &str,
    port: u16,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicU64>) {
    use std::sync::atomic::{AtomicU64, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let own = listener.local_addr().expect("addr").port();
    let count = std::sync::Arc::new(AtomicU64::new(0));
    let counted = count.clone();
    thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            counted.fetch_add(1, Ordering::SeqCst);
            let Ok(server) = TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            let pipe = |mut from: TcpStream, mut to: TcpStream| {
                thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Write);
                });
            };
            let (Ok(client2), Ok(server2)) = (client.try_clone(), server.try_clone()) else {
                continue;
            };
            pipe(client, server2);
            pipe(server, client2);
        }
    });
    let forwarded = url.replace(&format!(":{port}/"), &format!(":{own}/"));
    (forwarded, count)
}

/// The Python SDK's high-level `Client` probes `server/discover`; the Python server answers,
/// and the whole session runs in the stateless 2026-07-28 revision: no `initialize`, no
/// session id, the revision on every request.
#[test]
fn py_client_python_server_over_streamable_http_stateless() {
    let Some(log) = run_remote_pair(Client::PyHighLevel, Server::PythonSdk, false) else {
        return;
    };
    let requests = methods(&log, Direction::C2s, FrameKind::Request);
    assert_eq!(requests.first(), Some(&"server/discover"), "{requests:?}");
    assert!(!requests.contains(&"initialize"), "{requests:?}");
    for frame in &log.frames {
        assert_eq!(
            frame.protocol.as_deref(),
            Some("2026-07-28"),
            "frame {}",
            frame.seq
        );
        let session = frame.http.as_ref().and_then(|h| h.session_id.as_deref());
        assert_eq!(session, None, "frame {}", frame.seq);
    }
}

/// `ctxopt verify LOG --url URL --header …`: a session recorded through `ctxopt-proxy --url`
/// from the Python SDK's HTTP server, verified against the same live server over HTTP: no
/// drift, exit 0; and against a server whose tool description changed: drift, exit 1.
#[test]
fn a_session_recorded_over_http_verifies_against_the_live_server_by_url() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let served = Served::peer(&peers, Server::PythonSdk, false);
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let target = proxied_url(&served.url, &log_path);
    let client = peers.client_command(Client::Ts, Server::PythonSdk, &fixture_tree(), &target);
    let env = [(TOKEN_VAR, PathBuf::from(TOKEN))];
    run_driver(&client, &env);
    let verify = |url: &str| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .arg("verify")
            .arg(&log_path)
            .args(["--format", "json", "--url", url, "--header"])
            .arg(format!("Authorization: Bearer ${{{TOKEN_VAR}}}"))
            .env(TOKEN_VAR, TOKEN)
            .output()
            .expect("run ctxopt verify");
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!("{e}: {}", String::from_utf8_lossy(&out.stderr));
        });
        (out.status.code(), report)
    };
    let (code, report) = verify(&served.url);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["drift"], false, "{report:#}");
    drop(served);

    let port = free_port();
    let mut changed = peers.http_server_command(Server::PythonSdk, port, false);
    changed.env("PY_SERVER_ECHO_DESCRIPTION", "Echo the text back, changed.");
    let changed = Served::start(changed, port);
    let (code, report) = verify(&changed.url);
    assert_eq!(code, Some(1), "{report:#}");
    assert_eq!(report["drift"], true, "{report:#}");
}
