//! `ctxopt-proxy --url` with a token `ctxopt auth login` stored: a token about to expire is
//! refreshed before the request is sent; a 401 (on a POST, on the standalone GET stream, on
//! the legacy HTTP+SSE transport's GET or POSTs) makes the proxy refresh the token (once) and
//! send the request again; a refused refresh makes every request an error naming the login
//! command; a 403 `insufficient_scope` names the login command with the scopes. And
//! `ctxopt auth login --client-metadata-url` against an authorization server that takes
//! client ID metadata documents. The servers are a small HTTP/1.1 server of this module
//! that takes given bearer tokens and serves a token endpoint and the authorization
//! server's documents (the real authorization server's demo provider issues no refresh
//! tokens and takes no metadata documents: `interop::auth` runs the login against it).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ctxopt::upstream::http::auth::{Credentials, TokenStore};
use serde_json::Value;

use crate::http_faults::{assert_logged, body_id, error_naming, read_request, response, Session};
use crate::support::log::Log;
use crate::support::poll_until;
use crate::support::proxy::ProxyCmd;

/// Which bearer tokens the server takes, and how its token endpoint answers.
#[derive(Clone, Copy)]
struct Rules {
    /// For a POST (to `/mcp`, or to the legacy transport's `/message`).
    post: &'static [&'static str],
    /// For a GET (the standalone stream at `/mcp`, the legacy transport's `/sse`).
    get: &'static [&'static str],
    /// The token endpoint's status and body.
    token: (u16, &'static str),
    /// A `tools/call` is refused with 403 `insufficient_scope` for this scope.
    step_up: Option<&'static str>,
}

pub(crate) const FRESH_TOKENS: &str = r#"{"access_token":"fresh-access-token","token_type":"Bearer","expires_in":3600,"refresh_token":"rotated-refresh-token"}"#;

const REVOKED: (u16, &str) = (
    400,
    r#"{"error":"invalid_grant","error_description":"the refresh token was revoked"}"#,
);

/// What the server saw.
#[derive(Default)]
struct Seen {
    token_requests: Mutex<Vec<String>>,
    refused: AtomicUsize,
    tool_calls: AtomicUsize,
    registrations: AtomicUsize,
    /// The standalone GET streams opened (their notification sent).
    get_streams: AtomicUsize,
    /// The legacy transport's open event streams.
    legacy_streams: Mutex<Vec<TcpStream>>,
}

/// The server at `base` (`http://127.0.0.1:port`): an MCP endpoint at `/mcp` (POST, and a
/// GET stream that sends one notification), the legacy transport at `/sse` (its endpoint
/// `/message`), a token endpoint at `/token`, the protected-resource and
/// authorization-server metadata (which takes client ID metadata documents), and a
/// registration endpoint that counts and refuses.
fn auth_server(rules: Rules) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let seen = Arc::new(Seen::default());
    let (served_base, served_seen) = (base.clone(), seen.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let (base, seen) = (served_base.clone(), served_seen.clone());
            std::thread::spawn(move || serve_connection(stream, &base, rules, &seen));
        }
    });
    (base, seen)
}

