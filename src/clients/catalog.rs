//! Which MCP clients ctxopt knows, where each keeps its server config per scope, and in
//! which dialect (`mcpServers`, VS Code's `servers`, Zed's `context_servers`, Codex's TOML).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::entries::ServersAt;

/// A client whose config ctxopt can edit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Client {
    /// Claude Code (`.mcp.json`, `~/.claude.json`).
    ClaudeCode,
    /// Gemini CLI (`.gemini/settings.json`).
    GeminiCli,
    /// Cursor (`.cursor/mcp.json`).
    Cursor,
    /// VS Code (`.vscode/mcp.json`, the user profile's `mcp.json`).
    VsCode,
    /// OpenAI Codex CLI (`.codex/config.toml`).
    Codex,
    /// Claude Desktop (`claude_desktop_config.json`).
    ClaudeDesktop,
    /// Windsurf (`~/.codeium/windsurf/mcp_config.json`).
    Windsurf,
    /// Zed (`settings.json`, `context_servers`).
    Zed,
}

impl Client {
    /// Every client, in the order they are listed.
    pub(crate) const ALL: [Client; 8] = [
        Client::ClaudeCode,
        Client::GeminiCli,
        Client::Cursor,
        Client::VsCode,
        Client::Codex,
        Client::ClaudeDesktop,
        Client::Windsurf,
        Client::Zed,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeCode => "claude-code",
            Client::GeminiCli => "gemini-cli",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Codex => "codex",
            Client::ClaudeDesktop => "claude-desktop",
            Client::Windsurf => "windsurf",
            Client::Zed => "zed",
        }
    }
}

impl fmt::Display for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Client {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Client::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Client::ALL.iter().map(|c| c.name()).collect();
                format!("unknown client {s:?} (one of {})", names.join(", "))
            })
    }
}

/// A client that ctxopt has hooks for: the one `ctxopt hook` runs for, and whose settings
/// `ctxopt hooks install` edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HookClient {
    /// Claude Code: UserPromptSubmit, SessionStart, PreCompact (and any other event to import).
    ClaudeCode,
    /// Gemini CLI: BeforeAgent, SessionStart, PreCompress.
    GeminiCli,
}

impl HookClient {
    /// The client.
    pub fn client(self) -> Client {
        match self {
            HookClient::ClaudeCode => Client::ClaudeCode,
            HookClient::GeminiCli => Client::GeminiCli,
        }
    }

    /// The client's name (`claude-code`, `gemini-cli`), also the store's server name for
    /// what its hooks import.
    pub fn name(self) -> &'static str {
        self.client().name()
    }
}

impl TryFrom<Client> for HookClient {
    type Error = String;

    fn try_from(client: Client) -> Result<Self, Self::Error> {
        match client {
            Client::ClaudeCode => Ok(HookClient::ClaudeCode),
            Client::GeminiCli => Ok(HookClient::GeminiCli),
            other => Err(format!(
                "ctxopt has no hooks for {other} (claude-code or gemini-cli)"
            )),
        }
    }
}

/// A config scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigScope {
    /// The user's own files, for every project.
    User,
    /// Files in the project folder.
    Project,
    /// Claude Code's per-project entries inside `~/.claude.json`.
    Local,
}

impl ConfigScope {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ConfigScope::User => "user",
            ConfigScope::Project => "project",
            ConfigScope::Local => "local",
        }
    }
}

impl FromStr for ConfigScope {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "user" => Ok(ConfigScope::User),
            "project" => Ok(ConfigScope::Project),
            "local" => Ok(ConfigScope::Local),
            other => Err(format!("unknown scope {other:?} (user, project or local)")),
        }
    }
}

/// One config file of one client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The client.
    pub client: Client,
    /// The scope.
    pub scope: ConfigScope,
    /// The file.
    pub path: PathBuf,
    /// Where in it the servers are.
    pub servers: ServersAt,
}

