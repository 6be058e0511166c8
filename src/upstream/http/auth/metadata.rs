//! Discovery: the protected resource's metadata (RFC 9728), found from the `resource_metadata`
//! of a 401's `WWW-Authenticate: Bearer` challenge or at its well-known URLs, and its
//! authorization server's metadata (RFC 8414, or OpenID Connect discovery), tried at the
//! well-known URLs in the order the MCP authorization specification gives.

use serde::Deserialize;
use ureq::http::Uri;
use ureq::Agent;

use super::{AuthError, ANSWER_LIMIT, REQUEST_LIMIT};
use crate::upstream::http::config::display_url;
use crate::upstream::http::fault::Fault;

/// A URL split into what discovery recombines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UrlParts {
    /// `scheme://host[:port]`, scheme and host in lower case.
    pub(crate) origin: String,
    /// The path, without a trailing `/` (empty for the root).
    pub(crate) path: String,
    /// The query, when there is one.
    pub(crate) query: Option<String>,
}

impl UrlParts {
    /// The parts of an absolute `http(s)` URL.
    pub(crate) fn of(url: &str) -> Option<UrlParts> {
        let uri: Uri = url.parse().ok()?;
        let scheme = uri.scheme_str()?.to_ascii_lowercase();
        let authority = uri.authority()?.as_str();
        // Credentials in the authority are never part of a resource identifier.
        let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
        let path = uri.path().trim_end_matches('/').to_string();
        Some(UrlParts {
            origin: format!("{scheme}://{}", host.to_ascii_lowercase()),
            path,
            query: uri.query().map(str::to_string),
        })
    }
}

/// The canonical identifier of the MCP server at `url` (RFC 8707 / the MCP specification):
/// scheme and host in lower case, no fragment, no trailing `/`. `None` when `url` is not an
/// absolute URL.
pub(crate) fn canonical_resource(url: &str) -> Option<String> {
    let parts = UrlParts::of(url)?;
    let mut out = parts.origin + &parts.path;
    if let Some(query) = parts.query {
        out.push('?');
        out.push_str(&query);
    }
    Some(out)
}

/// Whether the protected resource `resource` (from its metadata) covers the server at `url`:
/// the same origin, and `url`'s path at or below `resource`'s.
pub(crate) fn covers(resource: &str, url: &str) -> bool {
    let (Some(resource), Some(url)) = (UrlParts::of(resource), UrlParts::of(url)) else {
        return false;
    };
    resource.origin == url.origin
        && (url.path == resource.path || url.path.starts_with(&format!("{}/", resource.path)))
}

/// What a `WWW-Authenticate: Bearer` challenge says.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    /// The URL of the protected resource's metadata (RFC 9728 §5.1).
    pub(crate) resource_metadata: Option<String>,
    /// The scopes the server asks for.
    pub(crate) scope: Option<String>,
    /// The error code (RFC 6750 §3.1): `invalid_token`, `insufficient_scope`, ...
    pub(crate) error: Option<String>,
}

/// The `Bearer` challenge in a `WWW-Authenticate` value (other schemes' parameters ignored).
pub(crate) fn parse_challenge(header: &str) -> Challenge {
    let mut challenge = Challenge::default();
    let mut in_bearer = false;
    let mut rest = header.trim_start();
    while !rest.is_empty() {
        // A token: a scheme (followed by a space or the end) or a parameter's name.
        let end = rest
            .find(|c: char| c == '=' || c == ',' || c.is_whitespace())
            .unwrap_or(rest.len());
        let token = &rest[..end];
        rest = rest[end..].trim_start();
        if let Some(after) = rest.strip_prefix('=') {
            let (value, after) = auth_param_value(after.trim_start());
            if in_bearer {
                match token.to_ascii_lowercase().as_str() {
                    "resource_metadata" => challenge.resource_metadata = Some(value),
                    "scope" => challenge.scope = Some(value),
                    "error" => challenge.error = Some(value),
                    _ => {}
                }
            }
            rest = after;
        } else if !token.is_empty() {
            in_bearer = token.eq_ignore_ascii_case("bearer");
        }
        rest = rest.trim_start().trim_start_matches(',').trim_start();
    }
    challenge
}

/// A parameter's value (a quoted string or a token) and the text after it.
fn auth_param_value(text: &str) -> (String, &str) {
    if let Some(quoted) = text.strip_prefix('"') {
        let mut value = String::new();
        let mut chars = quoted.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => {
                    if let Some((_, escaped)) = chars.next() {
                        value.push(escaped);
                    }
                }
                '"' => return (value, &quoted[i + 1..]),
                c => value.push(c),
            }
        }
        (value, "")
    } else {
        let end = text
            .find(|c: char| c == ',' || c.is_whitespace())
            .unwrap_or(text.len());
        (text[..end].to_string(), &text[end..])
    }
}

/// The protected resource's metadata (RFC 9728), the fields the flow uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResourceMetadata {
    /// The resource's identifier, sent as `resource` (RFC 8707).
    pub(crate) resource: Option<String>,
    /// The issuers of the authorization servers it trusts.
    #[serde(default)]
    pub(crate) authorization_servers: Vec<String>,
    /// The scopes it knows.
    #[serde(default)]
    pub(crate) scopes_supported: Vec<String>,
}

