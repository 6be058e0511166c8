//! What the HTTP upstream is configured with: the server's URL, the static headers (values
//! may name environment variables), the timeout, a private CA; and the HTTP client made from
//! them.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ureq::http::Uri;
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::Agent;

/// The headers the proxy sets itself: a `--header` may not set them.
const OWN_HEADERS: [&str; 7] = [
    "accept",
    "content-type",
    "content-length",
    "mcp-session-id",
    "mcp-protocol-version",
    "mcp-method",
    "mcp-name",
];

/// How long connecting may take, at most (less when the timeout is shorter).
const CONNECT_LIMIT: Duration = Duration::from_secs(30);

/// Which MCP transport the proxy speaks to the server (`--transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
#[non_exhaustive]
pub enum Transport {
    /// Streamable HTTP, falling back to the legacy HTTP+SSE transport when the server
    /// refuses the first POST with 400, 404 or 405 (the specification's backwards
    /// compatibility).
    #[default]
    Auto,
    /// Streamable HTTP (MCP 2025-03-26 and later).
    StreamableHttp,
    /// The legacy HTTP+SSE transport (MCP 2024-11-05): one GET stream for every server
    /// message, each client message POSTed to the endpoint it names.
    Sse,
}

impl Transport {
    /// Its name in the log's header and in errors (`auto` is never logged: it becomes the
    /// transport found).
    pub fn name(self) -> &'static str {
        match self {
            Transport::Auto | Transport::StreamableHttp => "streamable-http",
            Transport::Sse => "sse",
        }
    }
}

/// The HTTP upstream's settings.
#[derive(Clone)]
pub struct HttpConfig {
    /// The server's MCP endpoint (`http` or `https`).
    pub url: String,
    /// Static headers sent with every request, their values resolved.
    pub headers: Vec<(String, String)>,
    /// How long the server may take to begin answering a message, and how long a stream
    /// answering a request may stay silent.
    pub timeout: Duration,
    /// A PEM file of the certificate authorities to trust instead of the built-in roots.
    pub ca_cert: Option<PathBuf>,
    /// The transport, or `auto`.
    pub transport: Transport,
}

impl std::fmt::Debug for HttpConfig {
    // Header values hold tokens: only their names are shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpConfig")
            .field("url", &display_url(&self.url))
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("timeout", &self.timeout)
            .field("ca_cert", &self.ca_cert)
            .field("transport", &self.transport)
            .finish()
    }
}

/// Why the HTTP upstream's settings cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL is not an absolute `http` or `https` URL.
    #[error("--url {url:?}: {reason}")]
    Url {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `--header` is not `Name: value`, or names a header the proxy sets itself.
    #[error("--header {name:?}: {reason}")]
    Header {
        /// The header's name (or the text up to its first colon); never its value.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `--header` value names an environment variable that is not set.
    #[error("--header {header:?}: the environment variable {variable} is not set")]
    Env {
        /// The header's name.
        header: String,
        /// The variable.
        variable: String,
    },
    /// The `--ca-cert` file cannot be read or holds no certificate.
    #[error("--ca-cert {path}: {reason}")]
    CaCert {
        /// The file.
        path: String,
        /// Why it cannot be used.
        reason: String,
    },
}

/// Checks that `url` is an absolute `http` or `https` URL with a host.
pub fn check_url(url: &str) -> Result<(), ConfigError> {
    let bad = |reason: &str| ConfigError::Url {
        url: display_url(url),
        reason: reason.to_string(),
    };
    let uri: Uri = url.parse().map_err(|_| bad("not a URL"))?;
    match uri.scheme_str() {
        Some("http" | "https") => {}
        _ => return Err(bad("expected an http:// or https:// URL")),
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    Ok(())
}

/// `url` as the log and messages show it: without user and password, and with the query's
/// values left out (either may hold a token).
pub fn display_url(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let base = match base.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
            format!("{scheme}://{host}{path}")
        }
        None => base.to_string(),
    };
    match query {
        Some(query) => {
            let names: Vec<&str> = query
                .split('&')
                .map(|pair| pair.split_once('=').map_or(pair, |(name, _)| name))
                .collect();
            format!("{base}?{}", names.join("=…&") + "=…")
        }
        None => base,
    }
}

/// Parses a `--header 'Name: value'`, replacing each `${NAME}` in the value by the
/// variable `env` gives for it (an unset one is an error; `$${` stands for a literal `${`).
pub fn parse_header(
    text: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<(String, String), ConfigError> {
    let Some((name, value)) = text.split_once(':') else {
        return Err(ConfigError::Header {
            name: text.chars().take(40).collect(),
            reason: "expected 'Name: value'".into(),
        });
    };
    let name = name.trim();
    let bad = |reason: &str| ConfigError::Header {
        name: name.to_string(),
        reason: reason.to_string(),
    };
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if name.is_empty() || !name.chars().all(token) {
        return Err(bad("not a header name"));
    }
    if OWN_HEADERS.contains(&name.to_ascii_lowercase().as_str()) {
        return Err(bad("ctxopt-proxy sets this header itself"));
    }
    let value = expand(value.trim(), name, env)?;
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(bad("the value holds a line break"));
    }
    Ok((name.to_string(), value))
}

