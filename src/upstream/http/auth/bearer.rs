//! The proxy's side of the flow: the token `ctxopt auth login` stored for the server goes
//! with every request (`Authorization: Bearer`). A token about to expire is renewed before
//! the request is sent; a 401 makes the proxy look for a newer token on disk (a login in
//! another terminal), else refresh it (once), and send the request once more; when neither
//! works the request's error names the login command. One renewal at a time: the requests
//! that need it meanwhile wait for its token.

use std::sync::Mutex;

use ureq::Agent;

use super::login_command;
use super::scope::union;
use super::store::{Credentials, TokenStore};
use super::token::{refresh_grant, request};
use crate::sync::lock;
use crate::upstream::http::config::{display_url, HttpConfig};
use crate::upstream::http::fault::Fault;

/// A fault's HTTP status, as the connection reports it.
type Failed = (Fault, Option<u16>);

/// The stored token of one server, as the proxy uses it.
pub struct ProxyAuth {
    url: String,
    store: Option<TokenStore>,
    agent: Agent,
    state: Mutex<State>,
}

impl std::fmt::Debug for ProxyAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyAuth")
            .field("url", &display_url(&self.url))
            .field("store", &self.store)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct State {
    credentials: Option<Credentials>,
    /// Counts the tokens taken: a request sent with an older one retries with the current.
    generation: u64,
    /// Why the token of a generation could not be renewed after a 401 (not tried again).
    failed: Option<(u64, String)>,
    /// The generation whose token was renewed ahead of its expiry, or tried to be (once per
    /// token: a failure leaves the token in use until the server refuses it).
    ahead: Option<u64>,
}

/// Sends a request through `auth` (see [`ProxyAuth::send`]), or as it is without one.
pub(crate) fn authorized<T>(
    auth: Option<&ProxyAuth>,
    mut send: impl FnMut(Option<&str>) -> Result<T, Failed>,
) -> Result<T, Failed> {
    match auth {
        Some(auth) => auth.send(send),
        None => send(None),
    }
}

impl ProxyAuth {
    /// The stored token for `config`'s server, from the default token folder; `None` when
    /// the user gave an `Authorization` header (theirs is sent, and a 401 is theirs to fix).
    pub fn for_config(config: &HttpConfig, agent: Agent) -> Option<ProxyAuth> {
        let given = config
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        (!given).then(|| ProxyAuth::new(&config.url, TokenStore::default_place(), agent))
    }

    /// The token kept in `store` for the server at `url`.
    pub fn new(url: &str, store: Option<TokenStore>, agent: Agent) -> ProxyAuth {
        let credentials = store.as_ref().and_then(|s| match s.load(url) {
            Ok(credentials) => credentials,
            Err(e) => {
                tracing::warn!(
                    "ctxopt-proxy: the stored token for {}: {e}",
                    display_url(url)
                );
                None
            }
        });
        ProxyAuth {
            url: url.to_string(),
            store,
            agent,
            state: Mutex::new(State {
                credentials,
                ..State::default()
            }),
        }
    }

    /// Sends a request with `send`, given the `Authorization` header's value (when a token is
    /// stored): the token renewed first when it expires soon; on a 401, renewed and the
    /// request sent once more. A 401 that cannot be cured becomes
    /// [`Fault::Unauthorized`], naming the login command. `send` must not have handed on
    /// anything of an answer it reports as a 401 (a 401 comes before any message).
    pub(crate) fn send<T>(
        &self,
        mut send: impl FnMut(Option<&str>) -> Result<T, Failed>,
    ) -> Result<T, Failed> {
        let (generation, header) = self.current();
        let first = send(header.as_deref());
        if !is_401(&first) {
            return first;
        }
        if let Err(reason) = self.renew(generation) {
            return Err((self.unauthorized(reason), Some(401)));
        }
        let (_, header) = self.current();
        let second = send(header.as_deref());
        if is_401(&second) {
            let reason = "the server refused the renewed token too".to_string();
            return Err((self.unauthorized(reason), Some(401)));
        }
        second
    }

    /// The generation of the token to send and its header value; a token that expires
    /// soon is renewed first (once), while the requests that need it wait.
    fn current(&self) -> (u64, Option<String>) {
        let mut state = lock(&self.state);
        let generation = state.generation;
        let soon = state
            .credentials
            .as_ref()
            .is_some_and(|c| c.refresh_token.is_some() && c.expires_soon());
        if soon && state.ahead != Some(generation) {
            state.ahead = Some(generation);
            let renewed = match self.newer_on_disk(&mut state) {
                Ok(true) => Ok(()),
                Ok(false) => self.refresh(&mut state, "ahead of its expiry"),
                Err(reason) => Err(reason),
            };
            if let Err(reason) = renewed {
                tracing::warn!(
                    "ctxopt-proxy: {}: {reason}; the token is sent until the server refuses it",
                    display_url(&self.url)
                );
            }
        }
        (state.generation, bearer(&state))
    }

