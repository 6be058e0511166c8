//! The proxy's side of the flow: the token `ctxopt auth login` stored for the server goes
//! with every request (`Authorization: Bearer`); a 401 makes the proxy look for a newer token
//! on disk (a login in another terminal), else refresh it (once), and retry the request once;
//! when neither works the request's error names the login command.

use std::sync::Mutex;

use ureq::Agent;

use super::login_command;
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
    /// Why the token of a generation could not be renewed (not tried again).
    failed: Option<(u64, String)>,
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

    /// The token in use now: a request notes it before it is sent.
    pub fn generation(&self) -> u64 {
        lock(&self.state).generation
    }

    /// The `Authorization` header's value, when a token is stored.
    pub fn header(&self) -> Option<String> {
        lock(&self.state)
            .credentials
            .as_ref()
            .map(|c| format!("Bearer {}", c.access_token))
    }

    /// `first`, the result of a request sent with the token of `generation`; when it is a
    /// 401, the token renewed and the request sent `again` (once). A 401 that cannot be
    /// cured becomes [`Fault::Unauthorized`], naming the login command.
    pub fn retry_unauthorized<T>(
        &self,
        generation: u64,
        first: Result<T, Failed>,
        again: impl FnOnce() -> Result<T, Failed>,
    ) -> Result<T, Failed> {
        if !is_401(&first) {
            return first;
        }
        if let Err(reason) = self.renew(generation) {
            return Err((self.unauthorized(reason), Some(401)));
        }
        let second = again();
        if is_401(&second) {
            let reason = "the server refused the renewed token too".to_string();
            return Err((self.unauthorized(reason), Some(401)));
        }
        second
    }

    fn unauthorized(&self, reason: String) -> Fault {
        Fault::Unauthorized {
            reason,
            login: login_command(&self.url),
        }
    }

    /// Makes the token newer than `generation`'s: another request's renewal, a newer file, or
    /// a refresh. The reason when it cannot.
    fn renew(&self, generation: u64) -> Result<(), String> {
        let mut state = lock(&self.state);
        if state.generation != generation {
            return Ok(());
        }
        let on_disk = match self.store.as_ref().map(|s| s.load(&self.url)) {
            Some(Ok(found)) => found,
            Some(Err(e)) => return Err(format!("the stored token cannot be read: {e}")),
            None => None,
        };
        let current = state.credentials.as_ref().map(|c| &c.access_token);
        if let Some(found) = on_disk.filter(|f| Some(&f.access_token) != current) {
            state.credentials = Some(found);
            state.generation += 1;
            return Ok(());
        }
        if let Some((failed, reason)) = &state.failed {
            if *failed == generation {
                return Err(reason.clone());
            }
        }
        let result = self.refresh(state.credentials.as_ref());
        match result {
            Ok(renewed) => {
                if let Some(store) = &self.store {
                    if let Err(e) = store.save(&renewed) {
                        tracing::warn!(
                            "ctxopt-proxy: {}: the refreshed token could not be kept: {e}",
                            display_url(&self.url)
                        );
                    }
                }
                tracing::info!(
                    "ctxopt-proxy: {}: the access token was refreshed",
                    display_url(&self.url)
                );
                state.credentials = Some(renewed);
                state.generation += 1;
                Ok(())
            }
            Err(reason) => {
                tracing::warn!("ctxopt-proxy: {}: {reason}", display_url(&self.url));
                state.failed = Some((generation, reason.clone()));
                Err(reason)
            }
        }
    }

    /// `credentials` with the tokens its refresh token gets.
    fn refresh(&self, credentials: Option<&Credentials>) -> Result<Credentials, String> {
        let Some(credentials) = credentials else {
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
        match request(
            &self.agent,
            &credentials.token_endpoint,
            &credentials.client(),
            grant,
        ) {
            Ok(tokens) => {
                let mut renewed = credentials.clone();
                renewed.take(tokens);
                Ok(renewed)
            }
            Err(e) => Err(format!("refreshing the expired token failed: {e}")),
        }
    }
}

