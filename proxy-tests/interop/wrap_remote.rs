//! `ctxopt wrap` of a remote entry, end to end: a client config whose entry reaches a live
//! server-everything over Streamable HTTP with a header that references a variable is wrapped
//! by the real `ctxopt` binary; the wrapped entry's command line, started with the environment
//! the client gives a stdio server, is the TypeScript SDK client's stdio server, and the
//! session equals the same client's talking HTTP to the server directly; the frame log has
//! it; the header's secret is in no file; `ctxopt unwrap` gives the config back byte for
//! byte. For Claude Code's `.mcp.json` (`type: "http"`, which passes its own environment) and
//! for Codex's `config.toml` (`url`, `bearer_token_env_var`, `env_http_headers`, which passes a
//! filtered environment and the variables `env_vars` names).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use ctxopt::clients::entries::{self, ServersAt, State};

use super::peers::{fixture_tree, Client, Peers, Server};
use super::remote::{assert_remote_log, Served, TOKEN, TOKEN_VAR};
use super::session::{run_driver, run_driver_command};
use super::sessions::assert_same_session;
use crate::wrap::Sandbox;

/// A second variable a header takes its value from, and its value.
const TEAM_VAR: &str = "CTXOPT_TEST_REMOTE_TEAM";
const TEAM: &str = "team-value-that-must-never-reach-the-disk";

/// The variables Codex passes to every stdio server it starts, when it has them
/// (`DEFAULT_ENV_VARS` of Codex's `codex-rs/rmcp-client/src/utils.rs`, Unix).
const CODEX_DEFAULT_ENV: [&str; 11] = [
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "__CF_USER_TEXT_ENCODING",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "TZ",
];

/// A client's config holding one remote entry, `everything`.
struct Case {
    /// The client, as `ctxopt wrap --client` names it.
    client: &'static str,
    /// The config file.
    config: PathBuf,
    /// Where its servers are.
    servers: ServersAt,
    /// Its text before wrap.
    text: String,
}

/// The entry `everything` of the wrapped config: its command line, and the variables it
/// names in `env_vars` (Codex).
fn wrapped_launch(case: &Case, text: &str) -> (Vec<String>, Vec<String>) {
    let servers = entries::read(text, &case.servers, &case.config)
        .unwrap()
        .unwrap();
    let entry = servers
        .entries
        .iter()
        .find(|e| e.key == "everything")
        .unwrap_or_else(|| panic!("no everything entry in {text}"));
    assert!(
        matches!(entry.state, State::Wrapped(_)),
        "not wrapped: {:?}\n{text}",
        entry.state
    );
    let line = entry.command_line().unwrap();
    let named = match case.servers {
        ServersAt::Toml => {
            let doc = toml_edit::Document::parse(text).unwrap();
            doc["mcp_servers"]["everything"]
                .get("env_vars")
                .and_then(|e| e.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default()
        }
        ServersAt::Json(_) => Vec::new(),
    };
    (line, named)
}

/// The environment the client gives a stdio server it starts: Claude Code its own (the
/// sandbox's, and the secrets); Codex the variables it always passes and those `env_vars`
/// names, from its own.
fn server_env(sandbox: &Sandbox, case: &Case, named: &[String]) -> Vec<(String, OsString)> {
    let mut own: Vec<(String, OsString)> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
        .collect();
    own.retain(|(k, _)| {
        ![
            "HOME",
            "PATH",
            "XDG_CONFIG_HOME",
            "XDG_STATE_HOME",
            "XDG_DATA_HOME",
        ]
        .contains(&k.as_str())
    });
    own.extend([
        ("HOME".into(), sandbox.home.clone().into()),
        ("PATH".into(), Sandbox::path_var().into()),
        (
            "XDG_CONFIG_HOME".into(),
            sandbox.home.join(".config").into(),
        ),
        ("XDG_STATE_HOME".into(), sandbox.root.join("state").into()),
        ("XDG_DATA_HOME".into(), sandbox.root.join("data").into()),
        (TOKEN_VAR.into(), TOKEN.into()),
        (TEAM_VAR.into(), TEAM.into()),
    ]);
    match case.servers {
        ServersAt::Json(_) => own,
        ServersAt::Toml => own
            .into_iter()
            .filter(|(k, _)| CODEX_DEFAULT_ENV.contains(&k.as_str()) || named.contains(k))
            .collect(),
    }
}

/// Every file under `dir`.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(files(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// The proxy's finished frame log of the server `everything`, wherever under the sandbox it
/// went (its state folder: the client's `XDG_STATE_HOME`, or `~/.local/state`).
fn finished_log(sandbox: &Sandbox) -> PathBuf {
    let found =
        crate::support::poll_until(Duration::from_secs(30), Duration::from_millis(50), || {
            files(&sandbox.root).into_iter().find(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                name.contains("-everything-")
                    && name.ends_with(".jsonl")
                    && std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"type\":\"trailer\""))
            })
        });
    found.unwrap_or_else(|| panic!("no finished log of everything under {:?}", sandbox.root))
}