    /// The `Authorization` header's value for the token in use, without renewing it.
    pub(crate) fn header(&self) -> Option<String> {
        bearer(&lock(&self.state))
    }

    fn unauthorized(&self, reason: String) -> Fault {
        Fault::Unauthorized {
            reason,
            login: login_command(&self.url, None),
        }
    }

    /// The command that gets a token with the scopes granted and `challenged` (a 403
    /// `insufficient_scope` challenge's).
    pub(crate) fn step_up_command(&self, challenged: Option<&str>) -> String {
        let state = lock(&self.state);
        let granted = state.credentials.as_ref().and_then(|c| c.scope.as_deref());
        login_command(&self.url, union(granted, challenged).as_deref())
    }

    /// Makes the token newer than `generation`'s: another request's renewal, a newer file, or
    /// a refresh. The reason when it cannot.
    fn renew(&self, generation: u64) -> Result<(), String> {
        let mut state = lock(&self.state);
        if state.generation != generation {
            return Ok(());
        }
        if self.newer_on_disk(&mut state)? {
            return Ok(());
        }
        if let Some((failed, reason)) = &state.failed {
            if *failed == generation {
                return Err(reason.clone());
            }
        }
        self.refresh(&mut state, "after a 401").map_err(|reason| {
            tracing::warn!("ctxopt-proxy: {}: {reason}", display_url(&self.url));
            state.failed = Some((generation, reason.clone()));
            reason
        })
    }

    /// Takes the token in the file when it is not the one in use (a login in another
    /// terminal, or another proxy's refresh); `true` when it did.
    fn newer_on_disk(&self, state: &mut State) -> Result<bool, String> {
        let on_disk = match self.store.as_ref().map(|s| s.load(&self.url)) {
            Some(Ok(found)) => found,
            Some(Err(e)) => return Err(format!("the stored token cannot be read: {e}")),
            None => None,
        };
        let current = state.credentials.as_ref().map(|c| &c.access_token);
        match on_disk.filter(|f| Some(&f.access_token) != current) {
            Some(found) => {
                state.credentials = Some(found);
                state.generation += 1;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// Exchanges the refresh token for new tokens, written back to the file (0600, replaced
    /// whole) and taken; the reason when it cannot.
    fn refresh(&self, state: &mut State, when: &str) -> Result<(), String> {
        let Some(credentials) = state.credentials.as_ref() else {
            return Err("the server needs authorization and no token is stored for it".into());
        };
        let Some(refresh_token) = &credentials.refresh_token else {
            return Err(format!(
                "the server refused the stored token ({}) and there is no refresh token",
                if credentials.expired() {
                    "it has expired"
                } else {
                    "expired or revoked"
                }
            ));
        };
        let grant = refresh_grant(refresh_token, &credentials.resource);
        let tokens = request(
            &self.agent,
            &credentials.token_endpoint,
            &credentials.client(),
            grant,
        )
        .map_err(|e| format!("refreshing the expired token failed: {e}"))?;
        let mut renewed = credentials.clone();
        renewed.take(tokens);
        if let Some(store) = &self.store {
            if let Err(e) = store.save(&renewed) {
                tracing::warn!(
                    "ctxopt-proxy: {}: the refreshed token could not be kept: {e}",
                    display_url(&self.url)
                );
            }
        }
        tracing::info!(
            "ctxopt-proxy: {}: the access token was refreshed {when}",
            display_url(&self.url)
        );
        state.credentials = Some(renewed);
        state.generation += 1;
        Ok(())
    }
}

/// The `Authorization` header's value for the token of `state`, when there is one.
fn bearer(state: &State) -> Option<String> {
    state
        .credentials
        .as_ref()
        .map(|c| format!("Bearer {}", c.access_token))
}

fn is_401<T>(result: &Result<T, Failed>) -> bool {
    matches!(result, Err((Fault::Status { status: 401, .. }, _)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::http::auth::store::now;
    use crate::upstream::http::auth::store::tests::sample;
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::os::unix::fs::PermissionsExt;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn agent() -> Agent {
        Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into()
    }

    fn status_401() -> Result<&'static str, Failed> {
        Err((
            Fault::Status {
                status: 401,
                body: String::new(),
            },
            Some(401),
        ))
    }

    /// A token endpoint that answers one request with `status` and `body`, and hands back
    /// the form it was sent.
    fn token_endpoint(
        status: u16,
        body: &'static str,
    ) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let form = read_form(&mut BufReader::new(stream.try_clone().unwrap()));
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            form
        });
        (url, server)
    }

    /// Reads one request, up to the end of its body: the body.
    fn read_form(reader: &mut impl BufRead) -> String {
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            if line == "\r\n" {
                break;
            }
        }
        let mut form = vec![0; length];
        reader.read_exact(&mut form).unwrap();
        String::from_utf8(form).unwrap()
    }

