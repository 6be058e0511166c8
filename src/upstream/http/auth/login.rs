//! The flow of `ctxopt auth login URL`, step by step: probe the server for its 401 challenge,
//! find its protected-resource metadata and its authorization server's, check PKCE `S256`,
//! listen on the loopback redirect, register (or take the given client id), build the
//! authorization URL ([`begin`]); then wait for the redirect, exchange the code and keep the
//! tokens ([`PendingLogin::finish`]).

use std::path::PathBuf;
use std::time::Duration;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use ureq::Agent;

use super::loopback::Loopback;
use super::metadata::{
    canonical_resource, covers, first_of, parse_challenge, resource_metadata_urls,
    server_metadata_urls, Challenge, ResourceMetadata, ServerMetadata,
};
use super::pkce::{random_text, Pkce};
use super::registration::{register, Client};
use super::store::{Credentials, TokenStore};
use super::token::{code_grant, request};
use super::AuthError;
use crate::upstream::http::config::display_url;
use crate::upstream::http::fault::Fault;

/// How long the probe of the MCP endpoint may take.
const PROBE_LIMIT: Duration = Duration::from_secs(30);

/// What a query value keeps as it is: RFC 3986's unreserved characters.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What the user chose for the login.
#[derive(Debug, Clone, Default)]
pub struct LoginOptions {
    /// A client id registered beforehand, instead of dynamic registration.
    pub client_id: Option<String>,
    /// The scopes to ask for, instead of the ones the server names.
    pub scope: Option<String>,
    /// The loopback port (0: any free one).
    pub port: u16,
}

/// A login waiting for the user to authorize (no Debug: it holds the PKCE verifier).
pub struct PendingLogin {
    agent: Agent,
    url: String,
    resource: String,
    server: ServerMetadata,
    client: Client,
    loopback: Loopback,
    state: String,
    pkce_verifier: String,
    authorize_url: String,
}

/// Discovers how the server at `url` is authorized, registers ctxopt where needed, and
/// listens for the redirect: the returned login's [`PendingLogin::authorize_url`] is the page
/// for the user to open.
pub fn begin(agent: &Agent, url: &str, options: &LoginOptions) -> Result<PendingLogin, AuthError> {
    let challenge = probe(agent, url)?;
    let mut candidates: Vec<String> = challenge.resource_metadata.iter().cloned().collect();
    let well_known = resource_metadata_urls(url);
    candidates.extend(well_known.iter().cloned());
    let (metadata_url, resource_metadata) =
        first_of::<ResourceMetadata>(agent, &candidates, "the protected-resource metadata")?
            .ok_or_else(|| AuthError::NotProtected {
                url: display_url(url),
                tried: well_known.join(", "),
            })?;
    let resource = match &resource_metadata.resource {
        Some(found) if covers(found, url) => found.clone(),
        Some(found) => {
            return Err(AuthError::ResourceMismatch {
                url: display_url(url),
                found: found.clone(),
            })
        }
        None => canonical_resource(url).unwrap_or_else(|| url.to_string()),
    };
    let issuer = resource_metadata
        .authorization_servers
        .first()
        .ok_or_else(|| AuthError::Metadata {
            what: "the protected-resource metadata",
            url: display_url(&metadata_url),
            reason: "it names no authorization server".into(),
        })?;
    let tried = server_metadata_urls(issuer);
    let (server_url, server) =
        first_of::<ServerMetadata>(agent, &tried, "the authorization-server metadata")?
            .ok_or_else(|| AuthError::Metadata {
                what: "the authorization-server metadata",
                url: tried.join(", "),
                reason: "not found".into(),
            })?;
    // RFC 8414 §3.3: the metadata must be the issuer's own.
    if canonical_resource(&server.issuer) != canonical_resource(issuer) {
        return Err(AuthError::Metadata {
            what: "the authorization-server metadata",
            url: display_url(&server_url),
            reason: format!("its issuer {} is not {issuer}", server.issuer),
        });
    }
    let s256 = server
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
    if !s256 {
        return Err(AuthError::NoPkce {
            issuer: server.issuer.clone(),
        });
    }
    let loopback = Loopback::bind(options.port)?;
    let redirect_uri = loopback.redirect_uri();
    let client = match &options.client_id {
        Some(id) => Client {
            client_id: id.clone(),
            client_secret: None,
        },
        None => {
            let endpoint = server.registration_endpoint.as_deref().ok_or_else(|| {
                AuthError::NoRegistration {
                    issuer: server.issuer.clone(),
                }
            })?;
            register(agent, endpoint, &redirect_uri)?
        }
    };
    let scope = options.scope.clone().or(challenge.scope).or_else(|| {
        let supported = &resource_metadata.scopes_supported;
        (!supported.is_empty()).then(|| supported.join(" "))
    });
    let state = random_text(24);
    let pkce = Pkce::new();
    let mut query = vec![
        ("response_type", "code"),
        ("client_id", client.client_id.as_str()),
        ("redirect_uri", redirect_uri.as_str()),
        ("code_challenge", pkce.challenge.as_str()),
        ("code_challenge_method", "S256"),
        ("state", state.as_str()),
        ("resource", resource.as_str()),
    ];
    if let Some(scope) = &scope {
        query.push(("scope", scope));
    }
    let authorize_url = with_query(&server.authorization_endpoint, &query);
    Ok(PendingLogin {
        agent: agent.clone(),
        url: url.to_string(),
        resource,
        server,
        client,
        loopback,
        state,
        pkce_verifier: pkce.verifier,
        authorize_url,
    })
}

