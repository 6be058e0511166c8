//! `ctxopt wrap` / `unwrap` / `status` / `hooks` on the awkward client configs of
//! `fixtures/configs/` (one per client format), in a sandbox `HOME` and project folder; and
//! end to end: a wrapped config's command lines, run as a client runs them (`ctxopt-proxy`
//! and `ctxopt` found on `PATH`), start the real server-filesystem through the proxy and the
//! context tools through `ctxopt serve`, driven by the real TypeScript SDK client.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use ctxopt::clients::entries::{self, ServersAt, State};

use crate::support::command::run_ok;
use crate::support::peers::peer;

/// A temporary home, project and state folder.
pub(crate) struct Sandbox {
    _dir: tempfile::TempDir,
    /// The folder that holds everything else (and the state folder, `state/`).
    pub(crate) root: PathBuf,
    /// `HOME`.
    pub(crate) home: PathBuf,
    /// The project folder, the commands' current folder.
    pub(crate) project: PathBuf,
}

impl Sandbox {
    pub(crate) fn new() -> Sandbox {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let home = root.join("home");
        let project = root.join("project");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&project).unwrap();
        Sandbox {
            _dir: dir,
            root,
            home,
            project,
        }
    }

    /// The test build's `bin` folder first on `PATH`, as after `cargo install`.
    pub(crate) fn path_var() -> String {
        let bin = Path::new(env!("CARGO_BIN_EXE_ctxopt-proxy"))
            .parent()
            .unwrap();
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        )
    }

    /// `program` in the project folder, with the sandbox's `HOME`, config and state folders
    /// and `PATH`.
    pub(crate) fn command(&self, program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.current_dir(&self.project)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("XDG_STATE_HOME", self.root.join("state"))
            .env("PATH", Sandbox::path_var())
            .env_remove("CODEX_HOME");
        cmd
    }

    fn ctxopt(&self, args: &[&str]) -> Output {
        self.command(env!("CARGO_BIN_EXE_ctxopt"))
            .args(args)
            .output()
            .unwrap()
    }

    /// Runs `ctxopt ARGS` in the sandbox; panics unless it succeeds; its output.
    pub(crate) fn ctxopt_ok(&self, args: &[&str]) -> String {
        let out = self.ctxopt(args);
        assert!(
            out.status.success(),
            "ctxopt {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// Copies `fixtures/configs/<fixture>` to `dest` (relative to the sandbox root).
    fn place(&self, fixture: &str, dest: &str) -> PathBuf {
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/configs")
            .join(fixture);
        let text = std::fs::read_to_string(source).unwrap();
        let text = text.replace("@PROJECT@", &self.project.to_string_lossy());
        let path = self.root.join(dest);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    /// Replaces the sandbox's path in output.
    fn redact(&self, text: &str) -> String {
        text.replace(&self.root.to_string_lossy().into_owned(), "[SANDBOX]")
    }
}

/// Fixture, where it goes, and where its servers are.
fn placements(project: &Path) -> Vec<(&'static str, &'static str, ServersAt)> {
    let json = |k: &[&str]| ServersAt::Json(k.iter().map(|s| s.to_string()).collect());
    vec![
        (
            "claude-code/mcp.json",
            "project/.mcp.json",
            json(&["mcpServers"]),
        ),
        (
            "claude-code/claude.json",
            "home/.claude.json",
            json(&["mcpServers"]),
        ),
        (
            "claude-code/claude.json",
            "home/.claude.json",
            ServersAt::Json(vec![
                "projects".into(),
                project.to_string_lossy().into_owned(),
                "mcpServers".into(),
            ]),
        ),
        (
            "gemini-cli/settings.json",
            "home/.gemini/settings.json",
            json(&["mcpServers"]),
        ),
        (
            "cursor/mcp.json",
            "project/.cursor/mcp.json",
            json(&["mcpServers"]),
        ),
        (
            "vscode/mcp.json",
            "project/.vscode/mcp.json",
            json(&["servers"]),
        ),
        (
            "codex/config.toml",
            "home/.codex/config.toml",
            ServersAt::Toml,
        ),
        (
            "claude-desktop/claude_desktop_config.json",
            "home/.config/Claude/claude_desktop_config.json",
            json(&["mcpServers"]),
        ),
        (
            "windsurf/mcp_config.json",
            "home/.codeium/windsurf/mcp_config.json",
            json(&["mcpServers"]),
        ),
        (
            "zed/settings.json",
            "dotfiles/zed-settings.json",
            json(&["context_servers"]),
        ),
    ]
}

/// Places every fixture; Gemini's settings get mode 0600 and Zed's are a symlink into a
/// dotfiles folder. Returns each placed file and its original bytes.
fn place_all(sandbox: &Sandbox) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    for (fixture, dest, _) in placements(&sandbox.project) {
        let path = sandbox.place(fixture, dest);
        if !files.iter().any(|(p, _)| *p == path) {
            files.push((path.clone(), std::fs::read_to_string(&path).unwrap()));
        }
    }
    let gemini = sandbox.home.join(".gemini/settings.json");
    std::fs::set_permissions(&gemini, std::fs::Permissions::from_mode(0o600)).unwrap();
    let zed = sandbox.home.join(".config/zed/settings.json");
    std::fs::create_dir_all(zed.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(sandbox.root.join("dotfiles/zed-settings.json"), &zed).unwrap();
    files
}

fn contents(files: &[(PathBuf, String)]) -> Vec<String> {
    files
        .iter()
        .map(|(p, _)| std::fs::read_to_string(p).unwrap())
        .collect()
}

#[test]
fn every_client_format_wraps_idempotently_and_unwraps_byte_for_byte() {
    let sandbox = Sandbox::new();
    let files = place_all(&sandbox);
    let originals: Vec<String> = files.iter().map(|(_, t)| t.clone()).collect();

    let dry = sandbox.ctxopt_ok(&["wrap", "--dry-run"]);
    assert_eq!(contents(&files), originals, "--dry-run writes nothing");
    assert!(files
        .iter()
        .all(|(p, _)| !ctxopt::clients::config_file::backup_path(p).exists()));
    insta::assert_snapshot!("wrap_dry_run", sandbox.redact(&dry));

    let report = sandbox.ctxopt_ok(&["wrap"]);
    insta::assert_snapshot!("wrap_report", sandbox.redact(&report));
    let wrapped = contents(&files);
    for ((path, original), now) in files.iter().zip(&wrapped) {
        assert_ne!(original, now, "{} was not changed", path.display());
        let backup = ctxopt::clients::config_file::backup_path(path);
        assert_eq!(&std::fs::read_to_string(&backup).unwrap(), original);
    }
    // Every stdio entry and every remote entry is behind the proxy, and serve was added;
    // headers in an env syntax the proxy lacks are listed.
    for (_, dest, at) in placements(&sandbox.project) {
        let path = sandbox.root.join(dest);
        let text = std::fs::read_to_string(&path).unwrap();
        let servers = entries::read(&text, &at, &path).unwrap().unwrap();
        let mut serve = 0;
        let mut remote = 0;
        for entry in &servers.entries {
            match &entry.state {
                State::Stdio(_) | State::Remote(_) => {
                    panic!("{dest}: {} was not wrapped", entry.key)
                }
                State::Wrapped(_) => {
                    let line = entry.command_line().unwrap();
                    assert_eq!(
                        line[..5],
                        [
                            "ctxopt-proxy",
                            "--name",
                            entry.key.as_str(),
                            "--inject",
                            "none",
                        ]
                    );
                    assert!(line[5] == "--" || line[5] == "--url", "{dest}: {line:?}");
                    remote += usize::from(line[5] == "--url");
                    // Only the entry that says legacy SSE chooses it; the others are detected.
                    let sse = line.windows(2).any(|w| w == ["--transport", "sse"]);
                    assert_eq!(sse, entry.key == "linear", "{dest}: {line:?}");
                }
                State::Serve => serve += 1,
                State::LeftAlone(why) => assert!(
                    why.contains("extension") || why.contains("does not expand"),
                    "{dest}: {}: {why}",
                    entry.key
                ),
            }
        }
        assert_eq!(serve, 1, "{dest}: one ctxopt serve entry");
        // Claude Code's `sentry` (type http) and its project's `linear` (type sse), Gemini's
        // `httpServer` and `sseServer` (a bare `url`), VS Code's `github`, Zed's `remote` (a
        // bare `url`), Codex's `figma`; Cursor's and Windsurf's headers are `${env:…}`, which
        // the proxy lacks.
        let project_servers = matches!(&at, ServersAt::Json(k) if k[0] == "projects");
        let expected = match dest {
            "project/.mcp.json"
            | "project/.vscode/mcp.json"
            | "dotfiles/zed-settings.json"
            | "home/.codex/config.toml" => 1,
            "home/.claude.json" => usize::from(project_servers),
            "home/.gemini/settings.json" => 2,
            _ => 0,
        };
        assert_eq!(remote, expected, "{dest}: remote entries wrapped");
    }
    // The other project's entries in ~/.claude.json are untouched.
    let claude = std::fs::read_to_string(sandbox.home.join(".claude.json")).unwrap();
    assert!(claude.contains(
        "\"other-tool\": {\"type\": \"stdio\", \"command\": \"uvx\", \"args\": [\"other-tool\"]}"
    ));
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&sandbox.home.join(".gemini/settings.json")), 0o600);
    let zed = sandbox.home.join(".config/zed/settings.json");
    assert!(std::fs::symlink_metadata(&zed)
        .unwrap()
        .file_type()
        .is_symlink());

    sandbox.ctxopt_ok(&["wrap"]);
    assert_eq!(contents(&files), wrapped, "wrapping twice is wrapping once");

    sandbox.ctxopt_ok(&["unwrap"]);
    assert_eq!(contents(&files), originals, "unwrap gives every byte back");
}

