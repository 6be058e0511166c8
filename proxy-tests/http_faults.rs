//! `ctxopt-proxy --url` when the remote server fails: each fault becomes a JSON-RPC error to
//! the client naming the cause, a frame in the log (`http.via: proxy`, `http.fault`) and a line
//! in the trailer's `errors`; the proxy answers the next message and exits 0 when the client
//! closes its end. The failing servers are a small HTTP/1.1 server of this module, each
//! failing one way (the real servers' sessions are in `interop::remote`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::ChildStdout;
use std::sync::Arc;

use ctxopt::framelog::{Direction, HttpVia};
use serde_json::Value;

use crate::support::log::{read_log, Log};
use crate::support::proxy::{finish, locked_store, read_line, ProxyCmd};

/// How the fault server answers a POST.
#[derive(Debug, Clone, Copy)]
enum Behaviour {
    /// This status, with a short text body.
    Status(u16),
    /// Never: the connection stays open and silent.
    Silent,
    /// An event stream that ends in the middle of an event.
    CutStream,
    /// `initialize` (without a session id) opens session `s-N`; everything else is 404.
    ExpiringSession,
    /// 307 to another URL.
    Redirect,
    /// Plain HTTP at once, whatever comes (a TLS client's hello included).
    NotTls,
    /// A POST's event stream with event ids, cut in the middle of its second event; a GET
    /// with `Last-Event-ID` of the first gets the response when `resumes`, else 405.
    Resumable {
        /// Whether the server resumes.
        resumes: bool,
    },
    /// A request's event stream that gives one progress notification and stays open; after
    /// a `notifications/cancelled`, one more, then the server waits to see the proxy close
    /// the stream; a `ping` is answered with `stream_closed`, whether it did.
    Cancellable,
    /// The legacy HTTP+SSE transport (POST to the URL: 405; GET: the event stream), failing
    /// as the [`Legacy`] says.
    Legacy(Legacy),
}

/// How a legacy HTTP+SSE server fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Legacy {
    /// The stream names its endpoint; a POST there is accepted (202), and the stream is
    /// then cut in the middle of an event.
    CutAfterPost,
    /// The stream ends before any endpoint event.
    NoEndpoint,
    /// The stream names its endpoint; a POST there is refused with 400.
    PostRejected,
    /// The stream names its endpoint; a POST there is accepted (202), and never answered.
    Silent,
}

/// The resumable server's answer: to a POST, a stream cut in its second event (the first,
/// `e-1`, a notification); to a GET resuming from `e-1`, the response to the cut request
/// (`e-3`), or 405 when the server does not resume. The connection closes after each (the
/// streams end at the close).
fn resumable_answer(
    resumes: bool,
    headers: &str,
    body: &str,
    cut_request: &mut Option<String>,
) -> Vec<u8> {
    let stream = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    if headers.starts_with("post ") {
        *cut_request = Some(body_id(body));
        let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before the cut"}}"#;
        return format!(
            "{stream}id: e-1\ndata: {note}\n\nid: e-2\ndata: {{\"jsonrpc\":\"2.0\",\"id\":"
        )
        .into_bytes();
    }
    let from = headers
        .lines()
        .find_map(|l| l.strip_prefix("last-event-id:"))
        .map(str::trim);
    match (resumes, from, cut_request.take()) {
        (true, Some("e-1"), Some(id)) => {
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"resumed":true}}}}"#);
            format!("{stream}id: e-3\ndata: {answer}\n\n").into_bytes()
        }
        (true, _, _) => response(400, "text/plain", &CLOSE, b"not the event to resume from"),
        (false, _, _) => response(405, "text/plain", &CLOSE, b"no resumption"),
    }
}

/// The server serves one connection at a time: each legacy answer closes its connection, so
/// that the next request (the GET, or a POST of the proxy's other client) can come on another.
const CLOSE: [(&str, &str); 1] = [("Connection", "close")];

