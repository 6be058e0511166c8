//! The MCP authorization flow (revisions 2025-06-18 and 2025-11-25) for a server that answers
//! 401: `ctxopt auth login` discovers the authorization server, registers ctxopt (or uses a
//! given client id), has the user authorize through the browser with PKCE and a loopback
//! redirect, and keeps the tokens; `ctxopt-proxy --url` sends them and refreshes them
//! (docs/http.md, "Auth").
//!
//! # Layout
//! - [`metadata`]: protected-resource metadata (RFC 9728) from the 401's challenge or the
//!   well-known URLs; authorization-server metadata (RFC 8414, OpenID Connect discovery).
//! - [`registration`]: dynamic client registration (RFC 7591).
//! - [`pkce`]: the code verifier and challenge (RFC 7636, `S256`), the random `state`.
//! - [`loopback`]: the redirect listener on `127.0.0.1`.
//! - [`token`]: code and refresh-token grants, with `resource` (RFC 8707).
//! - [`store`]: one 0600 file of tokens per server.
//! - [`login`]: the flow, step by step, for `ctxopt auth login`.
//! - [`bearer`]: the proxy's side: the stored token on every request, refreshed ahead of
//!   its expiry and once on a 401, else an error naming the login command.
//! - [`scope`]: the scopes a login asks for, and a 403 `insufficient_scope` challenge made
//!   the command that gets them.
//!
//! Tokens never appear in an error, a log line or a Debug output: the types that hold them
//! show only whether they are there.

pub(crate) mod bearer;
pub(crate) mod login;
pub(crate) mod loopback;
pub(crate) mod metadata;
pub(crate) mod pkce;
pub(crate) mod registration;
pub(crate) mod scope;
pub(crate) mod store;
pub(crate) mod token;

use std::path::PathBuf;
use std::time::Duration;

pub use bearer::ProxyAuth;
pub use login::{begin, ClientKind, LoginOptions, PendingLogin};
pub use store::{Credentials, TokenStore};

use super::fault::{excerpt, Fault};

/// Why authorizing failed. No variant holds a token.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// A request to a server of the flow failed (connection, TLS, timeout).
    #[error("{url}: {fault}")]
    Http {
        /// The URL as shown to users.
        url: String,
        /// What went wrong.
        fault: Fault,
    },
    /// An endpoint of the flow answered with an error status.
    #[error("{what} at {url}: HTTP {status}{}", excerpt(body))]
    Status {
        /// What was asked.
        what: &'static str,
        /// The URL as shown to users.
        url: String,
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// A document of the flow is missing or cannot be used.
    #[error("{what} at {url}: {reason}")]
    Metadata {
        /// Which document.
        what: &'static str,
        /// Where it was looked for.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// The server asks for no authorization the flow knows: no 401 challenge naming its
    /// metadata, and no protected-resource metadata at the well-known URLs.
    #[error("{url} publishes no protected-resource metadata (RFC 9728): it did not answer 401 with a Bearer challenge naming it, and none is at {tried}")]
    NotProtected {
        /// The server's URL as shown to users.
        url: String,
        /// The well-known URLs tried.
        tried: String,
    },
    /// The protected-resource metadata is another resource's.
    #[error("the protected-resource metadata is for {found}, which does not cover {url}")]
    ResourceMismatch {
        /// The server's URL as shown to users.
        url: String,
        /// The resource the metadata names.
        found: String,
    },
    /// The authorization server does not offer PKCE with `S256` (the MCP specification
    /// forbids going on without it).
    #[error("the authorization server {issuer} does not list S256 in code_challenge_methods_supported: PKCE is required")]
    NoPkce {
        /// Its issuer.
        issuer: String,
    },
    /// The authorization server offers no dynamic client registration, and no client id was
    /// given (nor a client metadata document URL it takes).
    #[error("the authorization server {issuer} offers no dynamic client registration: register ctxopt there (redirect URI http://127.0.0.1:<port>/callback) and give its client id with --client-id and the port with --port, or give the URL of ctxopt's client ID metadata document with --client-metadata-url where the server takes them")]
    NoRegistration {
        /// Its issuer.
        issuer: String,
    },
    /// The URL given for the client ID metadata document cannot be a client id.
    #[error("--client-metadata-url {0}: a client ID metadata document's URL must use https and have a path")]
    ClientMetadataUrl(String),
    /// The authorization server refused: in the redirect, or at the token endpoint.
    #[error("the authorization server refused: {error}{}", description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Refused {
        /// The OAuth error code.
        error: String,
        /// Its description, when given.
        description: Option<String>,
    },
    /// The redirect's `state` is not the request's: a forged or stale redirect.
    #[error("the redirect's state does not match the authorization request's (a forged or stale redirect): nothing was stored")]
    StateMismatch,
    /// The redirect did not come in time.
    #[error("no redirect to {redirect} within {waited:?} (--timeout)")]
    Timeout {
        /// The redirect URI.
        redirect: String,
        /// How long it was waited for.
        waited: Duration,
    },
    /// The loopback listener failed.
    #[error("the loopback listener for the redirect: {0}")]
    Loopback(#[source] std::io::Error),
    /// A token file cannot be read or written.
    #[error("{path}: {source}")]
    Store {
        /// The file or folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// How long one request to an authorization server may take.
const REQUEST_LIMIT: Duration = Duration::from_secs(30);

/// The most an authorization server's answer (metadata, registration, tokens) may hold.
const ANSWER_LIMIT: u64 = 1 << 20;

/// The status and the body (at most [`ANSWER_LIMIT`]) of an authorization server's answer.
fn status_and_body(
    response: ureq::http::Response<ureq::Body>,
) -> Result<(u16, Vec<u8>), ureq::Error> {
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .with_config()
        .limit(ANSWER_LIMIT)
        .read_to_vec()?;
    Ok((status, body))
}

/// The command that stores tokens for the server at `url` (asking for `scope`, when given),
/// as a user types it.
pub fn login_command(url: &str, scope: Option<&str>) -> String {
    let mut command = format!("ctxopt auth login {}", shell_word(url));
    if let Some(scope) = scope {
        command.push_str(" --scope ");
        command.push_str(&shell_word(scope));
    }
    command
}

/// `text` as one word of a POSIX shell: as it is when nothing in it is special, else in
/// single quotes.
fn shell_word(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ":/._~%-+@".contains(c));
    if plain {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