#[test]
fn selectors_narrow_the_files_and_unwrap_keeps_later_edits() {
    let sandbox = Sandbox::new();
    let files = place_all(&sandbox);
    sandbox.ctxopt_ok(&[
        "wrap",
        "--client",
        "cursor",
        "--scope",
        "project",
        "--no-serve",
    ]);
    let now = contents(&files);
    for ((path, original), now) in files.iter().zip(&now) {
        let cursor = path.ends_with(".cursor/mcp.json");
        assert_eq!(original != now, cursor, "{}", path.display());
    }
    let cursor = sandbox.project.join(".cursor/mcp.json");
    let wrapped = std::fs::read_to_string(&cursor).unwrap();
    assert!(
        !wrapped.contains("\"ctxopt\""),
        "--no-serve adds no serve entry"
    );
    assert!(wrapped.contains("\r\n"), "CRLF kept");
    // The user edits the file while it is wrapped: the edit survives unwrap.
    let edited = wrapped.replace("\"envFile\"", "\"timeout\": 5,\r\n      \"envFile\"");
    std::fs::write(&cursor, &edited).unwrap();
    sandbox.ctxopt_ok(&["unwrap", "--config", cursor.to_str().unwrap()]);
    let original = &files.iter().find(|(p, _)| *p == cursor).unwrap().1;
    assert_eq!(
        std::fs::read_to_string(&cursor).unwrap(),
        original.replace("\"envFile\"", "\"timeout\": 5,\r\n      \"envFile\"")
    );
}