/// The legacy server's answer to a request (its header block, lowercased); `None` when the
/// request's connection is `held` open as an event stream.
fn legacy_answer(
    legacy: Legacy,
    headers: &str,
    stream: &mut std::net::TcpStream,
    held: &mut Vec<std::net::TcpStream>,
) -> Option<Vec<u8>> {
    if headers.starts_with("get ") {
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
        let first = match legacy {
            Legacy::NoEndpoint => ": no endpoint here\n\n",
            _ => "event: endpoint\ndata: /message?sessionId=s-1\n\n",
        };
        let _ = stream.write_all(format!("{head}{first}").as_bytes());
        if legacy != Legacy::NoEndpoint {
            held.push(stream.try_clone().expect("clone"));
        }
        return None;
    }
    if !headers.starts_with("post /message?sessionid=s-1 ") {
        return Some(response(
            405,
            "text/plain",
            &CLOSE,
            b"POST is not served here",
        ));
    }
    match legacy {
        Legacy::PostRejected => Some(response(400, "text/plain", &CLOSE, b"no such session")),
        Legacy::Silent => Some(response(202, "text/plain", &CLOSE, b"Accepted")),
        _ => {
            let _ = stream.write_all(&response(202, "text/plain", &CLOSE, b"Accepted"));
            for mut event_stream in held.drain(..) {
                let _ =
                    event_stream.write_all(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":");
            }
            Some(Vec::new())
        }
    }
}

/// A server on 127.0.0.1 answering every request as `behaviour` says; its thread lives as
/// long as the test process.
fn fault_server(behaviour: Behaviour) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        let mut silent = Vec::new();
        let mut held = Vec::new();
        let mut cut_request = None;
        let mut stream_closed = false;
        let mut sessions = 0;
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if let Behaviour::NotTls = behaviour {
                let _ = stream.write_all(&response(400, "text/plain", &[], b"plain HTTP here"));
                continue;
            }
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            while let Some((headers, body)) = read_request(&mut reader) {
                let answer = match behaviour {
                    // Closed after the answer: the server serves one connection at a time,
                    // and the proxy's GET for a legacy stream (auto-detection) comes on
                    // another.
                    Behaviour::Status(status) => response(
                        status,
                        "text/plain",
                        &[("Connection", "close")],
                        b"down for maintenance",
                    ),
                    Behaviour::Silent => {
                        silent.push(stream);
                        break;
                    }
                    Behaviour::CutStream => {
                        let cut = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                                    Connection: close\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":";
                        let _ = stream.write_all(cut);
                        break;
                    }
                    Behaviour::NotTls => unreachable!("answered above"),
                    Behaviour::Resumable { resumes } => {
                        let answer = resumable_answer(resumes, &headers, &body, &mut cut_request);
                        let _ = stream.write_all(&answer);
                        break;
                    }
                    Behaviour::Cancellable => {
                        let progress = |n: u8| {
                            format!("data: {{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{{\"progressToken\":\"p\",\"progress\":{n}}}}}\n\n")
                        };
                        if body.contains("\"tools/call\"") {
                            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
                            let _ = stream.write_all(format!("{head}{}", progress(1)).as_bytes());
                            held.push(stream.try_clone().expect("clone"));
                            break;
                        } else if body.contains("notifications/cancelled") {
                            let _ = stream.write_all(&response(202, "text/plain", &CLOSE, b""));
                            for mut request in held.drain(..) {
                                let _ = request.write_all(progress(2).as_bytes());
                                request
                                    .set_read_timeout(Some(std::time::Duration::from_secs(10)))
                                    .expect("read timeout");
                                let mut byte = [0];
                                stream_closed =
                                    matches!(std::io::Read::read(&mut request, &mut byte), Ok(0))
                                        || request.write_all(progress(3).as_bytes()).is_err();
                            }
                            Vec::new()
                        } else {
                            let id = body_id(&body);
                            let result = format!(
                                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"stream_closed":{stream_closed}}}}}"#
                            );
                            response(200, "application/json", &CLOSE, result.as_bytes())
                        }
                    }
                    Behaviour::Legacy(legacy) => {
                        match legacy_answer(legacy, &headers, &mut stream, &mut held) {
                            Some(answer) => answer,
                            None => break,
                        }
                    }
                    Behaviour::Redirect => {
                        let to = [("Location", "http://127.0.0.1:9/elsewhere")];
                        response(307, "text/plain", &to, b"")
                    }
                    Behaviour::ExpiringSession => {
                        let initialize = body.contains("\"initialize\"");
                        // A new session is asked for without the old one's id.
                        if initialize && !headers.contains("mcp-session-id:") {
                            sessions += 1;
                            let id = body_id(&body);
                            let result = format!(
                                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"f","version":"1"}}}}}}"#
                            );
                            let session = format!("s-{sessions}");
                            let header = [("Mcp-Session-Id", session.as_str())];
                            response(200, "application/json", &header, result.as_bytes())
                        } else if initialize {
                            response(400, "text/plain", &[], b"initialize with a session id")
                        } else {
                            response(404, "text/plain", &[], b"no such session")
                        }
                    }
                };
                if stream.write_all(&answer).is_err() {
                    break;
                }
            }
        }
    });
    url
}