fn serve_connection(mut stream: TcpStream, base: &str, rules: Rules, seen: &Seen) {
    let Ok(clone) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(clone);
    while let Some((headers, body)) = read_request(&mut reader) {
        let line = headers.lines().next().unwrap_or_default().to_string();
        let token = headers
            .lines()
            .find_map(|l| l.strip_prefix("authorization: bearer "))
            .map(str::trim);
        let takes = |allowed: &[&str]| token.is_some_and(|t| allowed.contains(&t));
        let challenge = format!(
            r#"Bearer error="invalid_token", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp""#
        );
        let refuse = || {
            seen.refused.fetch_add(1, Ordering::SeqCst);
            let header = [("WWW-Authenticate", challenge.as_str())];
            response(
                401,
                "application/json",
                &header,
                br#"{"error":"invalid_token"}"#,
            )
        };
        let json =
            |value: Value| response(200, "application/json", &[], value.to_string().as_bytes());
        let answer = if line.starts_with("post /token ") {
            lock(&seen.token_requests).push(body);
            let (status, text) = rules.token;
            response(status, "application/json", &[], text.as_bytes())
        } else if line.starts_with("post /register ") {
            seen.registrations.fetch_add(1, Ordering::SeqCst);
            response(
                400,
                "application/json",
                &[],
                br#"{"error":"invalid_client_metadata"}"#,
            )
        } else if line.starts_with("get /.well-known/oauth-protected-resource/mcp ") {
            json(
                serde_json::json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
            )
        } else if line.starts_with("get /.well-known/oauth-authorization-server ") {
            json(serde_json::json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "code_challenge_methods_supported": ["S256"],
                "client_id_metadata_document_supported": true,
            }))
        } else if line.starts_with("get /mcp ") || line.starts_with("get /sse ") {
            if !takes(rules.get) {
                refuse()
            } else {
                let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n";
                let first = if line.starts_with("get /sse ") {
                    lock(&seen.legacy_streams).push(stream.try_clone().expect("clone"));
                    "event: endpoint\ndata: /message?sessionId=s-1\n\n".to_string()
                } else {
                    let note = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"from the GET stream"}}"#;
                    format!("event: message\ndata: {note}\n\n")
                };
                let _ = stream.write_all(format!("{head}{first}").as_bytes());
                if line.starts_with("get /mcp ") {
                    seen.get_streams.fetch_add(1, Ordering::SeqCst);
                }
                // The stream stays open until the proxy closes it.
                let _ = reader.read_to_end(&mut Vec::new());
                return;
            }
        } else if !takes(rules.post) {
            refuse()
        } else {
            let request = body.contains("\"id\"") && !body.contains("\"result\"");
            let answer = request.then(|| {
                let id = body_id(&body);
                format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-06-18","capabilities":{{}},"serverInfo":{{"name":"b","version":"1"}}}}}}"#
                )
            });
            if body.contains("\"tools/call\"") {
                seen.tool_calls.fetch_add(1, Ordering::SeqCst);
            }
            match (rules.step_up, body.contains("\"tools/call\"")) {
                (Some(scope), true) => {
                    let challenge = format!(
                        r#"Bearer error="insufficient_scope", scope="{scope}", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp", error_description="Additional permission required""#
                    );
                    let header = [("WWW-Authenticate", challenge.as_str())];
                    response(
                        403,
                        "application/json",
                        &header,
                        br#"{"error":"insufficient_scope"}"#,
                    )
                }
                _ if line.starts_with("post /message?sessionid=s-1 ") => {
                    for mut events in lock(&seen.legacy_streams).iter() {
                        if let Some(answer) = &answer {
                            let _ = write!(events, "event: message\ndata: {answer}\n\n");
                        }
                    }
                    response(202, "text/plain", &[], b"Accepted")
                }
                _ => match answer {
                    Some(answer) => response(200, "application/json", &[], answer.as_bytes()),
                    None => response(202, "application/json", &[], b""),
                },
            }
        };
        if stream.write_all(&answer).is_err() {
            break;
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A proxy session's setting: the server of `Rules`, and the proxy in front of it logging
/// into a temp folder, with a token stored for it in its state folder (gone when the proxy's
/// session ends): `stale-access-token`, refreshable, granted the scope `mcp:tools`.
struct Stored {
    /// The endpoint the proxy is given (`/mcp`, or the legacy transport's `/sse`).
    url: String,
    seen: Arc<Seen>,
    store: TokenStore,
    log_path: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Stored {
    /// The server taking `rules`, the proxy for its `path` with `options`, the stored token
    /// expiring at `expires_at`; the proxy's session.
    fn start(rules: Rules, path: &str, options: &[&str], expires_at: u64) -> (Stored, Session) {
        let (base, seen) = auth_server(rules);
        let url = format!("{base}{path}");
        let tmp = tempfile::tempdir().expect("tempdir");
        let log_path = tmp.path().join("session.jsonl");
        let cmd = ProxyCmd::remote(&url)
            .option(&["--inject", "none"])
            .option(options);
        let store = store_token(&cmd, &url, expires_at);
        let session = Session::spawn(cmd.log_to(&log_path));
        let stored = Stored {
            url,
            seen,
            store,
            log_path,
            _tmp: tmp,
        };
        (stored, session)
    }

    /// Ends `session`: its log, checked to hold no token.
    fn close(&self, session: Session) -> Log {
        let log = session.close();
        assert_no_token(&self.log_path);
        log
    }

    /// Ends `session`, checked to have logged no error and no token.
    fn close_clean(&self, session: Session) {
        let log = self.close(session);
        assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);
    }
}

/// Stores a token for `url` in the state folder of the proxy `cmd`: `stale-access-token`,
/// expiring at `expires_at`, refreshable at the token endpoint beside `url` (`/token`),
/// granted the scope `mcp:tools`.
pub(crate) fn store_token(cmd: &ProxyCmd, url: &str, expires_at: u64) -> TokenStore {
    let state: &Path = cmd.log_path().parent().expect("the proxy's folder");
    let store = TokenStore::in_dir(state.join("ctxopt/auth"));
    let base = &url[..url.rfind('/').expect("a path")];
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
            expires_at: Some(expires_at),
            lifetime: Some(3600),
            scope: Some("mcp:tools".into()),
        })
        .expect("store the token");
    store
}

