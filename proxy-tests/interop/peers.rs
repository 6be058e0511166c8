//! Where the real peers live, and the command lines that start them.
//!
//! The peers are installed from pinned lock files into `proxy-tests/peers/` (npm packages in
//! `node_modules/`, the Python SDK in `.venv/`) by `proxy-tests/run-all`. A test that needs them
//! and finds them missing fails with the command that installs them, unless
//! `CTXOPT_SKIP_PEER_TESTS=1` says to skip.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::peers::{skip_requested, SKIP_VAR};

/// The installed peers.
#[derive(Debug, Clone)]
pub(crate) struct Peers {
    /// `proxy-tests/peers/`.
    pub dir: PathBuf,
    /// The virtualenv's Python, with `mcp` installed.
    pub python: PathBuf,
}

impl Peers {
    /// Finds the installed peers. Returns `None` (after saying so) when they are missing and
    /// [`SKIP_VAR`] is set; panics with the install command when they are missing otherwise.
    pub(crate) fn locate() -> Option<Peers> {
        let dir = crate::support::peers::dir();
        let peers = Peers {
            python: dir.join(".venv/bin/python"),
            dir,
        };
        match peers.missing() {
            None => Some(peers),
            Some(what) if skip_requested() => {
                eprintln!("skipping: {what} ({SKIP_VAR} is set)");
                None
            }
            Some(what) => panic!(
                "the interop test peers are not installed: {what}.\n\
                 Install them with `./proxy-tests/run-all --install-only` (npm ci + a Python venv from \
                 the pinned lock files in proxy-tests/peers/), or set {SKIP_VAR}=1 to skip these tests."
            ),
        }
    }

    fn missing(&self) -> Option<String> {
        let node_ok = Command::new("node")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !node_ok {
            return Some("`node` is not on PATH".into());
        }
        for server in [Server::Filesystem, Server::Everything, Server::Memory] {
            let script = self.server_script(server);
            if !script.is_file() {
                return Some(format!("{} is missing", script.display()));
            }
        }
        if !self.dir.join("node_modules/gpt-tokenizer").is_dir() {
            return Some("node_modules/gpt-tokenizer is missing".into());
        }
        if !self.python.is_file() {
            return Some(format!("{} is missing", self.python.display()));
        }
        None
    }

    fn server_script(&self, server: Server) -> PathBuf {
        let package = match server {
            Server::Filesystem => "server-filesystem",
            Server::Everything => "server-everything",
            Server::Memory => "server-memory",
            Server::PythonSdk => return self.dir.join("py_server.py"),
            Server::SdkExample => {
                return self.dir.join(
                    "node_modules/@modelcontextprotocol/sdk/dist/esm/examples/server/simpleStreamableHttp.js",
                )
            }
        };
        self.dir
            .join("node_modules/@modelcontextprotocol")
            .join(package)
            .join("dist/index.js")
    }

    /// The command line that starts `server` (the filesystem server serves `fixture`).
    pub(crate) fn server_command(&self, server: Server, fixture: &Path) -> Vec<OsString> {
        let script = self.server_script(server).into_os_string();
        match server {
            Server::Filesystem => vec!["node".into(), script, fixture.into()],
            Server::Everything => vec!["node".into(), script, "stdio".into()],
            Server::Memory => vec!["node".into(), script],
            Server::PythonSdk => vec![self.python.clone().into_os_string(), script],
            Server::SdkExample => vec!["node".into(), script],
        }
    }

    /// The command that serves `server` (server-everything or the Python SDK server) over
    /// Streamable HTTP at `http://127.0.0.1:{port}/mcp`; `json`: the Python server answers
    /// with JSON bodies instead of event streams.
    pub(crate) fn http_server_command(&self, server: Server, port: u16, json: bool) -> Command {
        let script = self.server_script(server);
        match server {
            Server::Everything => {
                let mut command = Command::new("node");
                command
                    .arg(script)
                    .arg("streamableHttp")
                    .env("PORT", port.to_string());
                command
            }
            Server::PythonSdk => {
                let mut command = Command::new(&self.python);
                command.arg(script).args(["--http", &port.to_string()]);
                if json {
                    command.arg("--json");
                }
                command
            }
            other => panic!("{other:?} has no Streamable HTTP mode"),
        }
    }