/// Wraps `case`'s config with the real `ctxopt`, runs the wrapped entry as the TypeScript SDK
/// client's stdio server and the same client over HTTP directly, and unwraps.
fn wrap_run_unwrap(sandbox: &Sandbox, case: &Case, peers: &Peers, served: &Served) {
    std::fs::write(&case.config, &case.text).unwrap();
    sandbox.ctxopt_ok(&["wrap", "--client", case.client]);
    let wrapped = std::fs::read_to_string(&case.config).unwrap();
    let (line, named) = wrapped_launch(case, &wrapped);
    assert_eq!(line[0], "ctxopt-proxy");
    assert!(
        line.windows(2).any(|w| w == ["--url", served.url.as_str()]),
        "{line:?}"
    );
    let env = server_env(sandbox, case, &named);

    // Without the variables `env_vars` names, Codex's proxy could not send the headers: it
    // stops, naming the variable (the canary of the environment that follows).
    if let ServersAt::Toml = case.servers {
        assert_eq!(named, [TOKEN_VAR, TEAM_VAR], "{wrapped}");
        let bare = Command::new(&line[0])
            .args(&line[1..])
            .env_clear()
            .envs(
                env.iter()
                    .filter(|(k, _)| !named.contains(k))
                    .map(|(k, v)| (k, v)),
            )
            .current_dir(&sandbox.project)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(bare.status.code(), Some(125), "{bare:?}");
        assert!(
            String::from_utf8_lossy(&bare.stderr).contains(TOKEN_VAR),
            "{bare:?}"
        );
    }

    let direct = run_driver(
        &peers.client_over_http(Client::Ts, Server::Everything, &fixture_tree(), &served.url),
        &[],
    );
    let launch: Vec<OsString> = line.iter().map(OsString::from).collect();
    let client = peers.client_command(Client::Ts, Server::Everything, &fixture_tree(), &launch);
    let mut driver = Command::new(&client[0]);
    driver
        .args(&client[1..])
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(&sandbox.project);
    let proxied = run_driver_command(driver);
    let what = format!("{}: the wrapped remote entry", case.client);
    assert_same_session(&direct, &proxied, &what);
    let log = assert_remote_log(&finished_log(sandbox), served, &proxied, false);
    let calls = log
        .frames
        .iter()
        .filter(|f| f.method.as_deref() == Some("tools/call"))
        .count();
    assert!(calls > 0, "{what}: no tools/call in the log");

    for file in files(&sandbox.root) {
        let bytes = std::fs::read(&file).unwrap();
        for secret in [TOKEN, TEAM] {
            let found = bytes.windows(secret.len()).any(|w| w == secret.as_bytes());
            assert!(!found, "{what}: a header's secret is in {}", file.display());
        }
    }

    sandbox.ctxopt_ok(&["unwrap", "--client", case.client]);
    let back = std::fs::read(&case.config).unwrap();
    assert!(
        back == case.text.as_bytes(),
        "{what}: unwrap gave back\n{}",
        String::from_utf8_lossy(&back)
    );
}

#[test]
fn a_wrapped_remote_entry_of_claude_code_and_of_codex_reaches_the_live_server() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let served = Served::peer(&peers, Server::Everything, false);
    let url = &served.url;

    let sandbox = Sandbox::new();
    let claude = Case {
        client: "claude-code",
        config: sandbox.project.join(".mcp.json"),
        servers: ServersAt::Json(vec!["mcpServers".into()]),
        text: format!(
            "{{\n  \"mcpServers\": {{\n    \"everything\": {{\n      \"type\": \"http\",\n      \"url\": \"{url}\",\n      \"headers\": {{\n        \"Authorization\": \"Bearer ${{{TOKEN_VAR}}}\",\n        \"X-Team\": \"${{{TEAM_VAR}}}\"\n      }}\n    }}\n  }}\n}}\n"
        ),
    };
    wrap_run_unwrap(&sandbox, &claude, &peers, &served);

    let sandbox = Sandbox::new();
    let codex_home = sandbox.home.join(".codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let codex = Case {
        client: "codex",
        config: codex_home.join("config.toml"),
        servers: ServersAt::Toml,
        text: format!(
            "model = \"gpt-5.1-codex\"\n\n# server-everything over Streamable HTTP\n[mcp_servers.everything]\nurl = \"{url}\"\nbearer_token_env_var = \"{TOKEN_VAR}\"\nenv_http_headers = {{ \"X-Team\" = \"{TEAM_VAR}\" }}\nhttp_headers = {{ \"X-Static\" = \"a${{b}}\" }}\ntool_timeout_sec = 120\n"
        ),
    };
    wrap_run_unwrap(&sandbox, &codex, &peers, &served);
}