/// Reads one request: its header block (lowercased) and its body; `None` at end of stream.
pub(crate) fn read_request(reader: &mut impl BufRead) -> Option<(String, String)> {
    let mut headers = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if line == "\r\n" {
            break;
        }
        headers.push_str(&line.to_ascii_lowercase());
    }
    let length = headers
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map_or(0, |n| n.trim().parse().expect("content-length"));
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some((headers, String::from_utf8(body).expect("UTF-8 body")))
}

/// A TLS server on 127.0.0.1 with the certificate in `fixtures/tls/server.pem` (for
/// 127.0.0.1, signed by the test CA `fixtures/tls/ca.pem`), answering every request with
/// HTTP 503; its thread lives as long as the test process.
fn tls_server() -> String {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls");
    let cert = CertificateDer::from_pem_file(dir.join("server.pem")).expect("server.pem");
    let key = PrivateKeyDer::from_pem_file(dir.join("server.key")).expect("server.key");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server TLS config");
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("https://{}/mcp", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Ok(connection) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            let mut tls = BufReader::new(rustls::StreamOwned::new(connection, stream));
            while read_request(&mut tls).is_some() {
                let answer = response(503, "text/plain", &[], b"served over TLS");
                if tls.get_mut().write_all(&answer).is_err() || tls.get_mut().flush().is_err() {
                    break;
                }
            }
        }
    });
    url
}

pub(crate) fn response(
    status: u16,
    content_type: &str,
    extra: &[(&str, &str)],
    body: &[u8],
) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} Status\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

pub(crate) fn body_id(body: &str) -> String {
    let value: Value = serde_json::from_str(body).expect("a JSON body");
    value["id"].to_string()
}

/// A proxy in front of `url`, talked to one message at a time.
pub(crate) struct Session {
    child: std::process::Child,
    stdout: ChildStdout,
    log: std::path::PathBuf,
    /// The proxy's stderr lines, once a test watches them.
    stderr: Option<std::sync::mpsc::Receiver<String>>,
    _cmd: ProxyCmd,
}

impl Session {
    fn start(url: &str, options: &[&str]) -> Session {
        Session::spawn(
            ProxyCmd::remote(url)
                .option(&["--inject", "none"])
                .option(options),
        )
    }

    /// Starts the proxy `cmd`.
    pub(crate) fn spawn(cmd: ProxyCmd) -> Session {
        let mut child = cmd.spawn();
        let stdout = child.stdout.take().expect("stdout");
        Session {
            child,
            stdout,
            log: cmd.log_path().to_path_buf(),
            stderr: None,
            _cmd: cmd,
        }
    }

    /// Sends one request and returns the message the client gets back for it.
    pub(crate) fn ask(&mut self, id: u64, method: &str) -> Value {
        self.send(id, method);
        let answer = self.next();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    /// Waits (a minute at most) for a line of the proxy's stderr that contains `needle`,
    /// for what the proxy does on its own (the GET stream); the line.
    pub(crate) fn stderr_line(&mut self, needle: &str) -> String {
        let lines = self.stderr.get_or_insert_with(|| {
            let stderr = self.child.stderr.take().expect("stderr");
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
            rx
        });
        loop {
            match lines.recv_timeout(std::time::Duration::from_secs(60)) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("no stderr line naming {needle:?}: {e}"),
            }
        }
    }

    /// The next message the client gets.
    pub(crate) fn next(&mut self) -> Value {
        serde_json::from_slice(&read_line(&mut self.stdout)).expect("JSON")
    }

