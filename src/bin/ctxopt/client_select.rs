//! The client config files a `wrap`, `unwrap` or `status` run looks at: every known file
//! that exists, narrowed by `--client`, `--scope` or one `--config PATH`.

use std::path::PathBuf;

use anyhow::Context;
use ctxopt::clients::catalog::{self, Client, ConfigScope, Location, Roots};

/// Which client files to look at.
#[derive(Debug, clap::Args)]
pub(crate) struct Selector {
    /// Only these clients (claude-code, gemini-cli, cursor, vscode, codex, claude-desktop,
    /// windsurf, zed); default: all.
    #[arg(long = "client", value_name = "NAME")]
    clients: Vec<Client>,
    /// Only this file (its dialect from --client, else guessed from its name).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Only this scope: user, project (files in the current directory), or local (Claude
    /// Code's per-project entries in ~/.claude.json).
    #[arg(long)]
    scope: Option<ConfigScope>,
}

impl Selector {
    /// The locations selected whose file exists.
    pub(crate) fn locations(&self) -> anyhow::Result<Vec<Location>> {
        if let Some(path) = &self.config {
            anyhow::ensure!(
                self.clients.len() <= 1,
                "--config takes at most one --client"
            );
            anyhow::ensure!(path.exists(), "{} does not exist", path.display());
            return Ok(vec![catalog::explicit(path, self.clients.first().copied())]);
        }
        let roots = roots()?;
        Ok(catalog::locations(&roots)
            .into_iter()
            .filter(|l| self.clients.is_empty() || self.clients.contains(&l.client))
            .filter(|l| self.scope.is_none_or(|s| s == l.scope))
            .filter(|l| l.path.exists())
            .collect())
    }
}

/// The folders config paths are relative to (the project is the current directory).
pub(crate) fn roots() -> anyhow::Result<Roots> {
    let project = std::env::current_dir().context("reading the current directory")?;
    Roots::from_env(project).context("no home directory ($HOME is not set)")
}

/// How a location is named in output: `client scope path`.
pub(crate) fn title(location: &Location) -> String {
    format!(
        "{} ({}): {}",
        location.client,
        location.scope.name(),
        location.path.display()
    )
}

/// Whether a Claude Code process is running (it rewrites `~/.claude.json` while it runs).
pub(crate) fn claude_code_running() -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim_end() == "claude")
    })
}