    /// `send` for a request that the server refuses with a 401 while `refuses` says so; the
    /// header of each attempt is noted in `sent`.
    fn server<'s>(
        sent: &'s mut Vec<Option<String>>,
        refuses: impl Fn(Option<&str>) -> bool + 's,
    ) -> impl FnMut(Option<&str>) -> Result<&'static str, Failed> + 's {
        move |header| {
            sent.push(header.map(str::to_string));
            if refuses(header) {
                status_401()
            } else {
                Ok("answered")
            }
        }
    }

    /// A [`ProxyAuth`] for `https://h.example/mcp` with [`sample`]'s token stored, refreshed
    /// at `endpoint` and expiring `ahead` seconds from now; its store, in the folder handed
    /// back.
    fn stored_token(endpoint: String, ahead: u64) -> (ProxyAuth, TokenStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().to_path_buf());
        let mut stored = sample("https://h.example/mcp");
        stored.token_endpoint = endpoint;
        stored.expires_at = Some(now() + ahead);
        store.save(&stored).unwrap();
        let auth = ProxyAuth::new("https://h.example/mcp", Some(store.clone()), agent());
        (auth, store, dir)
    }

    #[test]
    fn a_401_refreshes_the_token_once_with_the_resource_and_retries() {
        let (endpoint, server_thread) = token_endpoint(
            200,
            r#"{"access_token":"fresh-access","token_type":"bearer","expires_in":3600}"#,
        );
        let (auth, store, _dir) = stored_token(endpoint, 3600);
        let mut sent = Vec::new();
        let result = auth.send(server(&mut sent, |h| h != Some("Bearer fresh-access")));
        assert_eq!(result.unwrap(), "answered");
        assert_eq!(
            sent,
            [
                Some("Bearer access-secret-value".to_string()),
                Some("Bearer fresh-access".to_string())
            ]
        );
        let form = server_thread.join().unwrap();
        let mut pairs: Vec<&str> = form.split('&').collect();
        pairs.sort_unstable();
        assert_eq!(
            pairs,
            [
                "client_id=client-1",
                "grant_type=refresh_token",
                "refresh_token=refresh-secret-value",
                "resource=https%3A%2F%2Fh.example%2Fmcp",
            ]
        );
        let kept = store.load("https://h.example/mcp").unwrap().unwrap();
        assert_eq!(kept.access_token, "fresh-access");
        // No new refresh token came: the old one is kept.
        assert_eq!(kept.refresh_token.as_deref(), Some("refresh-secret-value"));
        assert!(!kept.expired());
        // A request sent with the old token meanwhile is sent again with the new one, with
        // no refresh (the endpoint served one request only: a second would fail).
        assert_eq!(auth.renew(0), Ok(()));
        assert_eq!(auth.current(), (1, Some("Bearer fresh-access".to_string())));
    }

    #[test]
    fn a_refused_refresh_names_the_login_command_and_no_token() {
        let (endpoint, server_thread) = token_endpoint(
            400,
            r#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#,
        );
        let (auth, _store, _dir) = stored_token(endpoint, 3600);
        let mut sent = Vec::new();
        let (fault, status) = auth.send(server(&mut sent, |_| true)).unwrap_err();
        server_thread.join().unwrap();
        assert_eq!(sent.len(), 1, "not sent again");
        assert_eq!(status, Some(401));
        let message = fault.to_string();
        assert_eq!(
            message,
            "HTTP 401: refreshing the expired token failed: the authorization server refused: invalid_grant (refresh token revoked); run: ctxopt auth login https://h.example/mcp"
        );
        assert!(!message.contains("secret-value"));
        // Every later request gets the same answer without another refresh (the endpoint
        // served one request only: a second would hang or fail differently).
        let (later, _) = auth.send(server(&mut sent, |_| true)).unwrap_err();
        assert_eq!(later, fault);
    }

    #[test]
    fn without_a_stored_token_a_401_names_the_login_command() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().to_path_buf());
        let auth = ProxyAuth::new("https://h.example/mcp?team=a b", Some(store), agent());
        let mut sent = Vec::new();
        let (fault, _) = auth.send(server(&mut sent, |_| true)).unwrap_err();
        assert_eq!(sent, [None]);
        assert_eq!(
            fault.to_string(),
            "HTTP 401: the server needs authorization and no token is stored for it; run: ctxopt auth login 'https://h.example/mcp?team=a b'"
        );
        // Other results pass untouched.
        assert_eq!(auth.send(|_| Ok("fine")).unwrap(), "fine");
    }

    #[test]
    fn a_token_that_expires_soon_is_refreshed_before_the_request_is_sent() {
        let (endpoint, server_thread) = token_endpoint(
            200,
            r#"{"access_token":"fresh-access","token_type":"Bearer","expires_in":3600,"refresh_token":"rotated"}"#,
        );
        let (auth, store, _dir) = stored_token(endpoint, 30);
        let mut sent = Vec::new();
        let result = auth.send(server(&mut sent, |h| h != Some("Bearer fresh-access")));
        assert_eq!(result.unwrap(), "answered");
        // No request paid a 401: the first one went with the new token.
        assert_eq!(sent, [Some("Bearer fresh-access".to_string())]);
        assert!(server_thread
            .join()
            .unwrap()
            .contains("grant_type=refresh_token"));
        let kept = store.load("https://h.example/mcp").unwrap().unwrap();
        assert_eq!(kept.access_token, "fresh-access");
        assert_eq!(kept.refresh_token.as_deref(), Some("rotated"));
        let mode = std::fs::metadata(store.path("https://h.example/mcp"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Nothing but the token file in the folder: it was replaced whole.
        assert_eq!(std::fs::read_dir(store.dir()).unwrap().count(), 1);
    }

    #[test]
    fn a_failed_refresh_ahead_sends_the_token_it_has_and_is_not_tried_at_every_request() {
        let (endpoint, refreshes) = counting_endpoint(503, "down", Gate::new(0));
        let (auth, _store, _dir) = stored_token(endpoint, 30);
        let mut sent = Vec::new();
        for _ in 0..3 {
            assert_eq!(auth.send(server(&mut sent, |_| false)).unwrap(), "answered");
        }
        assert_eq!(
            sent,
            vec![Some("Bearer access-secret-value".to_string()); 3]
        );
        assert_eq!(refreshes.load(Ordering::SeqCst), 1);
    }

    /// Threads that have begun, and how many must have before a [`counting_endpoint`]
    /// answers.
    struct Gate {
        begun: Mutex<usize>,
        changed: std::sync::Condvar,
        needed: usize,
    }

    impl Gate {
        fn new(needed: usize) -> Arc<Gate> {
            Arc::new(Gate {
                begun: Mutex::new(0),
                changed: std::sync::Condvar::new(),
                needed,
            })
        }

        fn begin(&self) {
            *lock(&self.begun) += 1;
            self.changed.notify_all();
        }

        /// Waits (30 s at most) for the threads needed.
        fn wait(&self) {
            let guard = lock(&self.begun);
            let limit = std::time::Duration::from_secs(30);
            let _ = self
                .changed
                .wait_timeout_while(guard, limit, |n| *n < self.needed)
                .unwrap();
        }
    }

    /// A token endpoint that answers every request with `status` and `body` once `gate`'s
    /// threads have begun; the number of requests it got.
    fn counting_endpoint(
        status: u16,
        body: &'static str,
        gate: Arc<Gate>,
    ) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}/token", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let counted = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let mut stream = stream.unwrap();
                read_form(&mut BufReader::new(stream.try_clone().unwrap()));
                counted.fetch_add(1, Ordering::SeqCst);
                gate.wait();
                let _ = write!(
                    stream,
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        (endpoint, requests)
    }

    /// Requests sent at once with a token that expires soon: one refresh, every request
    /// with its token. The token endpoint answers only once every request has begun, so the
    /// others ask for the token while the refresh is under way.
    #[test]
    fn concurrent_requests_share_one_refresh() {
        const REQUESTS: usize = 6;
        let gate = Gate::new(REQUESTS);
        let (endpoint, refreshes) = counting_endpoint(
            200,
            r#"{"access_token":"fresh-access","token_type":"Bearer","expires_in":3600}"#,
            gate.clone(),
        );
        let (auth, _store, _dir) = stored_token(endpoint, 10);
        let auth = Arc::new(auth);
        let threads: Vec<_> = (0..REQUESTS)
            .map(|_| {
                let (auth, gate) = (auth.clone(), gate.clone());
                std::thread::spawn(move || {
                    gate.begin();
                    auth.send(|header| Ok::<_, Failed>(header.map(str::to_string)))
                        .unwrap()
                })
            })
            .collect();
        for thread in threads {
            assert_eq!(
                thread.join().unwrap().as_deref(),
                Some("Bearer fresh-access")
            );
        }
        assert_eq!(refreshes.load(Ordering::SeqCst), 1);
    }
}