    /// Sends one line as the client.
    pub(crate) fn write_line(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().expect("stdin");
        stdin.write_all(line.as_bytes()).expect("write a line");
        stdin.write_all(b"\n").expect("write a line");
    }

    /// Sends one request.
    fn send(&mut self, id: u64, method: &str) {
        let params = if method == "initialize" {
            r#","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}"#
        } else {
            ""
        };
        let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"{method}\"{params}}}");
        self.write_line(&line);
    }

    /// Closes the client's end; the proxy must exit 0. Its log.
    pub(crate) fn close(mut self) -> Log {
        drop(self.child.stdin.take());
        self.child.stdout = Some(self.stdout);
        let (_, stderr, status) = finish(self.child);
        assert_eq!(status.code(), Some(0), "{stderr}");
        read_log(&self.log)
    }
}

/// The error of an answer, checked to name `cause`; its code.
pub(crate) fn error_naming(answer: &Value, cause: &str) -> i64 {
    let message = answer["error"]["message"]
        .as_str()
        .expect("an error answer");
    assert!(message.starts_with("ctxopt-proxy: "), "{message}");
    assert!(
        message.contains(cause),
        "{message:?} does not name {cause:?}"
    );
    answer["error"]["code"].as_i64().expect("a code")
}

/// Every answer the proxy made in the server's place is in the log with its fault, and the
/// trailer has a line naming it.
pub(crate) fn assert_logged(log: &Log, cause: &str, answers: usize) {
    let made: Vec<_> = log
        .dir(Direction::S2c)
        .into_iter()
        .filter_map(|f| f.http.as_ref())
        .filter(|h| h.via == HttpVia::Proxy)
        .collect();
    assert_eq!(made.len(), answers, "{made:?}");
    for http in made {
        let fault = http.fault.as_deref().expect("the fault");
        assert!(fault.contains(cause), "{fault:?}");
    }
    assert!(
        log.trailer.errors.iter().any(|e| e.contains(cause)),
        "{:?}",
        log.trailer.errors
    );
    assert_eq!(log.trailer.exit.code, Some(0));
}

/// Runs two requests against a server failing with `cause`, each answered with an error.
fn two_failed_requests(url: &str, options: &[&str], cause: &str) -> (i64, Log) {
    let mut session = Session::start(url, options);
    let code = error_naming(&session.ask(1, "tools/list"), cause);
    assert_eq!(error_naming(&session.ask(2, "ping"), cause), code);
    let log = session.close();
    assert_logged(&log, cause, 2);
    (code, log)
}

#[test]
fn a_refused_connection_is_an_error_naming_it() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    drop(listener);
    let (code, _) = two_failed_requests(&url, &[], "connection refused");
    assert_eq!(code, -32000);
}

#[test]
fn a_name_that_does_not_resolve_is_an_error_naming_it() {
    let url = "http://ctxopt-no-such-host.invalid/mcp";
    let (code, log) = two_failed_requests(url, &[], "does not resolve");
    assert_eq!(code, -32000);
    assert_eq!(log.header.server_argv, [url]);
}

#[test]
fn a_5xx_status_is_an_error_with_the_status_and_the_body() {
    let url = fault_server(Behaviour::Status(503));
    let mut session = Session::start(&url, &[]);
    let answer = session.ask(1, "tools/list");
    error_naming(&answer, "HTTP 503: down for maintenance");
    assert_eq!(answer["error"]["data"]["status"], 503);
    error_naming(&session.ask(2, "ping"), "HTTP 503");
    let log = session.close();
    assert_logged(&log, "HTTP 503", 2);
    let statuses: Vec<_> = log
        .frames
        .iter()
        .filter_map(|f| f.http.as_ref()?.status)
        .collect();
    assert_eq!(statuses, [503, 503]);
}

#[test]
fn a_server_that_never_answers_times_out_as_configured() {
    let url = fault_server(Behaviour::Silent);
    let (code, _) = two_failed_requests(&url, &["--timeout", "0.5"], "no answer within 500ms");
    assert_eq!(code, -32001);
}

#[test]
fn an_event_stream_cut_mid_event_is_an_error_naming_it() {
    let url = fault_server(Behaviour::CutStream);
    two_failed_requests(&url, &[], "cut in the middle of an event");
}

