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
use super::scope::union;
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
    /// A client id registered beforehand: used first.
    pub client_id: Option<String>,
    /// The HTTPS URL of ctxopt's client ID metadata document: the client id where the
    /// authorization server takes such documents, else dynamic registration is used.
    pub client_metadata_url: Option<String>,
    /// The scopes to ask for, instead of the ones the server names.
    pub scope: Option<String>,
    /// The scopes of the tokens stored for the server: asked for too (a login for more
    /// scopes keeps those granted).
    pub granted_scope: Option<String>,
    /// The loopback port (0: any free one).
    pub port: u16,
}

/// How ctxopt is known to the authorization server, in the order of preference of the MCP
/// authorization specification (revision 2025-11-25, "Client Registration Approaches").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientKind {
    /// The client id given with `--client-id` (registered beforehand).
    Given,
    /// The URL of its client ID metadata document (`--client-metadata-url`).
    MetadataDocument,
    /// Registered just now (RFC 7591).
    Registered,
}

impl ClientKind {
    /// In words, for the user.
    pub fn describe(self) -> &'static str {
        match self {
            ClientKind::Given => "the client id given",
            ClientKind::MetadataDocument => "its client ID metadata document",
            ClientKind::Registered => "dynamic client registration",
        }
    }
}

/// A login waiting for the user to authorize (no Debug: it holds the PKCE verifier).
pub struct PendingLogin {
    agent: Agent,
    url: String,
    resource: String,
    server: ServerMetadata,
    client: Client,
    client_kind: ClientKind,
    scope: Option<String>,
    loopback: Loopback,
    state: String,
    pkce_verifier: String,
    authorize_url: String,
}

/// Discovers how the server at `url` is authorized, registers ctxopt where needed, and
/// listens for the redirect: the returned login's [`PendingLogin::authorize_url`] is the page
/// for the user to open.
pub fn begin(agent: &Agent, url: &str, options: &LoginOptions) -> Result<PendingLogin, AuthError> {
    if let Some(document) = &options.client_metadata_url {
        check_metadata_url(document)?;
    }
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
    let (client, client_kind) = client_for(agent, &server, options, &redirect_uri)?;
    let asked = options.scope.clone().or(challenge.scope).or_else(|| {
        let supported = &resource_metadata.scopes_supported;
        (!supported.is_empty()).then(|| supported.join(" "))
    });
    let scope = union(options.granted_scope.as_deref(), asked.as_deref());
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
        client_kind,
        scope,
        loopback,
        state,
        pkce_verifier: pkce.verifier,
        authorize_url,
    })
}

/// The client id to use, in the specification's order: the one given, else the metadata
/// document's URL where the server takes it, else one registered now.
fn client_for(
    agent: &Agent,
    server: &ServerMetadata,
    options: &LoginOptions,
    redirect_uri: &str,
) -> Result<(Client, ClientKind), AuthError> {
    let known = |client_id: &String| Client {
        client_id: client_id.clone(),
        client_secret: None,
    };
    if let Some(id) = &options.client_id {
        return Ok((known(id), ClientKind::Given));
    }
    if let Some(document) = &options.client_metadata_url {
        if server.client_id_metadata_document_supported {
            return Ok((known(document), ClientKind::MetadataDocument));
        }
    }
    let endpoint =
        server
            .registration_endpoint
            .as_deref()
            .ok_or_else(|| AuthError::NoRegistration {
                issuer: server.issuer.clone(),
            })?;
    let client = register(agent, endpoint, redirect_uri)?;
    Ok((client, ClientKind::Registered))
}

/// A client ID metadata document's URL must use `https` and have a path (the draft
/// "OAuth Client ID Metadata Document", as the MCP specification requires).
fn check_metadata_url(url: &str) -> Result<(), AuthError> {
    let usable = url.parse::<ureq::http::Uri>().is_ok_and(|uri| {
        uri.scheme_str() == Some("https") && uri.host().is_some() && !matches!(uri.path(), "" | "/")
    });
    if usable {
        Ok(())
    } else {
        Err(AuthError::ClientMetadataUrl(url.to_string()))
    }
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

    /// How ctxopt is known to the authorization server.
    pub fn client_kind(&self) -> ClientKind {
        self.client_kind
    }

    /// The scopes asked for, when any.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
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
            lifetime: None,
            // RFC 6749 §5.1: an answer that names no scope granted the one asked for.
            scope: self.scope,
        };
        credentials.take(tokens);
        let path = store.save(&credentials)?;
        Ok((credentials, path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(supports_documents: bool, registration: Option<&str>) -> ServerMetadata {
        ServerMetadata {
            issuer: "https://a.example/".into(),
            authorization_endpoint: "https://a.example/authorize".into(),
            token_endpoint: "https://a.example/token".into(),
            registration_endpoint: registration.map(str::to_string),
            code_challenge_methods_supported: Some(vec!["S256".into()]),
            client_id_metadata_document_supported: supports_documents,
        }
    }

    #[test]
    fn the_client_id_given_comes_first_then_the_metadata_document() {
        let agent = Agent::new_with_defaults();
        let document = "https://ctxopt.example/client.json".to_string();
        let both = LoginOptions {
            client_id: Some("pre-registered".into()),
            client_metadata_url: Some(document.clone()),
            ..LoginOptions::default()
        };
        let (client, kind) = client_for(&agent, &server(true, None), &both, "r").unwrap();
        assert_eq!(
            (client.client_id.as_str(), kind),
            ("pre-registered", ClientKind::Given)
        );
        let only_document = LoginOptions {
            client_metadata_url: Some(document.clone()),
            ..LoginOptions::default()
        };
        // No registration endpoint is asked: the document's URL is the id.
        let (client, kind) = client_for(&agent, &server(true, None), &only_document, "r").unwrap();
        assert_eq!(client.client_id, document);
        assert_eq!(kind, ClientKind::MetadataDocument);
        // A server that does not take documents and cannot register: told so.
        let err = client_for(&agent, &server(false, None), &only_document, "r").unwrap_err();
        assert!(matches!(err, AuthError::NoRegistration { .. }), "{err}");
    }

    #[test]
    fn a_metadata_document_url_uses_https_and_has_a_path() {
        assert!(check_metadata_url("https://ctxopt.example/client.json").is_ok());
        for wrong in [
            "http://ctxopt.example/client.json",
            "https://ctxopt.example/",
            "https://ctxopt.example",
            "client.json",
        ] {
            assert!(check_metadata_url(wrong).is_err(), "{wrong}");
        }
    }

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
