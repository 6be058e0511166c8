//! `ctxopt-proxy --url` when the standalone GET stream (the server's own messages) ends or
//! breaks: the proxy reopens it with `Last-Event-ID` (the last event it read), after the
//! server's `retry:`; the client gets every message once, in order; each reopening is a line
//! in the trailer's `errors`; a 405 to the reopening GET ends the listening, the session goes
//! on; a 401 to it renews the stored token. The server is a small HTTP/1.1 server of this
//! module, serving each GET as its script says.

use std::io::{BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ctxopt::framelog::{Direction, HttpVia};
use serde_json::Value;

use crate::http_auth::{in_seconds, store_token, FRESH_TOKENS};
use crate::http_faults::{body_id, read_request, response, Session};
use crate::support::log::Log;
use crate::support::proxy::ProxyCmd;

/// How the server answers one GET of the stream, in the order they come.
#[derive(Debug, Clone, Copy)]
enum Get {
    /// An event stream with these events, then closed (`cut` after a partial event, or at
    /// an event's end), or held open until the proxy goes (`held`).
    Stream(&'static str, End),
    /// This status.
    Status(u16),
}

/// How a scripted stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// Closed in the middle of an event.
    Cut,
    /// Closed after its last event.
    Closed,
    /// Held open until the proxy closes it.
    Held,
}

/// What the server saw.
#[derive(Default)]
struct Seen {
    /// The `Last-Event-ID` of each GET the script answered, in order.
    resumed_from: Mutex<Vec<Option<String>>>,
    /// Requests to the token endpoint.
    refreshes: AtomicUsize,
    /// GETs refused with 401.
    refused: AtomicUsize,
}

/// A server at `/mcp`: `initialize` opens session `s-1`, other POSTs are answered (a
/// request with an empty result, a notification with 202), GETs as `script` says (a GET
/// past its end is held open without events). With `fresh_to_resume`, a GET carrying
/// `Last-Event-ID` is refused (401) unless it has the refreshed token, which `/token` gives.
fn server(script: &'static [Get], fresh_to_resume: bool) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let seen = Arc::new(Seen::default());
    let served = seen.clone();
    std::thread::spawn(move || {
        let gets = Arc::new(AtomicUsize::new(0));
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (seen, gets) = (served.clone(), gets.clone());
            std::thread::spawn(move || serve(stream, script, fresh_to_resume, &seen, &gets));
        }
    });
    (url, seen)
}

fn serve(
    mut stream: TcpStream,
    script: &[Get],
    fresh_to_resume: bool,
    seen: &Seen,
    gets: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    while let Some((headers, body)) = read_request(&mut reader) {
        let header = |name: &str| {
            headers
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        let session = [("Mcp-Session-Id", "s-1")];
        let answer = if headers.starts_with("post /token ") {
            seen.refreshes.fetch_add(1, Ordering::SeqCst);
            response(200, "application/json", &[], FRESH_TOKENS.as_bytes())
        } else if headers.starts_with("get ") {
            let from = header("last-event-id:");
            let fresh = header("authorization:").as_deref() == Some("bearer fresh-access-token");
            if fresh_to_resume && from.is_some() && !fresh {
                seen.refused.fetch_add(1, Ordering::SeqCst);
                response(
                    401,
                    "application/json",
                    &[],
                    br#"{"error":"invalid_token"}"#,
                )
            } else {
                seen.resumed_from.lock().expect("lock").push(from);
                let get = script.get(gets.fetch_add(1, Ordering::SeqCst));
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                            Mcp-Session-Id: s-1\r\n\r\n";
                match get {
                    Some(Get::Status(status)) => response(*status, "text/plain", &[], b"no"),
                    Some(Get::Stream(events, end)) => {
                        let _ = stream.write_all(format!("{head}{events}").as_bytes());
                        if *end == End::Cut {
                            let _ = stream.write_all(b"id: cut\ndata: {\"jsonrpc\":");
                        }
                        if *end == End::Held {
                            let _ = reader.read_to_end(&mut Vec::new());
                        }
                        return;
                    }
                    None => {
                        let _ = stream.write_all(head.as_bytes());
                        let _ = reader.read_to_end(&mut Vec::new());
                        return;
                    }
                }
            }
        } else if headers.starts_with("delete ") {
            response(200, "text/plain", &[], b"")
        } else if body.contains("\"initialize\"") {
            let id = body_id(&body);
            let result = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"g","version":"1"}}}}}}"#
            );
            response(200, "application/json", &session, result.as_bytes())
        } else if body.contains("\"id\"") {
            let id = body_id(&body);
            let result = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
            response(200, "application/json", &session, result.as_bytes())
        } else {
            response(202, "text/plain", &session, b"")
        };
        if stream.write_all(&answer).is_err() {
            return;
        }
    }
}