#[test]
fn a_404_on_an_expired_session_is_reported_until_the_client_initializes_again() {
    let url = fault_server(Behaviour::ExpiringSession);
    let mut session = Session::start(&url, &[]);
    assert!(session.ask(0, "initialize")["result"].is_object());
    error_naming(
        &session.ask(1, "tools/list"),
        "the session s-1 has expired (HTTP 404)",
    );
    // Not papered over: the next request is refused too, without asking the server.
    error_naming(
        &session.ask(2, "tools/list"),
        "must initialize a new session",
    );
    // A new initialize goes without the old id (the server refuses one that has it) and
    // opens a new session, which the next request carries.
    assert!(session.ask(3, "initialize")["result"].is_object());
    error_naming(&session.ask(4, "ping"), "the session s-2 has expired");
    let log = session.close();
    assert_logged(&log, "has expired", 3);
    let sessions: Vec<_> = log
        .dir(Direction::S2c)
        .into_iter()
        .filter_map(|f| f.http.as_ref()?.session_id.clone())
        .collect();
    assert_eq!(sessions, ["s-1", "s-1", "s-1", "s-2", "s-2"]);
}

#[test]
fn a_redirect_is_not_followed_and_the_error_says_where_it_points() {
    let url = fault_server(Behaviour::Redirect);
    let (code, _) = two_failed_requests(
        &url,
        &[],
        "HTTP 307 redirect to http://127.0.0.1:9/elsewhere (not followed",
    );
    assert_eq!(code, -32000);
}

/// `https://` to a server that speaks plain HTTP: the handshake fails, and says so.
#[test]
fn a_tls_failure_is_an_error_naming_it() {
    let url = fault_server(Behaviour::NotTls).replace("http://", "https://");
    two_failed_requests(&url, &[], "TLS failure");
}

/// A server whose certificate a private CA signed: refused against the built-in roots, and
/// reached with `--ca-cert` (its HTTP 503 comes through, so the handshake succeeded).
#[test]
fn a_private_ca_is_trusted_with_ca_cert_and_only_then() {
    let url = tls_server();
    let (_, log) = two_failed_requests(&url, &[], "TLS failure");
    let fault = log
        .frames
        .iter()
        .find_map(|f| f.http.as_ref()?.fault.clone());
    assert!(
        fault.is_some_and(|f| f.contains("UnknownIssuer")),
        "{:?}",
        log.frames
    );
    let ca = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tls/ca.pem");
    let ca = ca.to_str().expect("UTF-8 path");
    two_failed_requests(&url, &["--ca-cert", ca], "HTTP 503: served over TLS");
}

/// Remote options the proxy cannot use stop it before it reaches the server: exit 125 with
/// the option named on stderr and no header value shown.
#[test]
fn unusable_remote_options_exit_125() {
    let url = fault_server(Behaviour::Status(500));
    for (options, named) in [
        (vec!["--url", "ftp://example.com/mcp"], "--url"),
        (vec!["--url", &url, "--header", "no colon"], "--header"),
        (
            vec!["--url", &url, "--transport", "websocket"],
            "--transport",
        ),
        (vec!["--transport", "sse", "--", "true"], "needs --url"),
        (
            vec![
                "--url",
                &url,
                "--header",
                "X-Key: ${CTXOPT_TEST_UNSET_VARIABLE}",
            ],
            "CTXOPT_TEST_UNSET_VARIABLE",
        ),
        (
            vec!["--header", "X-Key: secret-value", "--", "true"],
            "needs --url",
        ),
    ] {
        let run = ProxyCmd::server(Vec::<String>::new())
            .option(&options)
            .run(b"");
        assert_eq!(run.status.code(), Some(125), "{options:?}: {}", run.stderr);
        assert!(run.stderr.contains(named), "{options:?}: {}", run.stderr);
        assert!(!run.stderr.contains("secret-value"), "{}", run.stderr);
    }
}