    /// server-everything serving the legacy HTTP+SSE transport (2024-11-05): its event stream
    /// at `http://127.0.0.1:{port}/sse`, the endpoint it names `/message`.
    pub(crate) fn sse_server_command(&self, port: u16) -> Command {
        let mut command = Command::new("node");
        command
            .arg(self.server_script(Server::Everything))
            .arg("sse")
            .env("PORT", port.to_string());
        command
    }

    /// `client`'s scripted session for `server` (roots: `fixture`), talking the legacy
    /// HTTP+SSE transport to the event stream at `url` itself.
    pub(crate) fn client_over_sse(
        &self,
        client: Client,
        server: Server,
        fixture: &Path,
        url: &str,
    ) -> Vec<OsString> {
        let mut command = self.client_over_http(client, server, fixture, url);
        command.push("--sse".into());
        command
    }

    /// `client`'s scripted session for `server` (roots: `fixture`), talking Streamable HTTP
    /// to `url` itself.
    pub(crate) fn client_over_http(
        &self,
        client: Client,
        server: Server,
        fixture: &Path,
        url: &str,
    ) -> Vec<OsString> {
        let mut command = self.client_prefix(client, server);
        command.extend(["--root".into(), fixture.into(), "--url".into(), url.into()]);
        command
    }

    /// The interpreter, the driver and its mode and scenario.
    fn client_prefix(&self, client: Client, server: Server) -> Vec<OsString> {
        let mut command: Vec<OsString> = match client {
            Client::Ts => vec!["node".into(), self.dir.join("ts_client.mjs").into()],
            Client::PySession | Client::PyHighLevel => vec![
                self.python.clone().into(),
                self.dir.join("py_client.py").into(),
                if client == Client::PySession {
                    "session"
                } else {
                    "client"
                }
                .into(),
            ],
        };
        command.push(server.scenario().into());
        command
    }

    /// The command line that runs `client`'s scripted session for `server` against `target`
    /// (the server's own command, or the proxy wrapping it).
    pub(crate) fn client_command(
        &self,
        client: Client,
        server: Server,
        fixture: &Path,
        target: &[OsString],
    ) -> Vec<OsString> {
        let mut command = self.client_prefix(client, server);
        command.extend(["--root".into(), fixture.into(), "--".into()]);
        command.extend(target.iter().cloned());
        command
    }

    /// The independent token counter (`count_tokens.mjs`, npm `gpt-tokenizer`).
    pub(crate) fn token_counter(&self) -> PathBuf {
        self.dir.join("count_tokens.mjs")
    }
}

/// A real MCP server the tests drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Server {
    /// `@modelcontextprotocol/server-filesystem` on the fixture tree.
    Filesystem,
    /// `@modelcontextprotocol/server-everything` (notifications, roots, sampling, elicitation).
    Everything,
    /// `@modelcontextprotocol/server-memory` (a knowledge graph in a temporary file).
    Memory,
    /// `proxy-tests/peers/py_server.py`, on the Python SDK (answers `server/discover`).
    PythonSdk,
    /// The TypeScript SDK's example server (`simpleStreamableHttp.js`), served over HTTP
    /// with its demo OAuth provider.
    SdkExample,
}

impl Server {
    /// The driver scenario that matches this server.
    pub(crate) fn scenario(self) -> &'static str {
        match self {
            Server::Filesystem => "filesystem",
            Server::Everything => "everything",
            Server::Memory => "memory",
            Server::PythonSdk => "pyserver",
            Server::SdkExample => "sdkexample",
        }
    }
}

/// A real MCP client the tests drive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Client {
    /// The TypeScript SDK's `Client` (`ts_client.mjs`).
    Ts,
    /// The Python SDK's `ClientSession` with `initialize` (`py_client.py session`).
    PySession,
    /// The Python SDK's high-level `Client`, which probes `server/discover` (`py_client.py client`).
    PyHighLevel,
}

/// The fixture tree the filesystem server serves, as an absolute path.
pub(crate) fn fixture_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/trees/interop-project")
}
