//! The token endpoint: an authorization code (with its PKCE verifier) or a refresh token
//! exchanged for tokens, with the `resource` parameter (RFC 8707). Form-encoded requests,
//! the client authenticated by `client_secret_post` when it has a secret.

use serde::Deserialize;
use ureq::Agent;

use super::registration::Client;
use super::{status_and_body, AuthError, REQUEST_LIMIT};
use crate::upstream::http::config::display_url;
use crate::upstream::http::fault::Fault;

/// What the token endpoint answered (RFC 6749 §5.1).
#[derive(Clone, Deserialize)]
pub(crate) struct TokenResponse {
    /// The access token.
    pub(crate) access_token: String,
    /// Its type; only `Bearer` (any case) is usable.
    pub(crate) token_type: String,
    /// Its lifetime in seconds.
    pub(crate) expires_in: Option<u64>,
    /// A refresh token, when the server issues them.
    pub(crate) refresh_token: Option<String>,
    /// The scopes granted.
    pub(crate) scope: Option<String>,
}

impl std::fmt::Debug for TokenResponse {
    // The tokens are secrets: only whether they are there.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("refresh_token", &self.refresh_token.is_some())
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

/// An OAuth error answer (RFC 6749 §5.2).
#[derive(Deserialize)]
struct ErrorResponse {
    error: String,
    error_description: Option<String>,
}

/// The form of a token request for the code `code`.
pub(crate) fn code_grant<'a>(
    code: &'a str,
    verifier: &'a str,
    redirect_uri: &'a str,
    resource: &'a str,
) -> Vec<(&'static str, &'a str)> {
    vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("code_verifier", verifier),
        ("redirect_uri", redirect_uri),
        ("resource", resource),
    ]
}

/// The form of a token request for the refresh token `refresh_token`.
pub(crate) fn refresh_grant<'a>(
    refresh_token: &'a str,
    resource: &'a str,
) -> Vec<(&'static str, &'a str)> {
    vec![
        ("grant_type", "refresh_token"),
        ("refresh_token", refresh_token),
        ("resource", resource),
    ]
}

/// POSTs `grant` (with the client's id and secret) to `endpoint`.
pub(crate) fn request<'a>(
    agent: &Agent,
    endpoint: &str,
    client: &'a Client,
    mut grant: Vec<(&'static str, &'a str)>,
) -> Result<TokenResponse, AuthError> {
    let shown = display_url(endpoint);
    grant.push(("client_id", &client.client_id));
    if let Some(secret) = &client.client_secret {
        grant.push(("client_secret", secret));
    }
    let http = |e| AuthError::Http {
        url: shown.clone(),
        fault: Fault::from_ureq(e, REQUEST_LIMIT),
    };
    let response = agent
        .post(endpoint)
        .header("Accept", "application/json")
        .config()
        .timeout_global(Some(REQUEST_LIMIT))
        .build()
        .send_form(grant)
        .map_err(http)?;
    let (status, bytes) = status_and_body(response).map_err(http)?;
    if !(200..300).contains(&status) {
        // The body of an error answer holds no token: it is shown when it is not OAuth's.
        return Err(match serde_json::from_slice::<ErrorResponse>(&bytes) {
            Ok(e) => AuthError::Refused {
                error: e.error,
                description: e.error_description,
            },
            Err(_) => AuthError::Status {
                what: "the token endpoint",
                url: shown,
                status,
                body: String::from_utf8_lossy(&bytes).into_owned(),
            },
        });
    }
    // Never the body in the error: a malformed answer may still hold a token.
    let tokens: TokenResponse =
        serde_json::from_slice(&bytes).map_err(|e| AuthError::Metadata {
            what: "the token endpoint's answer",
            url: shown.clone(),
            reason: format!(
                "not a token response (line {}, column {})",
                e.line(),
                e.column()
            ),
        })?;
    if !tokens.token_type.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Metadata {
            what: "the token endpoint's answer",
            url: shown,
            reason: format!("a token of type {:?}, not Bearer", tokens.token_type),
        });
    }
    Ok(tokens)
}
