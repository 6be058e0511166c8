//! What can go wrong between the proxy and an HTTP server, and the JSON-RPC error the client
//! gets for a request the server therefore did not answer.

use std::time::Duration;

/// The JSON-RPC error code for a transport fault (the TypeScript SDK's "connection closed").
pub const TRANSPORT_ERROR: i64 = -32000;

/// The JSON-RPC error code for a server that did not answer in time (the TypeScript SDK's
/// "request timeout").
pub const TIMEOUT_ERROR: i64 = -32001;

/// Why a message got no (complete) answer from the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Fault {
    /// Nothing listens at the address.
    #[error("connection refused")]
    Refused,
    /// The host name does not resolve.
    #[error("the host name does not resolve")]
    NoSuchHost,
    /// The TLS handshake failed (an untrusted certificate, a name mismatch, ...).
    #[error("TLS failure: {0}")]
    Tls(String),
    /// Another failure to connect or to read or write the connection.
    #[error("{0}")]
    Connection(String),
    /// The server did not answer (or went silent) within the timeout.
    #[error("no answer within {0:?} (--timeout)")]
    Timeout(Duration),
    /// The server answered with an HTTP error status.
    #[error("HTTP {status}{}", excerpt(body))]
    Status {
        /// The status.
        status: u16,
        /// The start of the response body, for the message.
        body: String,
    },
    /// The server answered with a redirect, which the proxy does not follow.
    #[error("HTTP {status} redirect to {location} (not followed: give that URL to --url)")]
    Redirect {
        /// The status.
        status: u16,
        /// Where it points.
        location: String,
    },
    /// The server needs authorization (HTTP 401) and the stored token could not be used or
    /// renewed.
    #[error("HTTP 401: {reason}; run: {login}")]
    Unauthorized {
        /// Why the proxy has no token the server takes (never the token).
        reason: String,
        /// The command that stores one.
        login: String,
    },
    /// The token lacks a scope the request needs (HTTP 403 with a Bearer
    /// `insufficient_scope` challenge): not retried, the user decides on the wider grant.
    #[error("HTTP 403: insufficient_scope: {}; {fix}", needed(scope.as_deref()))]
    InsufficientScope {
        /// The scopes the challenge names, when it names them.
        scope: Option<String>,
        /// What gets them: the login command, with the scopes to ask for.
        fix: String,
    },
    /// The server no longer knows the session (HTTP 404 to a request carrying its id).
    #[error(
        "the session {session} has expired (HTTP 404): the client must initialize a new session"
    )]
    SessionExpired {
        /// The session id the server forgot.
        session: String,
    },
    /// A success status whose body is neither JSON nor an event stream.
    #[error("an answer of content type {0:?}, neither application/json nor text/event-stream")]
    ContentType(String),
    /// A JSON answer that is not JSON.
    #[error("an answer that is not JSON")]
    NotJson,
    /// An answer or event over the size limit.
    #[error("an answer over the size limit of {0} bytes")]
    TooLarge(usize),
    /// The event stream was cut in the middle of an event.
    #[error("the event stream was cut in the middle of an event")]
    Cut,
    /// The answer ended without the response to the request.
    #[error("the server's answer ended without the response")]
    Unanswered,
    /// The legacy HTTP+SSE transport: the event stream did not begin with the `endpoint`
    /// event that says where to POST.
    #[error("no endpoint event: {0}")]
    NoEndpoint(String),
    /// The legacy HTTP+SSE transport: the server closed the event stream that carries
    /// every answer.
    #[error("the server closed the event stream")]
    StreamClosed,
    /// The legacy HTTP+SSE transport: the event stream failed earlier, and with it the
    /// session.
    #[error("the event stream failed earlier ({0}): the client must initialize a new session")]
    StreamGone(String),
}

/// `: <the start of the body>` when there is a body.
pub(crate) fn excerpt(body: &str) -> String {
    let body = body.trim();
    if body.is_empty() {
        return String::new();
    }
    let cut: String = body.chars().take(200).collect();
    let more = if cut.len() < body.len() { "…" } else { "" };
    format!(": {cut}{more}")
}