/// SIGTERM stops a proxy in front of a remote server as it stops one in front of a child:
/// exit 128 + 15, the log ended by its trailer.
#[test]
fn a_signal_stops_the_remote_relay_with_128_plus_n() {
    let url = fault_server(Behaviour::Status(503));
    let mut session = Session::start(&url, &["--grace-period", "0.2"]);
    // Answered: the proxy is up, its signals blocked.
    error_naming(&session.ask(1, "ping"), "HTTP 503");
    a_sigterm_ends_it(session);
}

/// Sends SIGTERM to the proxy of `session` and asserts it ends as a signal: exit 128 + 15,
/// the trailer naming the signal.
fn a_sigterm_ends_it(mut session: Session) {
    crate::support::proxy::signal(session.child.id(), libc::SIGTERM);
    session.child.stdout = Some(session.stdout);
    let (_, stderr, status) = finish(session.child);
    assert_eq!(status.code(), Some(128 + libc::SIGTERM), "{stderr}");
    let log = read_log(&session.log);
    assert_eq!(log.trailer.exit.signal, Some(libc::SIGTERM));
}

/// A signal sent just before the client closes its end still ends the run as a signal: the
/// remote finishing because the client's end closed does not hide a signal that came first.
/// Several rounds: a supervisor that looked for signals only between its polls missed the
/// signal whenever the remote finished before the next one.
#[test]
fn a_signal_just_before_the_client_closes_still_exits_128_plus_n() {
    let url = fault_server(Behaviour::Status(503));
    for round in 0..3 {
        let mut session = Session::start(&url, &["--grace-period", "5"]);
        error_naming(&session.ask(1, "ping"), "HTTP 503");
        crate::support::proxy::signal(session.child.id(), libc::SIGTERM);
        drop(session.child.stdin.take());
        session.child.stdout = Some(session.stdout);
        let (_, stderr, status) = finish(session.child);
        assert_eq!(
            status.code(),
            Some(128 + libc::SIGTERM),
            "round {round}: {stderr}"
        );
        let log = read_log(&session.log);
        assert_eq!(
            log.trailer.exit.signal,
            Some(libc::SIGTERM),
            "round {round}"
        );
    }
}

/// A signal stops the remote relay also while the store is still being opened (another
/// process holds it locked): the thread opening it, started before the relay, blocks the
/// signal too, so the signal is the relay's to collect, not the end of the proxy.
#[test]
fn a_signal_stops_the_remote_relay_while_the_store_is_still_opening() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store.sqlite3");
    let _holder = locked_store(&store);
    let url = fault_server(Behaviour::Status(503));
    let store = store.to_str().unwrap();
    let mut session = Session::start(&url, &["--grace-period", "0.2", "--store", store]);
    error_naming(&session.ask(1, "ping"), "HTTP 503");
    a_sigterm_ends_it(session);
}

/// The legacy HTTP+SSE transport, chosen (`--transport sse`) and detected (the POST to the
/// URL refused with 405): a stream cut after a request was POSTed answers that request with
/// the cause, and every later one with the stream's failure, until the client initializes
/// again.
#[test]
fn a_legacy_event_stream_cut_is_an_error_naming_it() {
    for options in [&["--transport", "sse"][..], &[]] {
        let url = fault_server(Behaviour::Legacy(Legacy::CutAfterPost));
        let mut session = Session::start(&url, options);
        let cause = "cut in the middle of an event";
        error_naming(&session.ask(1, "tools/list"), cause);
        let later = session.ask(2, "ping");
        error_naming(&later, "the event stream failed earlier");
        error_naming(&later, "the client must initialize a new session");
        assert_eq!(later["error"]["data"]["transport"], "sse");
        let log = session.close();
        assert_logged(&log, cause, 2);
        assert_eq!(log.header.transport.as_deref(), Some("sse"), "{options:?}");
    }
}

/// A legacy event stream that ends without naming its endpoint: each request gets an error
/// saying so.
#[test]
fn a_legacy_stream_without_an_endpoint_event_is_an_error_naming_it() {
    let url = fault_server(Behaviour::Legacy(Legacy::NoEndpoint));
    let (code, log) = two_failed_requests(&url, &["--transport", "sse"], "no endpoint event");
    assert_eq!(code, -32000);
    assert_eq!(log.header.transport.as_deref(), Some("sse"));
}