/// `${NAME}` references in a header value replaced by their variables.
fn expand(
    value: &str,
    header: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(literal) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = literal;
        } else if let Some(reference) = after.strip_prefix("${") {
            let Some(end) = reference.find('}') else {
                return Err(ConfigError::Header {
                    name: header.to_string(),
                    reason: "an unclosed ${ in the value".into(),
                });
            };
            let variable = &reference[..end];
            let resolved = env(variable).ok_or_else(|| ConfigError::Env {
                header: header.to_string(),
                variable: variable.to_string(),
            })?;
            out.push_str(&resolved);
            rest = &reference[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The certificate authorities in the PEM file at `path`.
fn ca_certs(path: &PathBuf) -> Result<RootCerts, ConfigError> {
    let bad = |reason: String| ConfigError::CaCert {
        path: path.display().to_string(),
        reason,
    };
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let mut certs: Vec<Certificate<'static>> = Vec::new();
    for item in ureq::tls::parse_pem(&pem) {
        if let PemItem::Certificate(cert) = item.map_err(|e| bad(e.to_string()))? {
            certs.push(cert);
        }
    }
    if certs.is_empty() {
        return Err(bad("no certificate in the file".into()));
    }
    Ok(RootCerts::Specific(Arc::new(certs)))
}

impl HttpConfig {
    /// The HTTP client for these settings: statuses as answers (not errors), no redirect
    /// followed (a redirect is reported with where it points), the built-in web PKI roots or
    /// the `--ca-cert` ones.
    pub fn agent(&self) -> Result<Agent, ConfigError> {
        let roots = match &self.ca_cert {
            Some(path) => ca_certs(path)?,
            None => RootCerts::WebPki,
        };
        let tls = TlsConfig::builder().root_certs(roots).build();
        Ok(Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .max_redirects_will_error(false)
            .timeout_connect(Some(self.timeout.min(CONNECT_LIMIT)))
            .tls_config(tls)
            .user_agent(concat!("ctxopt-proxy/", env!("CARGO_PKG_VERSION")))
            .build()
            .into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_string())
    }

    #[test]
    fn a_header_value_resolves_environment_references() {
        assert_eq!(
            parse_header("Authorization: Bearer ${TOKEN}", env).unwrap(),
            ("Authorization".into(), "Bearer s3cret".into())
        );
        assert_eq!(
            parse_header("X-Price:  $5 and $${TOKEN} ", env).unwrap().1,
            "$5 and ${TOKEN}"
        );
        let unset = parse_header("X-Key: ${MISSING}", env).unwrap_err();
        assert!(matches!(&unset, ConfigError::Env { variable, .. } if variable == "MISSING"));
        assert!(!unset.to_string().contains("s3cret"));
    }

    #[test]
    fn malformed_and_reserved_headers_are_refused_without_showing_the_value() {
        for text in [
            "no colon",
            "Bad Name: x",
            ": x",
            "Mcp-Session-Id: x",
            "X: ${TOKEN",
        ] {
            let err = parse_header(text, env).unwrap_err();
            assert!(matches!(err, ConfigError::Header { .. }), "{text}: {err}");
        }
        let err = parse_header("Accept: secret-value", env).unwrap_err();
        assert!(!err.to_string().contains("secret-value"), "{err}");
    }

    #[test]
    fn urls_are_checked_and_shown_without_credentials() {
        assert!(check_url("https://example.com/mcp").is_ok());
        assert!(check_url("http://127.0.0.1:8080").is_ok());
        for bad in [
            "ftp://example.com/",
            "example.com/mcp",
            "https://",
            "not a url",
        ] {
            assert!(check_url(bad).is_err(), "{bad}");
        }
        assert_eq!(
            display_url("https://user:pw@host.example:8443/mcp?key=abc&v=2"),
            "https://host.example:8443/mcp?key=…&v=…"
        );
        assert_eq!(display_url("http://h/mcp"), "http://h/mcp");
    }

    #[test]
    fn a_ca_file_without_a_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ca.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let config = HttpConfig {
            url: "https://h/".into(),
            headers: Vec::new(),
            timeout: Duration::from_secs(1),
            ca_cert: Some(path),
            transport: Transport::Auto,
        };
        assert!(matches!(config.agent(), Err(ConfigError::CaCert { .. })));
        let missing = HttpConfig {
            ca_cert: Some(dir.path().join("missing.pem")),
            ..config
        };
        assert!(matches!(missing.agent(), Err(ConfigError::CaCert { .. })));
    }
}
