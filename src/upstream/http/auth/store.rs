//! Tokens at rest: one small JSON file per server, `<sha256 of its canonical URL, 24 hex
//! digits>.json` in `<state dir>/ctxopt/auth/` (the folder of the session store and of wrap's
//! records), mode 0600 in a 0700 folder, replaced whole. Never logged: [`Credentials`]' Debug
//! shows no token.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::metadata::canonical_resource;
use super::registration::Client;
use super::token::TokenResponse;
use super::AuthError;

/// What is kept for one server: its tokens, and what refreshing them needs.
#[derive(Clone, Serialize, Deserialize)]
pub struct Credentials {
    /// The server's URL as `ctxopt auth login` was given it.
    pub url: String,
    /// The resource the tokens are for (RFC 8707).
    pub resource: String,
    /// The authorization server's issuer.
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The client id ctxopt has there.
    pub client_id: String,
    /// The client's secret, when the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The access token.
    pub access_token: String,
    /// The refresh token, when the server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires (seconds since the Unix epoch), when the server said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The access token's lifetime in seconds (the token answer's `expires_in`), when the
    /// server said: a short-lived token is refreshed ahead by half of it at most.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifetime: Option<u64>,
    /// The scopes granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl std::fmt::Debug for Credentials {
    // The tokens and the secret are never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("url", &self.url)
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("refresh_token", &self.refresh_token.is_some())
            .field("expires_at", &self.expires_at)
            .field("lifetime", &self.lifetime)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// How many seconds before its expiry the proxy refreshes a token: a request may take up to
/// 30 s to connect (the connect limit) before the server sees its token, and 30 s more
/// covers a clock that runs behind the authorization server's.
pub(crate) const REFRESH_AHEAD: u64 = 60;

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Credentials {
    /// The client these tokens were issued to.
    pub(crate) fn client(&self) -> Client {
        Client {
            client_id: self.client_id.clone(),
            client_secret: self.client_secret.clone(),
        }
    }

    /// Takes the tokens of a token response (a refresh that gives no new refresh token keeps
    /// the old one).
    pub(crate) fn take(&mut self, tokens: TokenResponse) {
        self.access_token = tokens.access_token;
        if tokens.refresh_token.is_some() {
            self.refresh_token = tokens.refresh_token;
        }
        self.expires_at = tokens.expires_in.map(|s| now().saturating_add(s));
        self.lifetime = tokens.expires_in;
        if tokens.scope.is_some() {
            self.scope = tokens.scope;
        }
    }

    /// The seconds the access token has left (0 once expired), when the server said.
    pub fn seconds_left(&self) -> Option<u64> {
        self.expires_at.map(|at| at.saturating_sub(now()))
    }

    /// Whether the access token has expired (by what the server said of its lifetime).
    pub fn expired(&self) -> bool {
        self.expires_at.is_some_and(|at| at <= now())
    }

    /// Whether the access token expires within [`REFRESH_AHEAD`] seconds (within half its
    /// lifetime, for a token that lives less than twice that): the proxy refreshes it before
    /// sending a request with it.
    pub(crate) fn expires_soon(&self) -> bool {
        let margin = self
            .lifetime
            .map_or(REFRESH_AHEAD, |lifetime| REFRESH_AHEAD.min(lifetime / 2));
        self.expires_at
            .is_some_and(|at| at <= now().saturating_add(margin))
    }
}

/// The token files of a folder.
#[derive(Debug, Clone)]
pub struct TokenStore {
    dir: PathBuf,
}

impl TokenStore {
    /// The token files in `dir`.
    pub fn in_dir(dir: PathBuf) -> TokenStore {
        TokenStore { dir }
    }

    /// The default folder, `$XDG_STATE_HOME/ctxopt/auth` (else `~/.local/state/ctxopt/auth`);
    /// `None` without a home folder.
    pub fn default_place() -> Option<TokenStore> {
        let base =
            dirs::state_dir().or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
        Some(TokenStore::in_dir(base.join("ctxopt").join("auth")))
    }

    /// The folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file of the server at `url`.
    pub fn path(&self, url: &str) -> PathBuf {
        let key = canonical_resource(url).unwrap_or_else(|| url.to_string());
        let digest = hex::encode(Sha256::digest(key.as_bytes()));
        self.dir.join(format!("{}.json", &digest[..24]))
    }

    /// The credentials kept for the server at `url`.
    pub fn load(&self, url: &str) -> Result<Option<Credentials>, AuthError> {
        let path = self.path(url);
        let credentials = read(&path)?;
        // A file of another URL under the same digest prefix is not this server's.
        Ok(credentials.filter(|c| canonical_resource(&c.url) == canonical_resource(url)))
    }