/// A POST to the legacy endpoint refused: the request gets the status and the body; the
/// stream stays open for the next one.
#[test]
fn a_rejected_legacy_post_is_an_error_with_the_status() {
    let url = fault_server(Behaviour::Legacy(Legacy::PostRejected));
    let (_, log) = two_failed_requests(&url, &[], "HTTP 400: no such session");
    assert_eq!(log.header.transport.as_deref(), Some("sse"));
}

/// Auto-detection against a server that refuses the POST with 404 and offers no event stream
/// either: the client gets the POST's status, the log's trailer the GET's failure too, and
/// the header Streamable HTTP (the transport tried first).
#[test]
fn auto_detection_without_a_legacy_stream_reports_the_post_status() {
    let url = fault_server(Behaviour::Status(404));
    let (_, log) = two_failed_requests(&url, &[], "HTTP 404: down for maintenance");
    assert_eq!(log.header.transport.as_deref(), Some("streamable-http"));
    assert!(
        log.trailer
            .errors
            .iter()
            .any(|e| e.contains("auto-detection")),
        "{:?}",
        log.trailer.errors
    );
}

/// A POST's event stream cut mid-event after the server gave event ids: the proxy GETs the
/// rest with `Last-Event-ID` (the last whole event's id), and the client gets the notification
/// from before the cut and then the response, both logged as the POST's, with no error; a
/// server that does not resume (405) leaves the cut to be reported as before.
#[test]
fn a_cut_stream_with_event_ids_is_resumed_with_last_event_id() {
    let url = fault_server(Behaviour::Resumable { resumes: true });
    let mut session = Session::start(&url, &[]);
    session.send(1, "tools/list");
    assert_eq!(session.next()["params"]["data"], "before the cut");
    let answer = session.next();
    assert_eq!(answer["id"], 1, "{answer}");
    assert_eq!(answer["result"]["resumed"], true, "{answer}");
    let log = session.close();
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
    let carried: Vec<_> = log
        .dir(Direction::S2c)
        .into_iter()
        .map(|f| {
            let http = f.http.as_ref().expect("http facts");
            (http.via, http.event_id.clone())
        })
        .collect();
    assert_eq!(
        carried,
        [
            (HttpVia::Post, Some("e-1".to_string())),
            (HttpVia::Post, Some("e-3".to_string())),
        ]
    );

    let url = fault_server(Behaviour::Resumable { resumes: false });
    let mut session = Session::start(&url, &[]);
    session.send(1, "tools/list");
    assert_eq!(session.next()["params"]["data"], "before the cut");
    let answer = session.next();
    error_naming(&answer, "cut in the middle of an event");
    let log = session.close();
    assert_logged(&log, "cut in the middle of an event", 1);
}

/// A client's `notifications/cancelled` ends the proxy's own reading of the cancelled
/// request's stream: the event after it is not relayed, and the proxy closes the connection
/// (the server sees it closed, and says so in its answer to the next request); no error.
#[test]
fn a_cancelled_request_is_read_no_further() {
    let url = fault_server(Behaviour::Cancellable);
    // Chosen: auto-detection would POST this first message alone, in order, to its end.
    let mut session = Session::start(&url, &["--transport", "streamable-http"]);
    session.send(1, "tools/call");
    assert_eq!(session.next()["params"]["progress"], 1);
    session.write_line(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    );
    let answer = session.ask(2, "ping");
    assert_eq!(answer["result"]["stream_closed"], true, "{answer}");
    let log = session.close();
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
    let relayed: Vec<_> = log
        .dir(Direction::S2c)
        .into_iter()
        .map(|f| f.method.clone())
        .collect();
    assert_eq!(
        relayed,
        [
            Some("notifications/progress".to_string()),
            Some("ping".to_string())
        ]
    );
}

/// A legacy server that accepts the POSTs and never answers on its stream: each request gets
/// the timeout's error once the stream has been quiet for `--timeout` while it waited.
#[test]
fn a_legacy_request_never_answered_times_out_as_configured() {
    let url = fault_server(Behaviour::Legacy(Legacy::Silent));
    let options = ["--transport", "sse", "--timeout", "0.5"];
    let (code, _) = two_failed_requests(&url, &options, "no answer within 500ms");
    assert_eq!(code, -32001);
}
