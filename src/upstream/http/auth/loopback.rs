//! The loopback redirect (RFC 8252 §7.3): a listener on `127.0.0.1` that takes the browser's
//! `GET /callback?code=…&state=…`, checks the state, and answers a page saying what happened.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::time::{Duration, Instant};

use percent_encoding::percent_decode_str;

use super::AuthError;

/// The redirect's path.
const CALLBACK: &str = "/callback";

/// How often the listener looks for a connection while it waits.
const POLL: Duration = Duration::from_millis(50);

/// How long one connection may take to send its request.
const READ_LIMIT: Duration = Duration::from_secs(10);

/// The loopback listener.
#[derive(Debug)]
pub(crate) struct Loopback {
    listener: TcpListener,
    port: u16,
}

impl Loopback {
    /// Listens on `127.0.0.1:port` (0: a port the system picks).
    pub(crate) fn bind(port: u16) -> Result<Loopback, AuthError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).map_err(AuthError::Loopback)?;
        let port = listener.local_addr().map_err(AuthError::Loopback)?.port();
        listener
            .set_nonblocking(true)
            .map_err(AuthError::Loopback)?;
        Ok(Loopback { listener, port })
    }

    /// The redirect URI: `http://127.0.0.1:<port>/callback`.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK}", self.port)
    }

    /// Waits (at most `limit`) for the redirect whose `state` is `state` and returns its code.
    /// Requests for other paths (a browser's `/favicon.ico`) get a 404 and the wait goes on; a
    /// redirect with another state, or with an error, ends it.
    pub(crate) fn wait(&self, state: &str, limit: Duration) -> Result<String, AuthError> {
        let deadline = Instant::now() + limit;
        loop {
            let stream = match self.listener.accept() {
                Ok((stream, _)) => stream,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        return Err(AuthError::Timeout {
                            redirect: self.redirect_uri(),
                            waited: limit,
                        });
                    }
                    std::thread::sleep(POLL);
                    continue;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(AuthError::Loopback(e)),
            };
            if let Some(result) = answer(stream, state) {
                return result;
            }
        }
    }
}

/// Reads one request from `stream` and answers it: `None` when it was not the redirect.
fn answer(mut stream: TcpStream, state: &str) -> Option<Result<String, AuthError>> {
    let target = match request_target(&stream) {
        Ok(Some(target)) => target,
        _ => {
            let _ = respond(
                &mut stream,
                "400 Bad Request",
                "Not a request ctxopt expected.",
            );
            return None;
        }
    };
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    if path != CALLBACK {
        let _ = respond(&mut stream, "404 Not Found", "Not found.");
        return None;
    }
    let result = callback_result(query, state);
    let (status, text) = match &result {
        Ok(_) => (
            "200 OK",
            "ctxopt is authorized. You can close this window and return to the terminal.",
        ),
        Err(_) => (
            "400 Bad Request",
            "ctxopt was not authorized. The terminal says why.",
        ),
    };
    let _ = respond(&mut stream, status, text);
    Some(result)
}

/// What the redirect's query says: the code, or why there is none.
fn callback_result(query: &str, state: &str) -> Result<String, AuthError> {
    let param = |name: &str| -> Option<String> {
        query.split('&').find_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (key == name).then(|| {
                percent_decode_str(&value.replace('+', " "))
                    .decode_utf8_lossy()
                    .into_owned()
            })
        })
    };
    if param("state").as_deref() != Some(state) {
        return Err(AuthError::StateMismatch);
    }
    if let Some(error) = param("error") {
        return Err(AuthError::Refused {
            error,
            description: param("error_description"),
        });
    }
    param("code")
        .filter(|c| !c.is_empty())
        .ok_or(AuthError::Refused {
            error: "no code in the redirect".into(),
            description: None,
        })
}

/// The target of a `GET` request (its head read, at most 16 KiB).
fn request_target(stream: &TcpStream) -> io::Result<Option<String>> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(READ_LIMIT))?;
    let mut reader = BufReader::new(io::Read::take(stream, 16 << 10));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut words = line.split_whitespace();
    let (Some("GET"), Some(target)) = (words.next(), words.next()) else {
        return Ok(None);
    };
    let target = target.to_string();
    // The rest of the head, so that the browser sees its request read.
    let mut header = String::new();
    while reader.read_line(&mut header)? > 2 {
        header.clear();
    }
    Ok(Some(target))
}

fn respond(stream: &mut TcpStream, status: &str, text: &str) -> io::Result<()> {
    let body = format!("<!doctype html><meta charset=utf-8><title>ctxopt</title><p>{text}</p>\n");
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_redirect_gives_its_code_only_with_the_right_state() {
        assert_eq!(
            callback_result("code=abc%2F1&state=s-1", "s-1").unwrap(),
            "abc/1"
        );
        assert!(matches!(
            callback_result("code=abc&state=forged", "s-1"),
            Err(AuthError::StateMismatch)
        ));
        assert!(matches!(
            callback_result("code=abc", "s-1"),
            Err(AuthError::StateMismatch)
        ));
        let denied = callback_result(
            "error=access_denied&error_description=the+user+said+no&state=s-1",
            "s-1",
        )
        .unwrap_err();
        assert_eq!(
            denied.to_string(),
            "the authorization server refused: access_denied (the user said no)"
        );
    }

    #[test]
    fn the_listener_answers_other_paths_and_takes_the_redirect() {
        let loopback = Loopback::bind(0).unwrap();
        let uri = loopback.redirect_uri();
        assert!(uri.starts_with("http://127.0.0.1:") && uri.ends_with("/callback"));
        let port = loopback.port;
        let browser = std::thread::spawn(move || {
            let get = |target: &str| {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                write!(stream, "GET {target} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
                let mut text = String::new();
                io::Read::read_to_string(&mut stream, &mut text).unwrap();
                text
            };
            let favicon = get("/favicon.ico");
            let callback = get("/callback?state=st&code=the-code");
            (favicon, callback)
        });
        let code = loopback.wait("st", Duration::from_secs(30)).unwrap();
        assert_eq!(code, "the-code");
        let (favicon, callback) = browser.join().unwrap();
        assert!(favicon.starts_with("HTTP/1.1 404"), "{favicon}");
        assert!(callback.starts_with("HTTP/1.1 200"), "{callback}");
    }
}
