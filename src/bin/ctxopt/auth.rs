//! `ctxopt auth login|logout|status`: the MCP authorization flow for a remote server that
//! answers 401, and the tokens `ctxopt-proxy --url` then sends (docs/http.md, "Auth").

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use anyhow::Context;
use ctxopt::upstream::http::auth::{self, LoginOptions, TokenStore};
use ctxopt::upstream::http::config::{check_url, display_url};
use ctxopt::upstream::http::{HttpConfig, Transport};

/// Arguments of `ctxopt auth`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    command: AuthCommand,
}

#[derive(Debug, clap::Subcommand)]
enum AuthCommand {
    /// Authorize ctxopt for a remote MCP server: prints the page to open (and opens a
    /// browser where one is available), waits for the redirect, keeps the tokens.
    Login(LoginArgs),
    /// Forget the tokens kept for a server.
    Logout {
        /// The server's MCP endpoint, as given to login.
        url: String,
    },
    /// List the servers with tokens (never the tokens).
    Status,
}

#[derive(Debug, clap::Args)]
struct LoginArgs {
    /// The server's MCP endpoint, as `ctxopt-proxy --url` is given it.
    url: String,
    /// A client id registered beforehand with the authorization server (its redirect URI
    /// http://127.0.0.1:<port>/callback), instead of dynamic client registration.
    #[arg(long, value_name = "ID")]
    client_id: Option<String>,
    /// The loopback port of the redirect (default: any free one).
    #[arg(long, value_name = "PORT", default_value_t = 0)]
    port: u16,
    /// The HTTPS URL of a client ID metadata document describing ctxopt (its redirect URI
    /// among its redirect_uris): the client id where the authorization server takes such
    /// documents (after --client-id, before dynamic registration).
    #[arg(long, value_name = "URL")]
    client_metadata_url: Option<String>,
    /// The scopes to ask for (space-separated), instead of the ones the server names; the
    /// scopes of the tokens already kept are asked for too.
    #[arg(long, value_name = "SCOPES")]
    scope: Option<String>,
    /// Print the page to open, and do not start a browser.
    #[arg(long)]
    no_browser: bool,
    /// Seconds to wait for the redirect.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,
    /// Trust the certificate authorities in this PEM file instead of the built-in roots.
    #[arg(long, value_name = "FILE")]
    ca_cert: Option<PathBuf>,
}

/// Runs `ctxopt auth`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let store = TokenStore::default_place().context("no home folder to keep tokens in")?;
    match args.command {
        AuthCommand::Login(login) => run_login(login, &store),
        AuthCommand::Logout { url } => {
            if store.remove(&url)? {
                println!("{}: tokens removed", display_url(&url));
            } else {
                println!("{}: no tokens were kept for it", display_url(&url));
            }
            Ok(ExitCode::SUCCESS)
        }
        AuthCommand::Status => {
            let all = store.list()?;
            if all.is_empty() {
                println!("no server has tokens ({})", store.dir().display());
            }
            for credentials in all {
                let expiry = match credentials.seconds_left() {
                    Some(0) => "expired".to_string(),
                    Some(left) => format!("expires in {} min", left.div_ceil(60)),
                    None => "no expiry given".to_string(),
                };
                let refresh = if credentials.refresh_token.is_some() {
                    "refreshable"
                } else {
                    "no refresh token"
                };
                println!(
                    "{}: {expiry}, {refresh}, issuer {}",
                    display_url(&credentials.url),
                    credentials.issuer
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn run_login(args: LoginArgs, store: &TokenStore) -> anyhow::Result<ExitCode> {
    check_url(&args.url)?;
    let config = HttpConfig {
        url: args.url.clone(),
        headers: Vec::new(),
        timeout: Duration::from_secs(30),
        ca_cert: args.ca_cert,
        transport: Transport::default(),
    };
    let agent = config.agent()?;
    // A token file that cannot be read is replaced by the login: its scopes are not kept.
    let granted = store.load(&args.url).ok().flatten().and_then(|c| c.scope);
    let options = LoginOptions {
        client_id: args.client_id,
        client_metadata_url: args.client_metadata_url,
        scope: args.scope,
        granted_scope: granted,
        port: args.port,
    };
    let pending = auth::begin(&agent, &args.url, &options)?;
    println!(
        "Open this page to authorize ctxopt for {} (issuer {}):",
        display_url(&args.url),
        pending.issuer()
    );
    eprintln!(
        "ctxopt: client: {}; scope: {}",
        pending.client_kind().describe(),
        pending.scope().unwrap_or("(none asked)")
    );
    println!("{}", pending.authorize_url());
    let _ = std::io::stdout().flush();
    if !args.no_browser && !open_browser(pending.authorize_url()) {
        eprintln!("ctxopt: no browser could be started: open the page yourself");
    }
    eprintln!(
        "ctxopt: waiting for the redirect to {} ...",
        pending.redirect_uri()
    );
    let (credentials, path) = pending.finish(store, Duration::from_secs(args.timeout))?;
    let refresh = if credentials.refresh_token.is_some() {
        "with a refresh token"
    } else {
        "no refresh token"
    };
    println!(
        "Authorized: tokens for {} kept in {} ({refresh})",
        display_url(&credentials.url),
        path.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Starts the system's browser on `url` (`open` on macOS, `xdg-open` elsewhere); `false` when
/// none could be started. Never waits for it.
fn open_browser(url: &str) -> bool {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    let started = Command::new(opener)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match started {
        Ok(mut child) => {
            // Reaped in the background: the opener's status says little (it may hand the
            // page to a running browser and exit).
            std::thread::spawn(move || child.wait());
            true
        }
        Err(_) => false,
    }
}