/// `base` with `pairs` added to its query, form-encoded.
fn with_query(base: &str, pairs: &[(&str, &str)]) -> String {
    let mut out = base.to_string();
    let mut separator = if base.contains('?') { '&' } else { '?' };
    for (name, value) in pairs {
        out.push(separator);
        out.push_str(name);
        out.push('=');
        out.extend(utf8_percent_encode(value, QUERY_VALUE));
        separator = '&';
    }
    out
}

/// The `Bearer` challenge of the server's answer to a request without a token (a JSON-RPC
/// `ping`): empty when it did not answer 401 (discovery then tries the well-known URLs).
fn probe(agent: &Agent, url: &str) -> Result<Challenge, AuthError> {
    let response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .header("Accept", "application/json, text/event-stream")
        .config()
        .timeout_global(Some(PROBE_LIMIT))
        .build()
        .send(r#"{"jsonrpc":"2.0","id":"ctxopt-auth-probe","method":"ping"}"#)
        .map_err(|e| AuthError::Http {
            url: display_url(url),
            fault: Fault::from_ureq(e, PROBE_LIMIT),
        })?;
    if response.status().as_u16() != 401 {
        return Ok(Challenge::default());
    }
    Ok(response
        .headers()
        .get_all("www-authenticate")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .map(parse_challenge)
        .find(|c| c.resource_metadata.is_some())
        .unwrap_or_default())
}

impl PendingLogin {
    /// The page the user opens to authorize ctxopt.
    pub fn authorize_url(&self) -> &str {
        &self.authorize_url
    }

    /// The loopback redirect URI the authorization server sends the browser back to.
    pub fn redirect_uri(&self) -> String {
        self.loopback.redirect_uri()
    }

    /// The authorization server's issuer.
    pub fn issuer(&self) -> &str {
        &self.server.issuer
    }

    /// Waits (at most `limit`) for the redirect, exchanges its code for tokens and keeps them
    /// in `store`; the credentials and the file.
    pub fn finish(
        self,
        store: &TokenStore,
        limit: Duration,
    ) -> Result<(Credentials, PathBuf), AuthError> {
        let code = self.loopback.wait(&self.state, limit)?;
        let redirect_uri = self.loopback.redirect_uri();
        let grant = code_grant(&code, &self.pkce_verifier, &redirect_uri, &self.resource);
        let tokens = request(
            &self.agent,
            &self.server.token_endpoint,
            &self.client,
            grant,
        )?;
        let mut credentials = Credentials {
            url: self.url,
            resource: self.resource,
            issuer: self.server.issuer,
            token_endpoint: self.server.token_endpoint,
            client_id: self.client.client_id,
            client_secret: self.client.client_secret,
            access_token: String::new(),
            refresh_token: None,
            expires_at: None,
            scope: None,
        };
        credentials.take(tokens);
        let path = store.save(&credentials)?;
        Ok((credentials, path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorization_url_form_encodes_its_values() {
        assert_eq!(
            with_query(
                "https://a.example/authorize",
                &[("redirect_uri", "http://127.0.0.1:5/callback"), ("scope", "a b")]
            ),
            "https://a.example/authorize?redirect_uri=http%3A%2F%2F127.0.0.1%3A5%2Fcallback&scope=a%20b"
        );
        assert_eq!(
            with_query(
                "https://a.example/authorize?tenant=x",
                &[("state", "s-_.~")]
            ),
            "https://a.example/authorize?tenant=x&state=s-_.~"
        );
    }
}