/// An authorization server's metadata (RFC 8414 / OpenID Connect discovery), the fields the
/// flow uses.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ServerMetadata {
    /// Its issuer identifier.
    pub(crate) issuer: String,
    /// Where the user authorizes.
    pub(crate) authorization_endpoint: String,
    /// Where codes and refresh tokens become tokens.
    pub(crate) token_endpoint: String,
    /// Where clients register themselves (RFC 7591), when it lets them.
    pub(crate) registration_endpoint: Option<String>,
    /// The PKCE methods it supports.
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    /// Whether it takes the URL of a client ID metadata document as a client id (MCP
    /// authorization, revision 2025-11-25).
    #[serde(default)]
    pub(crate) client_id_metadata_document_supported: bool,
}

/// The well-known URLs of the protected-resource metadata of the server at `url`: the
/// path-inserted one first, then the root one.
pub(crate) fn resource_metadata_urls(url: &str) -> Vec<String> {
    let Some(parts) = UrlParts::of(url) else {
        return Vec::new();
    };
    let root = format!("{}/.well-known/oauth-protected-resource", parts.origin);
    if parts.path.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{}", parts.path), root]
    }
}

/// The well-known URLs of the metadata of the authorization server `issuer`, in the order of
/// the MCP specification: OAuth 2.0 and OpenID Connect path-inserted, then OpenID Connect
/// path-appended (for an issuer without a path: OAuth 2.0, then OpenID Connect).
pub(crate) fn server_metadata_urls(issuer: &str) -> Vec<String> {
    let Some(parts) = UrlParts::of(issuer) else {
        return Vec::new();
    };
    let origin = &parts.origin;
    if parts.path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        let path = &parts.path;
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

/// GETs the JSON document at `url`: `Ok(None)` when the server has none there (a 4xx status),
/// so that the next candidate is tried.
pub(crate) fn fetch<T: serde::de::DeserializeOwned>(
    agent: &Agent,
    url: &str,
    what: &'static str,
) -> Result<Option<T>, AuthError> {
    let response = agent
        .get(url)
        .header("Accept", "application/json")
        .config()
        .timeout_global(Some(REQUEST_LIMIT))
        .build()
        .call()
        .map_err(|e| AuthError::Http {
            url: display_url(url),
            fault: Fault::from_ureq(e, REQUEST_LIMIT),
        })?;
    let status = response.status().as_u16();
    if (400..500).contains(&status) {
        return Ok(None);
    }
    let bytes = response
        .into_body()
        .with_config()
        .limit(ANSWER_LIMIT)
        .read_to_vec()
        .map_err(|e| AuthError::Http {
            url: display_url(url),
            fault: Fault::from_ureq(e, REQUEST_LIMIT),
        })?;
    if !(200..300).contains(&status) {
        return Err(AuthError::Status {
            what,
            url: display_url(url),
            status,
            body: String::from_utf8_lossy(&bytes).into_owned(),
        });
    }
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| AuthError::Metadata {
            what,
            url: display_url(url),
            reason: e.to_string(),
        })
}

/// The first of `urls` that has the document.
pub(crate) fn first_of<T: serde::de::DeserializeOwned>(
    agent: &Agent,
    urls: &[String],
    what: &'static str,
) -> Result<Option<(String, T)>, AuthError> {
    for url in urls {
        if let Some(document) = fetch(agent, url, what)? {
            return Ok(Some((url.clone(), document)));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_metadata_url_and_scope() {
        let header = r#"Bearer error="invalid_token", error_description="Missing \"Authorization\" header", scope="mcp:tools files:read", resource_metadata="http://localhost:3000/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            parse_challenge(header),
            Challenge {
                resource_metadata: Some(
                    "http://localhost:3000/.well-known/oauth-protected-resource/mcp".into()
                ),
                scope: Some("mcp:tools files:read".into()),
                error: Some("invalid_token".into()),
            }
        );
        // Another scheme's parameters are not the Bearer challenge's.
        let two = r#"Basic realm="x", resource_metadata="https://wrong/", Bearer resource_metadata=https://right/meta"#;
        assert_eq!(
            parse_challenge(two).resource_metadata.as_deref(),
            Some("https://right/meta")
        );
        assert_eq!(parse_challenge("Basic realm=\"x\""), Challenge::default());
    }

    #[test]
    fn well_known_urls_follow_the_specifications_order() {
        assert_eq!(
            resource_metadata_urls("https://Example.com/public/mcp/"),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            server_metadata_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            server_metadata_urls("http://localhost:3001/"),
            [
                "http://localhost:3001/.well-known/oauth-authorization-server",
                "http://localhost:3001/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn resources_are_canonical_and_cover_the_paths_below_them() {
        assert_eq!(
            canonical_resource("HTTPS://MCP.Example.com:8443/mcp/").as_deref(),
            Some("https://mcp.example.com:8443/mcp")
        );
        assert_eq!(
            canonical_resource("https://user:pw@h/").as_deref(),
            Some("https://h")
        );
        assert!(covers(
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp"
        ));
        assert!(covers("https://h/", "https://h/mcp"));
        assert!(!covers("https://h/mcp", "https://h/mcpx"));
        assert!(!covers("https://h/mcp", "https://other/mcp"));
        assert!(!covers("http://h/mcp", "https://h/mcp"));
    }
}