/// A `notifications/message` event with id `id` whose data is `data`.
macro_rules! note {
    ($id:literal, $data:literal) => {
        concat!(
            "id: ",
            $id,
            "\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"",
            $data,
            "\"}}\n\n"
        )
    };
}

/// `initialize`, then `notifications/initialized`: the proxy opens the GET stream.
fn initialized(session: &mut Session) {
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "g", "{answer}");
    session.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

/// The data of the next `n` messages the client gets (all notifications).
fn notes(session: &mut Session, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let message: Value = session.next();
            assert_eq!(message["method"], "notifications/message", "{message}");
            message["params"]["data"]
                .as_str()
                .expect("data")
                .to_string()
        })
        .collect()
}

/// The event ids of the messages logged as the GET stream's, in order.
fn get_event_ids(log: &Log) -> Vec<String> {
    log.dir(Direction::S2c)
        .into_iter()
        .filter_map(|f| f.http.as_ref())
        .filter(|h| h.via == HttpVia::Get)
        .map(|h| h.event_id.clone().expect("an event id"))
        .collect()
}

/// The trailer's lines about reopening the GET stream.
fn reopenings(log: &Log) -> Vec<&str> {
    log.trailer
        .errors
        .iter()
        .map(String::as_str)
        .filter(|e| e.contains("the GET stream for server messages"))
        .collect()
}

fn proxy(url: &str) -> Session {
    Session::spawn(ProxyCmd::remote(url).option(&["--inject", "none"]))
}

const CUT_AFTER_TWO: &[Get] = &[
    Get::Stream(concat!(note!("g-1", "one"), note!("g-2", "two")), End::Cut),
    // Replays from the event it was given (one too many): g-2 must not reach the client
    // twice.
    Get::Stream(
        concat!(
            note!("g-2", "two"),
            note!("g-3", "three"),
            note!("g-4", "four")
        ),
        End::Held,
    ),
];

/// The stream cut in the middle of an event after two whole ones: reopened with
/// `Last-Event-ID` of the second; the server's replay of the second is dropped; the client
/// gets the four messages once, in order, the log has them with their ids and one line for
/// the reopening, and the session goes on.
#[test]
fn a_cut_get_stream_is_reopened_with_last_event_id_and_nothing_is_relayed_twice() {
    let (url, seen) = server(CUT_AFTER_TWO, false);
    let mut session = proxy(&url);
    initialized(&mut session);
    assert_eq!(notes(&mut session, 4), ["one", "two", "three", "four"]);
    assert!(session.ask(2, "ping")["result"].is_object());
    let log = session.close();
    assert_eq!(
        *seen.resumed_from.lock().expect("lock"),
        [None, Some("g-2".to_string())]
    );
    assert_eq!(get_event_ids(&log), ["g-1", "g-2", "g-3", "g-4"]);
    let lines = reopenings(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("cut in the middle of an event")
            && lines[0].contains("reopening it with Last-Event-ID g-2 in 250ms (attempt 1 of 5)"),
        "{lines:?}"
    );
}

const RETRY_THEN_CLOSED: &[Get] = &[
    Get::Stream(concat!("retry: 120\n\n", note!("g-1", "one")), End::Closed),
    Get::Stream(note!("g-2", "two"), End::Held),
];

