//! Whether ctxopt serves its context tools to the client a hook runs for: the key of a
//! `ctxopt serve` entry in the client's configuration files (the project's, then the
//! user's), for the line that ends every answer ([`super::answer::more_line`]).

use std::path::{Path, PathBuf};

use crate::clients::catalog::{self, HookClient, Roots};
use crate::clients::config_file::ConfigFile;
use crate::clients::entries::{self, State};

/// How a hook knows whether ctxopt serves `build_context` to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolServer {
    /// Read the client's configuration files (the home folder's and the workspace's).
    Detect,
    /// Known already: the server's key, or none.
    Known(Option<String>),
}

impl ToolServer {
    /// The key of the server that serves `build_context` to `client` in the workspace `cwd`.
    pub(crate) fn resolve(&self, client: HookClient, cwd: &Path) -> Option<String> {
        match self {
            ToolServer::Known(server) => server.clone(),
            ToolServer::Detect => {
                let roots = Roots::from_env(PathBuf::from(cwd))?;
                serving_entry(client, &roots)
            }
        }
    }
}

/// The first `ctxopt serve` entry of `client`'s configuration files under `roots`.
fn serving_entry(client: HookClient, roots: &Roots) -> Option<String> {
    catalog::locations(roots)
        .into_iter()
        .filter(|l| l.client == client.client() && l.path.is_file())
        .find_map(|location| {
            let text = ConfigFile::read(&location.path).ok()?.text?;
            let servers = entries::read(&text, &location.servers, &location.path).ok()??;
            servers
                .entries
                .into_iter()
                .find(|e| matches!(e.state, State::Serve))
                .map(|e| e.key)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ctxopt_serve_entry_of_the_client_is_found_and_another_clients_is_not() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let roots = Roots {
            home: home.path().to_path_buf(),
            config: home.path().join(".config"),
            codex_home: home.path().join(".codex"),
            project: project.path().to_path_buf(),
        };
        assert_eq!(serving_entry(HookClient::ClaudeCode, &roots), None);
        std::fs::write(
            project.path().join(".mcp.json"),
            r#"{"mcpServers": {"fs": {"command": "npx", "args": ["x"]},
                "context": {"command": "ctxopt", "args": ["serve"]}}}"#,
        )
        .unwrap();
        assert_eq!(
            serving_entry(HookClient::ClaudeCode, &roots).as_deref(),
            Some("context")
        );
        assert_eq!(serving_entry(HookClient::GeminiCli, &roots), None);
    }
}