/// What an `insufficient_scope` challenge asks for, in words.
fn needed(scope: Option<&str>) -> String {
    match scope {
        Some(scope) => format!("the server requires the scope \"{scope}\""),
        None => "the server requires a scope it did not name".to_string(),
    }
}

impl Fault {
    /// The fault a failed `ureq` call stands for.
    pub(crate) fn from_ureq(err: ureq::Error, timeout: Duration) -> Fault {
        match err {
            ureq::Error::Timeout(_) => Fault::Timeout(timeout),
            ureq::Error::HostNotFound => Fault::NoSuchHost,
            ureq::Error::Io(io) => Fault::from_io(&io, timeout),
            ureq::Error::Tls(what) => Fault::Tls(what.to_string()),
            ureq::Error::Rustls(e) => Fault::Tls(e.to_string()),
            ureq::Error::Pem(e) => Fault::Tls(e.to_string()),
            ureq::Error::BodyExceedsLimit(limit) => {
                Fault::TooLarge(usize::try_from(limit).unwrap_or(usize::MAX))
            }
            other => Fault::Connection(other.to_string()),
        }
    }

    /// The fault a failed read or write stands for.
    pub(crate) fn from_io(err: &std::io::Error, timeout: Duration) -> Fault {
        use std::io::ErrorKind;
        // The TLS handshake's failures come back from the transport as io errors.
        if let Some(tls) = err
            .get_ref()
            .and_then(|e| e.downcast_ref::<rustls::Error>())
        {
            return Fault::Tls(tls.to_string());
        }
        match err.kind() {
            ErrorKind::ConnectionRefused => Fault::Refused,
            ErrorKind::TimedOut | ErrorKind::WouldBlock => Fault::Timeout(timeout),
            _ => {
                // ureq wraps its own errors (a timeout while reading a body) in io errors.
                let text = err.to_string();
                if text.contains("timeout") || text.contains("timed out") {
                    Fault::Timeout(timeout)
                } else if text.contains("failed to lookup address")
                    || text.contains("Name or service not known")
                {
                    Fault::NoSuchHost
                } else {
                    Fault::Connection(text)
                }
            }
        }
    }

    /// The JSON-RPC error code for it.
    pub fn code(&self) -> i64 {
        match self {
            Fault::Timeout(_) => TIMEOUT_ERROR,
            _ => TRANSPORT_ERROR,
        }
    }

    /// The JSON-RPC error answering request `id` (its JSON text) that the server did not
    /// answer because of this fault at `url` (as shown to users) over `transport`.
    pub fn error_response(
        &self,
        id: &str,
        url: &str,
        status: Option<u16>,
        transport: &str,
    ) -> Vec<u8> {
        let message = format!("ctxopt-proxy: {url}: {self}");
        let mut data = serde_json::Map::new();
        data.insert("transport".into(), transport.into());
        if let Some(status) = status {
            data.insert("status".into(), status.into());
        }
        let error = serde_json::json!({
            "code": self.code(),
            "message": message,
            "data": data,
        });
        format!(r#"{{"jsonrpc":"2.0","id":{id},"error":{error}}}"#).into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_response_keeps_the_id_and_names_the_cause() {
        let fault = Fault::Status {
            status: 503,
            body: "down for maintenance".into(),
        };
        let bytes = fault.error_response("\"a-1\"", "https://h/mcp", Some(503), "sse");
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value["id"], "a-1");
        assert_eq!(value["error"]["code"], TRANSPORT_ERROR);
        assert_eq!(
            value["error"]["message"],
            "ctxopt-proxy: https://h/mcp: HTTP 503: down for maintenance"
        );
        assert_eq!(value["error"]["data"]["status"], 503);
        assert_eq!(value["error"]["data"]["transport"], "sse");
        let timeout = Fault::Timeout(Duration::from_secs(2)).error_response(
            "7",
            "u",
            None,
            "streamable-http",
        );
        let value: serde_json::Value = serde_json::from_slice(&timeout).unwrap();
        assert_eq!(value["error"]["code"], TIMEOUT_ERROR);
        assert_eq!(value["id"], 7);
    }
}
