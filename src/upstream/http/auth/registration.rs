//! Dynamic client registration (RFC 7591): ctxopt registers itself as a public native client
//! (no secret, `token_endpoint_auth_method: none`) whose redirect is the loopback listener.

use serde::Deserialize;
use ureq::Agent;

use super::{status_and_body, AuthError, REQUEST_LIMIT};
use crate::upstream::http::config::display_url;
use crate::upstream::http::fault::Fault;

/// The client an authorization server knows ctxopt as.
#[derive(Clone, Deserialize)]
pub(crate) struct Client {
    /// Its id.
    pub(crate) client_id: String,
    /// Its secret, when the server gave one (sent with token requests, `client_secret_post`).
    pub(crate) client_secret: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "…"))
            .finish()
    }
}

/// The registration request's body.
pub(crate) fn metadata(redirect_uri: &str) -> serde_json::Value {
    serde_json::json!({
        "client_name": "ctxopt",
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "software_id": "ctxopt",
        "software_version": env!("CARGO_PKG_VERSION"),
    })
}

/// Registers ctxopt at `endpoint` with the redirect `redirect_uri`.
pub(crate) fn register(
    agent: &Agent,
    endpoint: &str,
    redirect_uri: &str,
) -> Result<Client, AuthError> {
    let shown = display_url(endpoint);
    let http = |e| AuthError::Http {
        url: shown.clone(),
        fault: Fault::from_ureq(e, REQUEST_LIMIT),
    };
    let response = agent
        .post(endpoint)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json")
        .config()
        .timeout_global(Some(REQUEST_LIMIT))
        .build()
        .send(metadata(redirect_uri).to_string())
        .map_err(http)?;
    let (status, bytes) = status_and_body(response).map_err(http)?;
    if !(200..300).contains(&status) {
        return Err(AuthError::Status {
            what: "client registration",
            url: shown,
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    serde_json::from_slice(&bytes).map_err(|e| AuthError::Metadata {
        what: "the client registration's answer",
        url: shown,
        reason: e.to_string(),
    })
}