/// Seconds since the Unix epoch, `ahead` from now.
pub(crate) fn in_seconds(ahead: u64) -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
        + ahead
}

const SECRETS: [&str; 4] = [
    "stale-access-token",
    "first-refresh-token",
    "fresh-access-token",
    "rotated-refresh-token",
];

/// No token in the log at `path`.
fn assert_no_token(path: &Path) {
    let text = std::fs::read_to_string(path).expect("the log");
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} reached the log");
    }
}

/// The one refresh request's form, sorted, checked.
fn assert_one_refresh(seen: &Seen, url: &str) {
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
}

/// The stored token was replaced by the refreshed one, in a 0600 file.
fn assert_kept_fresh(store: &TokenStore, url: &str) {
    let kept = store.load(url).unwrap().expect("the token file");
    assert_eq!(kept.access_token, "fresh-access-token");
    assert_eq!(kept.refresh_token.as_deref(), Some("rotated-refresh-token"));
    assert!(!kept.expired());
    let mode = std::fs::metadata(store.path(url))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

const ONLY_FRESH: &[&str] = &["fresh-access-token"];
const BOTH: &[&str] = &["stale-access-token", "fresh-access-token"];
const STALE: &[&str] = &["stale-access-token"];
const REFRESHED: (u16, &str) = (200, FRESH_TOKENS);

/// The server taking `post` and `get`, its token endpoint answering `token`, no step-up.
fn rules(
    post: &'static [&'static str],
    get: &'static [&'static str],
    token: (u16, &'static str),
) -> Rules {
    Rules {
        post,
        get,
        token,
        step_up: None,
    }
}

#[test]
fn a_401_refreshes_the_stored_token_once_and_the_request_is_sent_again() {
    // An expired token (the proxy refreshes it ahead: no 401) would not show the 401 path:
    // this one the server has revoked before its time.
    let rules = rules(ONLY_FRESH, ONLY_FRESH, REFRESHED);
    let (t, mut session) = Stored::start(rules, "/mcp", &[], in_seconds(3600));
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "b", "{answer}");
    let answer = session.ask(2, "ping");
    assert!(answer.get("result").is_some(), "{answer}");
    assert_kept_fresh(&t.store, &t.url);
    t.close_clean(session);
    // One refusal (the stale token), one refresh, with the refresh token and the resource.
    assert_eq!(t.seen.refused.load(Ordering::SeqCst), 1);
    assert_one_refresh(&t.seen, &t.url);
}

#[test]
fn a_refused_refresh_answers_every_request_with_the_login_command() {
    let rules = rules(ONLY_FRESH, ONLY_FRESH, REVOKED);
    let (t, mut session) = Stored::start(rules, "/mcp", &[], 1);
    let cause = format!("run: ctxopt auth login {}", t.url);
    let first = session.ask(1, "initialize");
    error_naming(&first, &cause);
    error_naming(&first, "invalid_grant (the refresh token was revoked)");
    assert_eq!(first["error"]["data"]["status"], 401, "{first}");
    error_naming(&session.ask(2, "ping"), &cause);
    let log = t.close(session);
    assert_logged(&log, &cause, 2);
    // The refresh was tried twice in all: once ahead of the expiry (refused, the token sent
    // as it was), once on the 401; not once per request.
    assert_eq!(lock(&t.seen.token_requests).len(), 2);
}

#[test]
fn a_token_that_expires_within_a_minute_is_refreshed_before_the_request_pays_a_401() {
    let rules = rules(ONLY_FRESH, ONLY_FRESH, REFRESHED);
    let (t, mut session) = Stored::start(rules, "/mcp", &[], in_seconds(30));
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "b", "{answer}");
    assert!(session.ask(2, "ping").get("result").is_some());
    assert_kept_fresh(&t.store, &t.url);
    t.close_clean(session);
    // Not one 401: the first request went with the refreshed token.
    assert_eq!(t.seen.refused.load(Ordering::SeqCst), 0);
    assert_one_refresh(&t.seen, &t.url);
}

