//! The MCP authorization flow against a real authorization server: the TypeScript SDK's
//! example server (`simpleStreamableHttp.js --oauth-strict`, its demo OAuth provider on a
//! second port, which approves every authorization request and checks the `resource` of
//! codes and tokens). `ctxopt auth login --no-browser` prints the page to open; the test
//! opens it with an HTTP GET that follows the provider's redirect to the loopback listener,
//! as a browser would. Then the TypeScript SDK client runs a session through
//! `ctxopt-proxy --url` with the stored token, and after `ctxopt auth logout` the proxy
//! answers with an error naming the login command.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use super::peers::{fixture_tree, Client, Peers, Server};
use super::remote::{free_port, Served};
use super::session::{proxy_binary, run_driver};
use crate::support::poll_until;

/// The SDK's example server with its demo OAuth provider, started on free ports.
struct OAuthServer {
    _mcp: Served,
    /// The MCP endpoint, named as the server names itself (its resource is on `localhost`).
    url: String,
}

impl OAuthServer {
    fn start(peers: &Peers) -> OAuthServer {
        let argv = peers.server_command(Server::SdkExample, &fixture_tree());
        let (mcp_port, auth_port) = (free_port(), free_port());
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .arg("--oauth")
            .arg("--oauth-strict")
            .env("MCP_PORT", mcp_port.to_string())
            .env("MCP_AUTH_PORT", auth_port.to_string());
        let mcp = Served::start(command, mcp_port);
        let auth_up = poll_until(Duration::from_secs(60), Duration::from_millis(20), || {
            std::net::TcpStream::connect(("127.0.0.1", auth_port)).ok()
        });
        assert!(auth_up.is_some(), "the authorization server never listened");
        OAuthServer {
            _mcp: mcp,
            url: format!("http://localhost:{mcp_port}/mcp"),
        }
    }
}

/// `ctxopt auth …` with the token folder under `state`.
fn ctxopt_auth(state: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ctxopt"));
    command.arg("auth").env("XDG_STATE_HOME", state);
    command
}

/// `ctxopt auth login URL --no-browser` (and `options`), its page opened by an HTTP GET that
/// follows the authorization server's redirect to the loopback listener. Returns what login
/// printed.
fn login(state: &Path, url: &str, options: &[&str]) -> String {
    let mut child = ctxopt_auth(state)
        .args(["login", url, "--no-browser", "--timeout", "120"])
        .args(options)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run ctxopt auth login");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut printed = String::new();
    let page = loop {
        let mut line = String::new();
        if stdout.read_line(&mut line).expect("read login's output") == 0 {
            let mut stderr = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut stderr)
                .ok();
            panic!("login printed no page to open:\n{printed}\nstderr:\n{stderr}");
        }
        printed.push_str(&line);
        if line.starts_with("http") {
            break line.trim().to_string();
        }
    };
    // The browser's part: the provider approves at once and redirects to the loopback
    // listener, which answers the page that says ctxopt is authorized.
    let mut answer = ureq::get(&page)
        .call()
        .expect("open the authorization page");
    let landing = answer
        .body_mut()
        .read_to_string()
        .expect("the landing page");
    assert!(landing.contains("ctxopt is authorized"), "{landing}");
    let mut rest = String::new();
    stdout
        .read_to_string(&mut rest)
        .expect("read login's output");
    printed.push_str(&rest);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .ok();
    let status = child.wait().expect("wait for login");
    assert!(
        status.success(),
        "login failed ({status}):\n{printed}\nstderr:\n{stderr}"
    );
    printed + &stderr
}

/// The scope of the one token file under `state`.
fn token_scope(state: &Path) -> String {
    let (path, _, _) = token_file(state);
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).unwrap()).expect("a token file");
    json["scope"].as_str().unwrap_or_default().to_string()
}

/// The one token file under `state`, its mode and its access token.
fn token_file(state: &Path) -> (PathBuf, u32, String) {
    let dir = state.join("ctxopt/auth");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the token folder")
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let path = files.into_iter().next().unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).expect("a token file");
    let token = json["access_token"]
        .as_str()
        .expect("an access token")
        .to_string();
    (path, mode, token)
}

