//! `ctxopt-proxy --url` with a token `ctxopt auth login` stored: a 401 makes the proxy
//! refresh the token (once) and send the request again; a refused refresh makes every request
//! an error naming the login command. The server is a small HTTP/1.1 server of this module
//! that takes one bearer token and serves a token endpoint (the real authorization server's
//! demo provider issues no refresh tokens: `interop::auth` runs the login against it).

use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ctxopt::upstream::http::auth::{Credentials, TokenStore};

use crate::http_faults::{assert_logged, body_id, error_naming, read_request, response, Session};
use crate::support::proxy::ProxyCmd;

/// What the server saw: the token requests' forms.
#[derive(Default)]
struct Seen {
    token_requests: Mutex<Vec<String>>,
    refused: AtomicUsize,
}

/// A server at `/mcp` that answers only `Authorization: Bearer {valid}` (401 with a Bearer
/// challenge otherwise), and a token endpoint at `/token` that answers `token_status` with
/// `token_body`.
fn bearer_server(
    valid: &'static str,
    token_status: u16,
    token_body: &'static str,
) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Seen::default());
    let seen_by_server = seen.clone();
    let challenge = format!(
        r#"Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
    );
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let Ok(clone) = stream.try_clone() else {
                continue;
            };
            let mut reader = BufReader::new(clone);
            while let Some((headers, body)) = read_request(&mut reader) {
                let answer = if headers.starts_with("post /token ") {
                    lock(&seen_by_server.token_requests).push(body);
                    response(token_status, "application/json", &[], token_body.as_bytes())
                } else if headers.contains(&format!("authorization: bearer {valid}\r\n")) {
                    if body.contains("\"id\"") && !body.contains("\"result\"") {
                        let id = body_id(&body);
                        let result = format!(
                            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"b","version":"1"}}}}}}"#
                        );
                        response(200, "application/json", &[], result.as_bytes())
                    } else {
                        response(202, "application/json", &[], b"")
                    }
                } else {
                    seen_by_server.refused.fetch_add(1, Ordering::Relaxed);
                    let header = [("WWW-Authenticate", challenge.as_str())];
                    response(
                        401,
                        "application/json",
                        &header,
                        br#"{"error":"invalid_token"}"#,
                    )
                };
                if stream.write_all(&answer).is_err() {
                    break;
                }
            }
        }
    });
    (format!("{base}/mcp"), seen)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The proxy in front of `url`, logging to `log`, with an expired token stored for it in its
/// state folder (gone when the proxy's session ends).
fn proxy_with_stored_token(url: &str, log: &Path) -> (ProxyCmd, TokenStore) {
    let cmd = ProxyCmd::remote(url).option(&["--inject", "none"]);
    let state: &Path = cmd.log_path().parent().expect("the proxy's folder");
    let store = TokenStore::in_dir(state.join("ctxopt/auth"));
    let base = url.trim_end_matches("/mcp");
    store
        .save(&Credentials {
            url: url.to_string(),
            resource: url.to_string(),
            issuer: base.to_string(),
            token_endpoint: format!("{base}/token"),
            client_id: "ctxopt-client".into(),
            client_secret: None,
            access_token: "stale-access-token".into(),
            refresh_token: Some("first-refresh-token".into()),
            expires_at: Some(1),
            scope: None,
        })
        .expect("store the token");
    (cmd.log_to(log), store)
}

const SECRETS: [&str; 4] = [
    "stale-access-token",
    "first-refresh-token",
    "fresh-access-token",
    "rotated-refresh-token",
];

#[test]
fn a_401_refreshes_the_stored_token_once_and_the_request_is_sent_again() {
    let (url, seen) = bearer_server(
        "fresh-access-token",
        200,
        r#"{"access_token":"fresh-access-token","token_type":"Bearer","expires_in":3600,"refresh_token":"rotated-refresh-token"}"#,
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let (cmd, store) = proxy_with_stored_token(&url, &log_path);
    let mut session = Session::spawn(cmd);
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "b", "{answer}");
    let answer = session.ask(2, "ping");
    assert!(answer.get("result").is_some(), "{answer}");
    // The new tokens are kept for the next run.
    let kept = store.load(&url).unwrap().expect("the token file");
    assert_eq!(kept.access_token, "fresh-access-token");
    assert_eq!(kept.refresh_token.as_deref(), Some("rotated-refresh-token"));
    assert!(!kept.expired());
    let log = session.close();
    // One refusal (the stale token), one refresh, with the refresh token and the resource.
    assert_eq!(seen.refused.load(Ordering::Relaxed), 1);
    let forms = lock(&seen.token_requests).clone();
    assert_eq!(forms.len(), 1, "{forms:?}");
    let mut form: Vec<&str> = forms[0].split('&').collect();
    form.sort_unstable();
    let resource = format!("resource={}", url.replace(':', "%3A").replace('/', "%2F"));
    assert_eq!(
        form,
        [
            "client_id=ctxopt-client",
            "grant_type=refresh_token",
            "refresh_token=first-refresh-token",
            resource.as_str(),
        ]
    );
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
    let text = std::fs::read_to_string(&log_path).expect("the log");
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} reached the log");
    }
}

#[test]
fn a_refused_refresh_answers_every_request_with_the_login_command() {
    let (url, seen) = bearer_server(
        "fresh-access-token",
        400,
        r#"{"error":"invalid_grant","error_description":"the refresh token was revoked"}"#,
    );
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let (cmd, _store) = proxy_with_stored_token(&url, &log_path);
    let mut session = Session::spawn(cmd);
    let cause = format!("run: ctxopt auth login {url}");
    let first = session.ask(1, "initialize");
    error_naming(&first, &cause);
    error_naming(&first, "invalid_grant (the refresh token was revoked)");
    assert_eq!(first["error"]["data"]["status"], 401, "{first}");
    error_naming(&session.ask(2, "ping"), &cause);
    let log = session.close();
    assert_logged(&log, &cause, 2);
    // The refresh was tried once, not once per request.
    assert_eq!(lock(&seen.token_requests).len(), 1);
    let text = std::fs::read_to_string(&log_path).expect("the log");
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} reached the log");
    }
}

/// `ctxopt auth status` names each server with tokens, their state and issuer, never a token.
#[test]
fn auth_status_lists_the_servers_with_tokens_and_never_a_token() {
    let state = tempfile::tempdir().expect("tempdir");
    let status = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["auth", "status"])
            .env("XDG_STATE_HOME", state.path())
            .output()
            .expect("run ctxopt auth status");
        assert!(out.status.success());
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    assert!(status().starts_with("no server has tokens"));
    let store = TokenStore::in_dir(state.path().join("ctxopt/auth"));
    let credentials = |url: &str, expires_at, refresh: Option<&str>| Credentials {
        url: url.to_string(),
        resource: url.to_string(),
        issuer: "https://auth.example.com/".into(),
        token_endpoint: "https://auth.example.com/token".into(),
        client_id: "ctxopt-client".into(),
        client_secret: Some("client-secret-value".into()),
        access_token: "access-token-value".into(),
        refresh_token: refresh.map(str::to_string),
        expires_at,
        scope: Some("mcp:tools".into()),
    };
    for c in [
        credentials("https://b.example.com/mcp", Some(1), None),
        credentials(
            "https://a.example.com/mcp",
            None,
            Some("refresh-token-value"),
        ),
    ] {
        store.save(&c).expect("save");
    }
    let listed = status();
    for secret in [
        "client-secret-value",
        "access-token-value",
        "refresh-token-value",
    ] {
        assert!(!listed.contains(secret), "{listed}");
    }
    insta::assert_snapshot!(listed);
}