/// A stream the server closes after a `retry:` of 120 ms: reopened after that wait (not the
/// default 250 ms), from the last event.
#[test]
fn a_closed_get_stream_is_reopened_after_the_servers_retry() {
    let (url, seen) = server(RETRY_THEN_CLOSED, false);
    let mut session = proxy(&url);
    initialized(&mut session);
    assert_eq!(notes(&mut session, 2), ["one", "two"]);
    let log = session.close();
    assert_eq!(
        *seen.resumed_from.lock().expect("lock"),
        [None, Some("g-1".to_string())]
    );
    let lines = reopenings(&log);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains("the server closed it; reopening it with Last-Event-ID g-1 in 120ms"),
        "{lines:?}"
    );
}

const CLOSED_THEN_405: &[Get] = &[
    Get::Stream(note!("g-1", "one"), End::Closed),
    Get::Status(405),
];

/// A 405 to the reopening GET: the server no longer offers the stream; the proxy stops
/// asking (no third GET) and says so, and the session goes on.
#[test]
fn a_405_on_reopening_the_get_stream_ends_the_listening() {
    let (url, seen) = server(CLOSED_THEN_405, false);
    let mut session = proxy(&url);
    initialized(&mut session);
    assert_eq!(notes(&mut session, 1), ["one"]);
    session.stderr_line("HTTP 405");
    assert!(session.ask(2, "ping")["result"].is_object());
    let log = session.close();
    assert_eq!(seen.resumed_from.lock().expect("lock").len(), 2);
    let lines = reopenings(&log);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].contains("Last-Event-ID g-1"), "{lines:?}");
    assert!(
        lines[1].contains("refused (HTTP 405)") && lines[1].contains("not reopened"),
        "{lines:?}"
    );
}

/// The stored token refused on the reopening GET (401): renewed once at the token endpoint,
/// the GET sent again with it and `Last-Event-ID`, and the stream goes on.
#[test]
fn a_401_on_the_reopening_get_refreshes_the_token_and_the_stream_resumes() {
    let (url, seen) = server(CUT_AFTER_TWO, true);
    let cmd = ProxyCmd::remote(&url).option(&["--inject", "none"]);
    store_token(&cmd, &url, in_seconds(3600));
    let mut session = Session::spawn(cmd);
    initialized(&mut session);
    assert_eq!(notes(&mut session, 4), ["one", "two", "three", "four"]);
    let log = session.close();
    assert_eq!(seen.refused.load(Ordering::SeqCst), 1);
    assert_eq!(seen.refreshes.load(Ordering::SeqCst), 1);
    assert_eq!(
        *seen.resumed_from.lock().expect("lock"),
        [None, Some("g-2".to_string())]
    );
    assert_eq!(get_event_ids(&log), ["g-1", "g-2", "g-3", "g-4"]);
    assert_eq!(reopenings(&log).len(), 1, "{:?}", log.trailer.errors);
}

/// A message without an event id, on a stream the server closes after it.
macro_rules! plain_note {
    ($data:literal) => {
        concat!(
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"",
            $data,
            "\"}}\n\n"
        )
    };
}

const ONE_MESSAGE_PER_STREAM: &[Get] = &[
    Get::Stream(plain_note!("1"), End::Closed),
    Get::Stream(plain_note!("2"), End::Closed),
    Get::Stream(plain_note!("3"), End::Closed),
    Get::Stream(plain_note!("4"), End::Closed),
    Get::Stream(plain_note!("5"), End::Closed),
    Get::Stream(plain_note!("6"), End::Closed),
    Get::Stream(plain_note!("7"), End::Held),
];

/// A server without event ids that closes the stream after each message (polling): each
/// reopening, without `Last-Event-ID`, brought a message, so the tries never run out (five
/// in a row without one would end them): the seven messages arrive.
#[test]
fn a_stream_closed_after_each_message_is_reopened_as_long_as_messages_come() {
    let (url, seen) = server(ONE_MESSAGE_PER_STREAM, false);
    let mut session = proxy(&url);
    initialized(&mut session);
    assert_eq!(notes(&mut session, 7), ["1", "2", "3", "4", "5", "6", "7"]);
    let log = session.close();
    assert_eq!(
        *seen.resumed_from.lock().expect("lock"),
        vec![None::<String>; 7]
    );
    let lines = reopenings(&log);
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(
        lines
            .iter()
            .all(|l| l.contains("reopening it without Last-Event-ID")
                && l.contains("(attempt 1 of 5)")),
        "{lines:?}"
    );
}