    /// Keeps `credentials` (0600), replacing the server's file; returns its path.
    pub fn save(&self, credentials: &Credentials) -> Result<PathBuf, AuthError> {
        let path = self.path(&credentials.url);
        let json = serde_json::to_vec_pretty(credentials).expect("credentials serialize");
        crate::private_file::replace(&path, &json).map_err(|source| AuthError::Store {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    /// Removes the credentials of the server at `url`; `false` when there were none.
    pub fn remove(&self, url: &str) -> Result<bool, AuthError> {
        if self.load(url)?.is_none() {
            return Ok(false);
        }
        let path = self.path(url);
        std::fs::remove_file(&path).map_err(|source| AuthError::Store { path, source })?;
        Ok(true)
    }

    /// Every server with credentials, sorted by URL.
    pub fn list(&self) -> Result<Vec<Credentials>, AuthError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => {
                return Err(AuthError::Store {
                    path: self.dir.clone(),
                    source,
                })
            }
        };
        let mut all = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                all.extend(read(&path)?);
            }
        }
        all.sort_by(|a, b| a.url.cmp(&b.url));
        Ok(all)
    }
}

/// The credentials in the file at `path`, when there is one.
fn read(path: &Path) -> Result<Option<Credentials>, AuthError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            // The position only: the file's text holds tokens.
            AuthError::Store {
                path: path.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!(
                        "not a token file (line {}, column {})",
                        e.line(),
                        e.column()
                    ),
                ),
            }
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(AuthError::Store {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    pub(crate) fn sample(url: &str) -> Credentials {
        Credentials {
            url: url.into(),
            resource: url.into(),
            issuer: "https://auth.example.com/".into(),
            token_endpoint: "https://auth.example.com/token".into(),
            client_id: "client-1".into(),
            client_secret: None,
            access_token: "access-secret-value".into(),
            refresh_token: Some("refresh-secret-value".into()),
            expires_at: Some(now() + 3600),
            lifetime: Some(3600),
            scope: None,
        }
    }

    #[test]
    fn a_token_file_is_private_found_by_url_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().join("auth"));
        assert!(store.load("https://h/mcp").unwrap().is_none());
        let path = store.save(&sample("https://h/mcp")).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(store.dir()).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        // The same server however its URL is spelled; not another one.
        assert!(store.load("HTTPS://H/mcp/").unwrap().is_some());
        assert!(store.load("https://h/other").unwrap().is_none());
        assert_eq!(store.list().unwrap().len(), 1);
        assert!(store.remove("https://h/mcp").unwrap());
        assert!(!store.remove("https://h/mcp").unwrap());
        assert!(store.list().unwrap().is_empty());
    }

    #[test]
    fn debug_output_and_read_errors_show_no_token() {
        let credentials = sample("https://h/mcp");
        let shown = format!("{credentials:?}");
        assert!(shown.contains("client-1"), "{shown}");
        assert!(!shown.contains("secret-value"), "{shown}");
        let dir = tempfile::tempdir().unwrap();
        let store = TokenStore::in_dir(dir.path().to_path_buf());
        let path = store.path("https://h/mcp");
        std::fs::write(&path, "{\"access_token\": \"access-secret-value\", oops").unwrap();
        let err = store.load("https://h/mcp").unwrap_err().to_string();
        assert!(!err.contains("secret-value"), "{err}");
        assert!(err.contains("not a token file"), "{err}");
    }

    #[test]
    fn a_refresh_keeps_the_old_refresh_token_when_no_new_one_comes() {
        let mut credentials = sample("https://h/mcp");
        credentials.take(TokenResponse {
            access_token: "new-access".into(),
            token_type: "Bearer".into(),
            expires_in: None,
            refresh_token: None,
            scope: None,
        });
        assert_eq!(credentials.access_token, "new-access");
        assert_eq!(
            credentials.refresh_token.as_deref(),
            Some("refresh-secret-value")
        );
        assert!(!credentials.expired());
        credentials.expires_at = Some(now() - 1);
        assert!(credentials.expired());
    }

    #[test]
    fn a_token_expires_soon_within_a_minute_or_half_its_lifetime() {
        let mut credentials = sample("https://h/mcp");
        assert!(!credentials.expires_soon());
        credentials.expires_at = Some(now() + REFRESH_AHEAD - 5);
        assert!(credentials.expires_soon());
        credentials.expires_at = Some(now() + REFRESH_AHEAD + 30);
        assert!(!credentials.expires_soon());
        // A token that lives 40 s is refreshed 20 s ahead, not at every request.
        credentials.lifetime = Some(40);
        credentials.expires_at = Some(now() + 30);
        assert!(!credentials.expires_soon());
        credentials.expires_at = Some(now() + 15);
        assert!(credentials.expires_soon());
        // Without an expiry, never.
        credentials.expires_at = None;
        assert!(!credentials.expires_soon());
    }
}