/// `initialize`, then `notifications/initialized`: the proxy opens the standalone GET
/// stream.
fn initialized(session: &mut Session) {
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "b", "{answer}");
    session.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
}

#[test]
fn a_401_on_the_get_stream_refreshes_the_token_and_the_stream_opens() {
    // The server takes the stale token on POSTs, not on the GET: the GET's 401 is cured.
    let rules = rules(BOTH, ONLY_FRESH, REFRESHED);
    let (t, mut session) = Stored::start(rules, "/mcp", &[], in_seconds(3600));
    initialized(&mut session);
    let opened = poll_until(Duration::from_secs(60), Duration::from_millis(10), || {
        (t.seen.get_streams.load(Ordering::SeqCst) > 0).then_some(())
    });
    assert!(opened.is_some(), "the GET stream never opened");
    let note = session.next();
    assert_eq!(note["params"]["data"], "from the GET stream", "{note}");
    assert_kept_fresh(&t.store, &t.url);
    t.close_clean(session);
    assert_eq!(t.seen.refused.load(Ordering::SeqCst), 1);
    assert_one_refresh(&t.seen, &t.url);
}

#[test]
fn a_401_on_the_get_stream_that_cannot_be_cured_is_logged_with_the_login_command() {
    let rules = rules(STALE, ONLY_FRESH, REVOKED);
    let (t, mut session) = Stored::start(rules, "/mcp", &[], in_seconds(3600));
    initialized(&mut session);
    let cause = format!("the GET stream for server messages: HTTP 401: refreshing the expired token failed: the authorization server refused: invalid_grant (the refresh token was revoked); run: ctxopt auth login {}", t.url);
    session.stderr_line(&cause);
    // The proxy goes on: the next request is answered.
    assert!(session.ask(2, "ping").get("result").is_some());
    let log = t.close(session);
    assert!(
        log.trailer.errors.iter().any(|e| e.contains(&cause)),
        "{:?}",
        log.trailer.errors
    );
    assert_eq!(lock(&t.seen.token_requests).len(), 1);
}

const LEGACY: [&str; 2] = ["--transport", "sse"];

#[test]
fn the_legacy_transport_sends_the_token_and_a_401_on_its_get_is_refreshed() {
    let rules = rules(ONLY_FRESH, ONLY_FRESH, REFRESHED);
    let (t, mut session) = Stored::start(rules, "/sse", &LEGACY, in_seconds(3600));
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "b", "{answer}");
    assert!(session.ask(2, "ping").get("result").is_some());
    assert_kept_fresh(&t.store, &t.url);
    t.close_clean(session);
    // The GET's 401, one refresh; the POSTs (to the endpoint) went with the new token.
    assert_eq!(t.seen.refused.load(Ordering::SeqCst), 1);
    assert_one_refresh(&t.seen, &t.url);
}

#[test]
fn a_401_on_a_legacy_post_is_refreshed_and_the_message_sent_again() {
    let rules = rules(ONLY_FRESH, BOTH, REFRESHED);
    let (t, mut session) = Stored::start(rules, "/sse", &LEGACY, in_seconds(3600));
    let answer = session.ask(1, "initialize");
    assert_eq!(answer["result"]["serverInfo"]["name"], "b", "{answer}");
    t.close_clean(session);
    assert_eq!(t.seen.refused.load(Ordering::SeqCst), 1);
    assert_one_refresh(&t.seen, &t.url);
}

#[test]
fn a_legacy_get_refused_for_good_answers_with_the_login_command() {
    let rules = rules(ONLY_FRESH, ONLY_FRESH, REVOKED);
    let (t, mut session) = Stored::start(rules, "/sse", &LEGACY, in_seconds(3600));
    let cause = format!("run: ctxopt auth login {}", t.url);
    let first = session.ask(1, "initialize");
    error_naming(&first, &cause);
    assert_eq!(first["error"]["data"]["status"], 401, "{first}");
    assert_eq!(first["error"]["data"]["transport"], "sse", "{first}");
    let log = t.close(session);
    assert_logged(&log, &cause, 1);
}