#[test]
fn an_invalid_file_gets_an_error_naming_the_line_and_nothing_is_written() {
    let sandbox = Sandbox::new();
    let path = sandbox.place("invalid/settings.json", "home/.gemini/settings.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let out = sandbox.ctxopt(&["wrap"]);
    assert!(!out.status.success());
    let stdout = sandbox.redact(&String::from_utf8_lossy(&out.stdout));
    assert!(
        stdout.contains("line 5, column 7: expected `,` or `}`; nothing was written"),
        "{stdout}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    assert!(!ctxopt::clients::config_file::backup_path(&path).exists());
}

#[test]
fn hooks_install_is_idempotent_and_uninstall_gives_the_settings_back() {
    let sandbox = Sandbox::new();
    let path = sandbox.place("gemini-cli/settings.json", "home/.gemini/settings.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let dry = sandbox.ctxopt_ok(&["hooks", "install", "gemini-cli", "--dry-run"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    insta::assert_snapshot!("hooks_install_dry_run", sandbox.redact(&dry));
    sandbox.ctxopt_ok(&["hooks", "install", "gemini-cli"]);
    let installed = std::fs::read_to_string(&path).unwrap();
    assert!(installed.contains("// Gemini CLI reads comments"));
    sandbox.ctxopt_ok(&["hooks", "install", "gemini-cli"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), installed);
    sandbox.ctxopt_ok(&["hooks", "uninstall", "gemini-cli"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);

    // Claude Code, project scope, no settings file yet: it is created with the three events.
    sandbox.ctxopt_ok(&["hooks", "install", "claude-code", "--scope", "project"]);
    let created = sandbox.project.join(".claude/settings.json");
    let settings: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&created).unwrap()).unwrap();
    for event in ["UserPromptSubmit", "SessionStart", "PreCompact"] {
        assert_eq!(
            settings["hooks"][event][0]["hooks"][0]["command"],
            "ctxopt hook claude-code"
        );
    }
    // Uninstalling leaves it as it was before: absent (and no marker, no backup, no `{}`).
    let out = sandbox.ctxopt_ok(&["hooks", "uninstall", "claude-code", "--scope", "project"]);
    assert!(out.contains("it is removed"), "{out}");
    let left: Vec<_> = std::fs::read_dir(sandbox.project.join(".claude"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Lists the tools of a launch and calls each of `ctxopt serve`'s tools with the example its
/// description ends with.
const TS_DRIVER: &str = r#"
const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = await import("@modelcontextprotocol/sdk/client/stdio.js");
const launches = JSON.parse(process.argv[1]);
const out = {};
for (const [key, [command, ...args]] of Object.entries(launches)) {
  const client = new Client({ name: "ctxopt-wrap-test", version: "1.0.0" });
  await client.connect(new StdioClientTransport({ command, args, env: process.env }));
  const tools = (await client.listTools()).tools;
  const seen = { tools: tools.map((t) => t.name).sort(), calls: {} };
  if (key === "ctxopt") {
    for (const tool of tools) {
      const example = JSON.parse(tool.description.split("Example: ")[1].match(/^\{.*\}(?=\s|$)/)[0]);
      const r = await client.callTool({ name: tool.name, arguments: example });
      seen.calls[tool.name] = { isError: r.isError ?? false, text: r.content[0].text.slice(0, 200) };
    }
  } else {
    const r = await client.callTool({ name: "list_allowed_directories", arguments: {} });
    seen.calls.list_allowed_directories = { isError: r.isError ?? false, text: r.content[0].text };
  }
  await client.close();
  out[key] = seen;
}
console.log(JSON.stringify(out));
"#;

#[test]
fn a_wrapped_config_runs_the_real_server_filesystem_and_ctxopt_serve() {
    let Some(server) = peer("node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
    else {
        return;
    };
    let peers = server.ancestors().nth(5).unwrap().to_path_buf();
    let sandbox = Sandbox::new();
    let config = sandbox.project.join(".mcp.json");
    let entry = serde_json::json!({"mcpServers": {"filesystem": {
        "command": "node", "args": [server, sandbox.project]}}});
    std::fs::write(&config, serde_json::to_string_pretty(&entry).unwrap()).unwrap();
    sandbox.ctxopt_ok(&["wrap", "--client", "claude-code"]);

    let text = std::fs::read_to_string(&config).unwrap();
    let wrapped: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut launches = serde_json::Map::new();
    for (key, e) in wrapped["mcpServers"].as_object().unwrap() {
        let mut line = vec![e["command"].clone()];
        line.extend(e["args"].as_array().unwrap().iter().cloned());
        launches.insert(key.clone(), serde_json::Value::Array(line));
    }
    assert_eq!(launches["filesystem"][0], "ctxopt-proxy");
    let out = run_ok(
        sandbox
            .command("node")
            .current_dir(&peers)
            .args(["--input-type=module", "-e", TS_DRIVER])
            .arg(serde_json::Value::Object(launches).to_string()),
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let fs_tools = seen["filesystem"]["tools"].as_array().unwrap();
    assert!(fs_tools.iter().any(|t| t == "read_text_file"), "{seen}");
    assert!(
        !fs_tools.iter().any(|t| t == "build_context"),
        "--inject none: the server's own tools only"
    );
    let allowed = &seen["filesystem"]["calls"]["list_allowed_directories"];
    assert_eq!(allowed["isError"], false);
    assert!(allowed["text"]
        .as_str()
        .unwrap()
        .contains(&*sandbox.project.to_string_lossy()));
    let calls = seen["ctxopt"]["calls"].as_object().unwrap();
    assert_eq!(calls.len(), 6, "{seen}");
    for (tool, call) in calls {
        assert_eq!(call["isError"], false, "{tool}: {call}");
    }

    // status: the server is wrapped, and its session is in the frame log (once the proxy,
    // which the client stopped, has written the log's trailer).
    let logs = sandbox.root.join("state/ctxopt/logs");
    let finished = || {
        std::fs::read_dir(&logs).ok().is_some_and(|d| {
            d.flatten().any(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.contains("-filesystem-")
                    && std::fs::read_to_string(e.path())
                        .is_ok_and(|t| t.contains("\"type\":\"trailer\""))
            })
        })
    };
    let finished = crate::support::poll_until(
        std::time::Duration::from_secs(30),
        std::time::Duration::from_millis(50),
        || finished().then_some(()),
    );
    assert!(finished.is_some(), "no finished filesystem log in {logs:?}");
    let status = sandbox.ctxopt_ok(&["status", "--client", "claude-code"]);
    let line = status
        .lines()
        .find(|l| l.trim_start().starts_with("filesystem:"))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(line.contains("wrapped; last session"), "{line}");
    assert!(line.contains(" 1 tool calls"), "{line}");
    assert!(status.contains("ctxopt: ctxopt serve"), "{status}");
}

/// The default set of context tools costs at most a third of the 2,354 `o200k_base` tokens
/// the six definitions cost before they were made lighter (`ctxopt audit` on `ctxopt serve`).
#[test]
fn the_context_tools_cost_at_most_a_third_of_what_they_did() {
    let sandbox = Sandbox::new();
    let out = sandbox.ctxopt_ok(&[
        "audit",
        "--format",
        "json",
        "--",
        env!("CARGO_BIN_EXE_ctxopt"),
        "serve",
        "--store",
        ":memory:",
    ]);
    let audit: serde_json::Value = serde_json::from_str(&out).unwrap();
    let total = audit["total_tokens"]
        .as_u64()
        .unwrap_or_else(|| panic!("{audit}"));
    assert!(total > 0);
    assert!(total * 3 <= 2354, "the six tools cost {total} tokens");
}

#[test]
fn unwrap_leaves_a_ctxopt_entry_the_user_had() {
    let sandbox = Sandbox::new();
    let path = sandbox.project.join(".mcp.json");
    let original = "{\"mcpServers\":{\"a\":{\"command\":\"node\"},\"ctxopt\":{\"command\":\"ctxopt\",\"args\":[\"serve\",\"--workspace\",\"/my/ws\"]}}}";
    std::fs::write(&path, original).unwrap();
    sandbox.ctxopt_ok(&["wrap", "--scope", "project"]);
    let wrapped = std::fs::read_to_string(&path).unwrap();
    assert!(wrapped.contains("ctxopt-proxy"), "{wrapped}");
    assert!(wrapped.contains("\"/my/ws\""), "{wrapped}");
    let out = sandbox.ctxopt_ok(&["unwrap", "--scope", "project"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original, "{out}");
    assert!(out.contains("did not add; left"), "{out}");

    // The entry wrap adds is the one unwrap removes, also when the backup is gone.
    let other = sandbox.place("claude-code/mcp.json", "project/.mcp.json");
    let before = std::fs::read_to_string(&other).unwrap();
    std::fs::remove_file(ctxopt::clients::config_file::backup_path(&other)).unwrap();
    sandbox.ctxopt_ok(&["wrap", "--scope", "project"]);
    std::fs::remove_file(ctxopt::clients::config_file::backup_path(&other)).unwrap();
    let out = sandbox.ctxopt_ok(&["unwrap", "--scope", "project"]);
    assert!(out.contains("removed: ctxopt serve"), "{out}");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), before);
}

#[test]
fn hooks_install_creates_private_folders_and_files_whatever_the_umask() {
    let sandbox = Sandbox::new();
    let out = sandbox
        .command("sh")
        .args(["-c", "umask 000 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_ctxopt"))
        .args(["hooks", "install", "claude-code"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let settings = sandbox.home.join(".claude/settings.json");
    assert_eq!(mode(&sandbox.home.join(".claude")), 0o700);
    assert_eq!(mode(&settings), 0o600);
    assert_eq!(
        mode(&sandbox.home.join(".claude/settings.json.ctxopt-created")),
        0o600
    );
}

#[test]
fn hooks_install_on_invalid_json_states_the_position_once() {
    let sandbox = Sandbox::new();
    let path = sandbox.place("invalid/settings.json", "home/.gemini/settings.json");
    let original = std::fs::read_to_string(&path).unwrap();
    let out = sandbox.ctxopt(&["hooks", "install", "gemini-cli"]);
    assert!(!out.status.success());
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(said.matches("line 5, column 7").count(), 1, "{said}");
    assert!(said.contains(".gemini/settings.json"), "{said}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
}

#[test]
fn a_config_that_cannot_be_replaced_is_refused_by_name_and_nothing_is_left() {
    use std::os::unix::process::CommandExt;
    let sandbox = Sandbox::new();
    let folder = sandbox.root.join("locked");
    std::fs::create_dir(&folder).unwrap();
    let path = folder.join(".claude.json");
    let original = "{\"mcpServers\": {\"a\": {\"command\": \"node\"}}}\n";
    std::fs::write(&path, original).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // SAFETY: getuid has no preconditions.
    let root = unsafe { libc::getuid() } == 0;
    let mut cmd = sandbox.command(env!("CARGO_BIN_EXE_ctxopt"));
    cmd.args(["wrap", "--client", "claude-code", "--config"])
        .arg(&path);
    if root {
        // Root may write anything: run as another user, the config and its folder root's.
        for p in [&sandbox.root, &folder] {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::create_dir_all(sandbox.root.join("state")).unwrap();
        std::fs::set_permissions(
            sandbox.root.join("state"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        cmd.uid(65534).gid(65534);
    } else {
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let out = cmd.output().unwrap();
    let said = sandbox.redact(&String::from_utf8_lossy(&out.stdout));
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("[SANDBOX]/locked/.claude.json: cannot be changed: its folder [SANDBOX]/locked is not writable by this user; nothing was written"),
        "{said}"
    );
    assert!(!said.contains(".tmp"), "{said}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    let left: Vec<_> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, [".claude.json"], "no backup, no temp file");
}

#[test]
#[cfg_attr(
    not(debug_assertions),
    ignore = "the binary's pause seam exists in debug builds only"
)]
fn an_interrupted_wrap_leaves_no_temp_file() {
    for signal in ["INT", "TERM"] {
        let sandbox = Sandbox::new();
        let path = sandbox.place("claude-code/mcp.json", "project/.mcp.json");
        let original = std::fs::read_to_string(&path).unwrap();
        let seam = sandbox.root.join("seam");
        std::fs::create_dir(&seam).unwrap();
        let mut child = sandbox
            .command(env!("CARGO_BIN_EXE_ctxopt"))
            .args(["wrap", "--scope", "project"])
            .env("CTXOPT_TEST_PAUSE_BEFORE_RENAME", &seam)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while !seam.join("paused").exists() {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "wrap never reached the rename"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // The new text is on disk under its temporary name, the rename not done.
        let temps = || -> Vec<String> {
            std::fs::read_dir(&sandbox.project)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".tmp"))
                .collect()
        };
        assert_eq!(temps().len(), 2, "the new text and the backup, pending");
        run_ok(Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]));
        std::fs::write(seam.join("go"), "").unwrap();
        let status = child.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert!(status.signal().is_some(), "{signal}: {status:?}");
        assert_eq!(temps(), Vec::<String>::new(), "{signal}");
        // The write was finished before the signal took effect: whole, with its backup.
        let now = std::fs::read_to_string(&path).unwrap();
        assert!(now.contains("ctxopt-proxy"), "{now}");
        assert_eq!(
            std::fs::read_to_string(ctxopt::clients::config_file::backup_path(&path)).unwrap(),
            original
        );
    }
}