#[test]
fn login_then_a_proxied_session_uses_the_token_and_logout_makes_the_proxy_name_login() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let server = OAuthServer::start(&peers);
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");

    let printed = login(&state, &server.url, &[]);
    assert!(printed.contains("Authorized: tokens for"), "{printed}");
    // The server's challenge names no scope: its metadata's scopes_supported are asked for.
    assert_eq!(token_scope(&state), "mcp:tools");
    // A login for another scope asks for the one granted too (the provider grants what is
    // asked for, and says so in its token answer).
    let printed = login(&state, &server.url, &["--scope", "files:read"]);
    assert!(
        printed.contains("client: dynamic client registration; scope: mcp:tools files:read"),
        "{printed}"
    );
    assert_eq!(token_scope(&state), "mcp:tools files:read");
    let (path, mode, token) = token_file(&state);
    assert_eq!(mode, 0o600, "{}", path.display());
    let folder_mode = std::fs::metadata(path.parent().unwrap())
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(folder_mode & 0o777, 0o700);
    assert!(!printed.contains(&token), "login printed the token");

    // The TypeScript SDK client through the proxy, which sends the stored token.
    let log_path = tmp.path().join("session.jsonl");
    let mut target: Vec<std::ffi::OsString> = vec![proxy_binary().into(), "--log".into()];
    target.push(log_path.clone().into());
    for arg in [
        "--inject",
        "none",
        "--store",
        ":memory:",
        "--url",
        &server.url,
    ] {
        target.push(arg.into());
    }
    let client = peers.client_command(Client::Ts, Server::SdkExample, &fixture_tree(), &target);
    let session = run_driver(&client, &[("XDG_STATE_HOME", state.clone())]);
    let transcript = session.json["transcript"].to_string();
    assert!(transcript.contains("Hello, ctxopt!"), "{transcript}");
    assert!(!transcript.contains("\"error\""), "{transcript}");
    let log = std::fs::read_to_string(&log_path).expect("the log");
    assert!(log.contains("Hello, ctxopt!"), "the session is in the log");
    assert!(!log.contains(&token), "the token reached the frame log");
    // The standalone GET stream went with the token too (a 401 there would be in `errors`).
    let trailer: serde_json::Value =
        serde_json::from_str(log.lines().last().expect("a trailer")).expect("JSON");
    assert_eq!(trailer["errors"], serde_json::json!([]), "{trailer}");

    let status = ctxopt_auth(&state).arg("status").output().unwrap();
    let listed = String::from_utf8_lossy(&status.stdout);
    assert!(listed.contains(&server.url), "{listed}");
    assert!(!listed.contains(&token), "status printed the token");

    let out = ctxopt_auth(&state)
        .args(["logout", &server.url])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("tokens removed"));
    assert!(!path.exists());
    let again = ctxopt_auth(&state)
        .args(["logout", &server.url])
        .output()
        .unwrap();
    assert!(again.status.success());
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(said.contains("no tokens were kept"), "{said}");

    // Without a token the proxy answers the client's request with the login command, and
    // logs it.
    let log_path = tmp.path().join("logged-out.jsonl");
    let error = first_answer_without_token(&state, &server.url, &log_path);
    let message = error["error"]["message"].as_str().unwrap_or_default();
    let login = format!("run: ctxopt auth login {}", server.url);
    assert!(message.contains(&login), "{error}");
    assert_eq!(error["id"], 1, "{error}");
    let logged = std::fs::read_to_string(&log_path).expect("the log");
    let trailer: serde_json::Value =
        serde_json::from_str(logged.lines().last().expect("a trailer")).expect("JSON");
    let errors = trailer["errors"].to_string();
    assert!(errors.contains(&login), "{errors}");
}

/// The proxy's answers to `initialize` and then each of `calls` (a `tools/call` of that
/// tool), sent one at a time, with the token folder under `state`, logging to `log`.
fn answers(state: &Path, url: &str, log: &Path, calls: &[&str]) -> Vec<serde_json::Value> {
    let mut proxy = Command::new(proxy_binary())
        .args(["--inject", "none", "--store", ":memory:", "--log"])
        .arg(log)
        .args(["--url", url])
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the proxy");
    let mut stdin = proxy.stdin.take().unwrap();
    let mut stdout = BufReader::new(proxy.stdout.take().unwrap());
    let mut requests = vec![
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#.to_string(),
    ];
    for (n, tool) in calls.iter().enumerate() {
        requests.push(format!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#,
            n + 2
        ));
    }
    let mut answers = Vec::new();
    for request in requests {
        writeln!(stdin, "{request}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the proxy's answer");
        answers.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    drop(stdin);
    let status = proxy.wait().expect("the proxy ends");
    assert!(status.success(), "{status}");
    answers
}

/// The proxy's answer to an `initialize` when no token is stored.
fn first_answer_without_token(state: &Path, url: &str, log: &Path) -> serde_json::Value {
    answers(state, url, log, &[]).remove(0)
}