#[test]
fn a_403_insufficient_scope_names_the_login_command_with_every_scope_and_is_not_retried() {
    let rules = Rules {
        step_up: Some("files:write"),
        ..rules(STALE, STALE, REFRESHED)
    };
    let (t, mut session) = Stored::start(rules, "/mcp", &[], in_seconds(3600));
    session.ask(1, "initialize");
    let cause = format!(
        "HTTP 403: insufficient_scope: the server requires the scope \"files:write\"; run: ctxopt auth login {} --scope 'mcp:tools files:write'",
        t.url
    );
    let refused = session.ask(2, "tools/call");
    error_naming(&refused, &cause);
    assert_eq!(refused["error"]["data"]["status"], 403, "{refused}");
    // The session goes on.
    assert!(session.ask(3, "ping").get("result").is_some());
    let log = t.close(session);
    assert_logged(&log, &cause, 1);
    // Sent once: no retry, no refresh.
    assert_eq!(t.seen.tool_calls.load(Ordering::SeqCst), 1);
    assert!(lock(&t.seen.token_requests).is_empty());
}

/// `ctxopt auth login` with a client ID metadata document: the server takes them, so the
/// document's URL is the client id (no registration), and the scopes asked for are those
/// already granted and `--scope`'s. The test plays the browser after the approval: it
/// follows the redirect to the loopback listener with a code and the request's `state`.
#[test]
fn login_with_a_client_metadata_document_uses_its_url_as_the_client_id() {
    let (base, seen) = auth_server(rules(ONLY_FRESH, ONLY_FRESH, REFRESHED));
    let url = format!("{base}/mcp");
    let document = "https://ctxopt.example/oauth/client.json";
    let state = tempfile::tempdir().expect("tempdir");
    let store = TokenStore::in_dir(state.path().join("ctxopt/auth"));
    let mut granted = Credentials {
        url: url.clone(),
        resource: url.clone(),
        issuer: base.clone(),
        token_endpoint: format!("{base}/token"),
        client_id: "old-client".into(),
        client_secret: None,
        access_token: "stale-access-token".into(),
        refresh_token: None,
        expires_at: None,
        lifetime: None,
        scope: Some("mcp:tools".into()),
    };
    store.save(&granted).expect("store the token");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .args(["auth", "login", &url, "--no-browser", "--timeout", "60"])
        .args(["--client-metadata-url", document, "--scope", "files:write"])
        .env("XDG_STATE_HOME", state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ctxopt auth login");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let page = loop {
        let mut line = String::new();
        assert!(
            stdout.read_line(&mut line).expect("login's output") > 0,
            "no page"
        );
        if line.starts_with("http") {
            break line.trim().to_string();
        }
    };
    let query: Vec<(String, String)> = page
        .split_once('?')
        .expect("a query")
        .1
        .split('&')
        .map(|pair| {
            let (name, value) = pair.split_once('=').expect("name=value");
            let value = percent_encoding::percent_decode_str(value).decode_utf8_lossy();
            (name.to_string(), value.into_owned())
        })
        .collect();
    let param = |name: &str| {
        query
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no {name} in {page}"))
    };
    assert!(page.starts_with(&format!("{base}/authorize?")), "{page}");
    assert_eq!(param("client_id"), document);
    assert_eq!(param("scope"), "mcp:tools files:write");
    let redirect = format!(
        "{}?code=the-code&state={}",
        param("redirect_uri"),
        param("state")
    );
    let mut landing = ureq::get(&redirect).call().expect("the redirect");
    let text = landing
        .body_mut()
        .read_to_string()
        .expect("the landing page");
    assert!(text.contains("ctxopt is authorized"), "{text}");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("login's output");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("login's stderr");
    assert!(
        child.wait().expect("login ends").success(),
        "{rest}\n{stderr}"
    );
    assert!(
        stderr.contains("client: its client ID metadata document; scope: mcp:tools files:write"),
        "{stderr}"
    );
    assert_eq!(
        seen.registrations.load(Ordering::SeqCst),
        0,
        "no registration"
    );
    let forms = lock(&seen.token_requests).clone();
    assert_eq!(forms.len(), 1, "{forms:?}");
    let sent_id = forms[0]
        .split('&')
        .find_map(|pair| pair.strip_prefix("client_id="))
        .map(|v| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned()
        });
    assert_eq!(sent_id.as_deref(), Some(document), "{}", forms[0]);
    assert!(
        forms[0].contains("grant_type=authorization_code"),
        "{}",
        forms[0]
    );
    granted = store.load(&url).unwrap().expect("the new token file");
    assert_eq!(granted.client_id, document);
    assert_eq!(granted.access_token, "fresh-access-token");
    // The token answer named no scope: the scope asked for was granted.
    assert_eq!(granted.scope.as_deref(), Some("mcp:tools files:write"));
    let mode = std::fs::metadata(store.path(&url))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
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
        lifetime: None,
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
