//! Scopes: the set a login asks for (the scopes already granted, then the ones asked for
//! now), and a 403 whose challenge is `insufficient_scope` (the MCP authorization
//! specification's "Scope challenge handling", revision 2025-11-25) made the command that
//! gets the wider grant. The proxy never retries such a request: the user decides.

use super::bearer::ProxyAuth;
use super::metadata::parse_challenge;
use crate::upstream::http::fault::Fault;

/// The scopes of `granted`, then each scope of `more` not among them (space-separated, in
/// that order, each once); `None` when there are none.
pub(crate) fn union(granted: Option<&str>, more: Option<&str>) -> Option<String> {
    let mut all: Vec<&str> = Vec::new();
    for scope in [granted, more]
        .into_iter()
        .flatten()
        .flat_map(str::split_whitespace)
    {
        if !all.contains(&scope) {
            all.push(scope);
        }
    }
    (!all.is_empty()).then(|| all.join(" "))
}

/// The fault of a 403 whose `WWW-Authenticate` values are `challenges`, when one of them is
/// a Bearer `insufficient_scope` challenge: it names the login command that asks for the
/// scopes granted and the ones challenged (`auth`: the stored token sent; `None`: the user's
/// own `Authorization` header, which ctxopt cannot widen).
pub(crate) fn challenge_fault<'a>(
    challenges: impl IntoIterator<Item = &'a str>,
    auth: Option<&ProxyAuth>,
) -> Option<Fault> {
    let challenge = challenges
        .into_iter()
        .map(parse_challenge)
        .find(|c| c.error.as_deref() == Some("insufficient_scope"))?;
    let fix = match auth {
        Some(auth) => format!("run: {}", auth.step_up_command(challenge.scope.as_deref())),
        None => "the Authorization header given with --header does not carry it".to_string(),
    };
    Some(Fault::InsufficientScope {
        scope: challenge.scope,
        fix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_union_keeps_the_granted_scopes_first_and_each_scope_once() {
        assert_eq!(
            union(Some("mcp:tools files:read"), Some("files:write  mcp:tools")).as_deref(),
            Some("mcp:tools files:read files:write")
        );
        assert_eq!(union(None, Some("a")).as_deref(), Some("a"));
        assert_eq!(union(Some("a"), None).as_deref(), Some("a"));
        assert_eq!(union(Some(" "), None), None);
    }

    #[test]
    fn only_an_insufficient_scope_challenge_is_a_step_up() {
        let step_up = r#"Bearer error="insufficient_scope", scope="files:write", resource_metadata="https://h/.well-known/oauth-protected-resource""#;
        let fault = challenge_fault([step_up], None).expect("a step-up");
        assert_eq!(
            fault.to_string(),
            "HTTP 403: insufficient_scope: the server requires the scope \"files:write\"; the Authorization header given with --header does not carry it"
        );
        assert!(challenge_fault([r#"Bearer error="invalid_token""#], None).is_none());
        assert!(challenge_fault(["Basic realm=\"x\""], None).is_none());
        let unnamed = challenge_fault([r#"Bearer error="insufficient_scope""#], None).unwrap();
        assert!(unnamed
            .to_string()
            .contains("the server requires a scope it did not name"));
    }
}