/// The text of a tool result.
fn tool_text(answer: &serde_json::Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("not a tool result: {answer}"))
}

/// The SDK-built server's counts: its 401s and the refreshes its token endpoint granted.
fn stats(base: &str) -> (u64, u64) {
    let mut answer = ureq::get(&format!("{base}/test/stats"))
        .call()
        .expect("the stats");
    let json: serde_json::Value =
        serde_json::from_str(&answer.body_mut().read_to_string().unwrap()).expect("JSON");
    (
        json["unauthorized"].as_u64().unwrap(),
        json["refreshes"].as_u64().unwrap(),
    )
}

/// Renewal and step-up against the TypeScript SDK's own authorization server parts
/// (`peers/oauth_server.mjs`: the SDK's `mcpAuthRouter` token endpoint and `requireBearerAuth`
/// middleware, its demo provider taught refresh tokens). A token the server revoked: one 401,
/// one refresh at the SDK's token endpoint, the call answered. A token the file says expires
/// within a minute: refreshed before the request, no 401. A call that needs `files:write`:
/// the SDK middleware's 403 challenge becomes the error naming the login command with both
/// scopes; running that command grants them, and the call then succeeds.
#[test]
fn tokens_are_renewed_and_a_scope_stepped_up_at_the_sdks_authorization_server() {
    let Some(peers) = Peers::locate() else {
        return;
    };
    let port = free_port();
    let mut command = Command::new("node");
    command
        .arg(peers.dir.join("oauth_server.mjs"))
        .env("PORT", port.to_string());
    let _served = Served::start(command, port);
    let base = format!("http://localhost:{port}");
    let url = format!("{base}/mcp");
    let tmp = tempfile::tempdir().expect("tempdir");
    let state = tmp.path().join("state");
    login(&state, &url, &[]);
    let (_, _, first_token) = token_file(&state);
    assert_eq!(token_scope(&state), "mcp:tools");
    // The login's probe without a token was refused once.
    assert_eq!(stats(&base), (1, 0));

    // Revoked at the server: a 401, one refresh, the request sent again.
    ureq::post(&format!("{base}/test/revoke"))
        .send_empty()
        .expect("revoke");
    let log = tmp.path().join("revoked.jsonl");
    let got = answers(&state, &url, &log, &["whoami"]);
    assert!(tool_text(&got[1]).starts_with("client "), "{}", got[1]);
    assert_eq!(stats(&base), (2, 1));
    let (path, mode, second_token) = token_file(&state);
    assert_ne!(second_token, first_token);
    assert_eq!(mode, 0o600);
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(!text.contains(&first_token) && !text.contains(&second_token));

    // The file says the token expires in 20 s: refreshed ahead, no 401.
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    json["expires_at"] = (now + 20).into();
    std::fs::write(&path, json.to_string()).unwrap();
    let got = answers(&state, &url, &tmp.path().join("ahead.jsonl"), &["whoami"]);
    assert!(tool_text(&got[1]).starts_with("client "), "{}", got[1]);
    assert_eq!(stats(&base), (2, 2));
    let (_, _, third_token) = token_file(&state);
    assert_ne!(third_token, second_token);

    // Step-up: the SDK middleware's 403 insufficient_scope.
    let log = tmp.path().join("step-up.jsonl");
    let got = answers(&state, &url, &log, &["write_file"]);
    let message = got[1]["error"]["message"].as_str().unwrap_or_default();
    let command = format!("ctxopt auth login {url} --scope 'mcp:tools files:write'");
    assert!(
        message.ends_with(&format!(
            "HTTP 403: insufficient_scope: the server requires the scope \"files:write\"; run: {command}"
        )),
        "{}",
        got[1]
    );
    assert_eq!(got[1]["error"]["data"]["status"], 403);
    let logged = std::fs::read_to_string(&log).expect("the log");
    let trailer: serde_json::Value =
        serde_json::from_str(logged.lines().last().expect("a trailer")).expect("JSON");
    assert!(
        trailer["errors"].to_string().contains(&command),
        "{trailer}"
    );
    // The command it names (the scopes as one argument).
    login(&state, &url, &["--scope", "mcp:tools files:write"]);
    assert_eq!(token_scope(&state), "mcp:tools files:write");
    let got = answers(
        &state,
        &url,
        &tmp.path().join("granted.jsonl"),
        &["write_file"],
    );
    assert_eq!(tool_text(&got[1]), "written");
    // The second login's probe, and no other 401.
    assert_eq!(stats(&base).0, 3);
}