/// The folders config paths are relative to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    /// The home folder (`$HOME`).
    pub home: PathBuf,
    /// The platform's config folder (`$XDG_CONFIG_HOME`, else `~/.config` on Linux).
    pub config: PathBuf,
    /// Codex's home (`$CODEX_HOME`, else `~/.codex`).
    pub(crate) codex_home: PathBuf,
    /// The project folder (the current directory).
    pub project: PathBuf,
}

impl Roots {
    /// The roots from the environment; `None` when the home folder is unknown.
    pub fn from_env(project: PathBuf) -> Option<Roots> {
        let home = dirs::home_dir()?;
        let config = dirs::config_dir().unwrap_or_else(|| home.join(".config"));
        let codex_home = std::env::var_os("CODEX_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".codex"));
        Some(Roots {
            home,
            config,
            codex_home,
            project,
        })
    }
}

fn json(keys: &[&str]) -> ServersAt {
    ServersAt::Json(keys.iter().map(|k| k.to_string()).collect())
}

impl Client {
    /// Where the client's files keep their servers (Claude Code's local scope aside).
    pub(crate) fn servers_at(self) -> ServersAt {
        match self {
            Client::Codex => ServersAt::Toml,
            Client::Zed => json(&["context_servers"]),
            Client::VsCode => json(&["servers"]),
            _ => json(&["mcpServers"]),
        }
    }
}

/// Every config location of every client, whether the file exists or not.
pub fn locations(roots: &Roots) -> Vec<Location> {
    use Client::*;
    use ConfigScope::*;
    let home = |p: &str| roots.home.join(p);
    let project = |p: &str| roots.project.join(p);
    let config = |p: &str| roots.config.join(p);
    let files = [
        (ClaudeCode, Project, project(".mcp.json")),
        (ClaudeCode, User, home(".claude.json")),
        (ClaudeCode, Local, home(".claude.json")),
        (GeminiCli, User, home(".gemini/settings.json")),
        (GeminiCli, Project, project(".gemini/settings.json")),
        (Cursor, User, home(".cursor/mcp.json")),
        (Cursor, Project, project(".cursor/mcp.json")),
        (VsCode, Project, project(".vscode/mcp.json")),
        (VsCode, User, config("Code/User/mcp.json")),
        (Codex, User, roots.codex_home.join("config.toml")),
        (Codex, Project, project(".codex/config.toml")),
        (
            ClaudeDesktop,
            User,
            config("Claude/claude_desktop_config.json"),
        ),
        (Windsurf, User, home(".codeium/windsurf/mcp_config.json")),
        (Zed, User, config("zed/settings.json")),
        (Zed, Project, project(".zed/settings.json")),
    ];
    files
        .into_iter()
        .map(|(client, scope, path)| Location {
            client,
            scope,
            path,
            servers: if scope == Local {
                ServersAt::Json(vec![
                    "projects".into(),
                    roots.project.to_string_lossy().into_owned(),
                    "mcpServers".into(),
                ])
            } else {
                client.servers_at()
            },
        })
        .collect()
}

/// The location for a file named on the command line: its client's dialect, guessed from
/// the file when no client is given (`.toml` is Codex; a file in a `zed` or `.zed` folder
/// is Zed; one in `.vscode` or `Code/User` is VS Code; anything else uses `mcpServers`).
pub fn explicit(path: &Path, client: Option<Client>) -> Location {
    let folder = path
        .parent()
        .and_then(Path::file_name)
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let toml = path.extension().is_some_and(|e| e == "toml");
    let client = client.unwrap_or(if toml {
        Client::Codex
    } else if folder == "zed" || folder == ".zed" {
        Client::Zed
    } else if folder == ".vscode" || path.ends_with("Code/User/mcp.json") {
        Client::VsCode
    } else {
        Client::ClaudeCode
    });
    let servers = client.servers_at();
    Location {
        client,
        scope: ConfigScope::User,
        path: path.to_path_buf(),
        servers,
    }
}