fn is_401<T>(result: &Result<T, Failed>) -> bool {
    matches!(result, Err((Fault::Status { status: 401, .. }, _)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upstream::http::auth::store::tests::sample;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;

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
            let mut reader = BufReader::new(stream.try_clone().unwrap());
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
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            String::from_utf8(form).unwrap()
        });
        (url, server)
    }

    #[test]
    fn a_401_refreshes_the_token_once_with_the_resource_and_retries() {
        let (endpoint, server) = token_endpoint(
            200,
            r#"{"access_token":"fresh-access","token_type":"bearer","expires_in":3600}"#,
        );
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().to_path_buf());
        let mut stored = sample("https://h.example/mcp");
        stored.token_endpoint = endpoint;
        stored.expires_at = Some(1);
        store.save(&stored).unwrap();
        let auth = ProxyAuth::new("https://h.example/mcp", Some(store.clone()), agent());
        assert_eq!(auth.header().as_deref(), Some("Bearer access-secret-value"));
        let generation = auth.generation();
        let mut sent_again = 0;
        let result = auth.retry_unauthorized(generation, status_401(), || {
            sent_again += 1;
            Ok("answered")
        });
        assert_eq!(result.unwrap(), "answered");
        assert_eq!(sent_again, 1);
        let form = server.join().unwrap();
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
        assert_eq!(auth.header().as_deref(), Some("Bearer fresh-access"));
        let kept = store.load("https://h.example/mcp").unwrap().unwrap();
        assert_eq!(kept.access_token, "fresh-access");
        // No new refresh token came: the old one is kept.
        assert_eq!(kept.refresh_token.as_deref(), Some("refresh-secret-value"));
        assert!(!kept.expired());
        // A request sent with the old token meanwhile retries with the new one, no refresh.
        let again = auth.retry_unauthorized(generation, status_401(), || Ok("second"));
        assert_eq!(again.unwrap(), "second");
    }

    #[test]
    fn a_refused_refresh_names_the_login_command_and_no_token() {
        let (endpoint, server) = token_endpoint(
            400,
            r#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#,
        );
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().to_path_buf());
        let mut stored = sample("https://h.example/mcp");
        stored.token_endpoint = endpoint;
        store.save(&stored).unwrap();
        let auth = ProxyAuth::new("https://h.example/mcp", Some(store), agent());
        let generation = auth.generation();
        let mut sent_again = false;
        let (fault, status) = auth
            .retry_unauthorized(generation, status_401(), || {
                sent_again = true;
                Ok("no")
            })
            .unwrap_err();
        server.join().unwrap();
        assert!(!sent_again);
        assert_eq!(status, Some(401));
        let message = fault.to_string();
        assert_eq!(
            message,
            "HTTP 401: refreshing the expired token failed: the authorization server refused: invalid_grant (refresh token revoked); run: ctxopt auth login https://h.example/mcp"
        );
        assert!(!message.contains("secret-value"));
        // Every later request gets the same answer without another refresh (the endpoint
        // served one request only: a second would hang or fail differently).
        let (later, _) = auth
            .retry_unauthorized(generation, status_401(), || Ok("no"))
            .unwrap_err();
        assert_eq!(later, fault);
    }

    #[test]
    fn without_a_stored_token_a_401_names_the_login_command() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().to_path_buf());
        let auth = ProxyAuth::new("https://h.example/mcp?team=a b", Some(store), agent());
        assert_eq!(auth.header(), None);
        let (fault, _) = auth
            .retry_unauthorized(0, status_401(), || Ok("no"))
            .unwrap_err();
        assert_eq!(
            fault.to_string(),
            "HTTP 401: the server needs authorization and no token is stored for it; run: ctxopt auth login 'https://h.example/mcp?team=a b'"
        );
        // Other results pass untouched.
        let ok: Result<&str, Failed> = Ok("fine");
        assert_eq!(auth.retry_unauthorized(0, ok, || Ok("no")).unwrap(), "fine");
    }
}
