//! `ctxopt status`: per client and config file, each server: wrapped or not (and why not),
//! its latest frame log, and the last session's tokens, calls and what wire compaction saved;
//! then what the client hooks injected, per session, from the store's ledger.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ctxopt::clients::config_file::ConfigFile;
use ctxopt::clients::entries::{self, Entry, State};
use ctxopt::framelog::writer::default_log_dir;
use ctxopt::measure::report;
use ctxopt::relay::server_name;
use ctxopt::store::location::StoreLocation;
use ctxopt::store::Store;

use crate::client_select::{title, Selector};

/// Arguments of `ctxopt status`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    select: Selector,
    /// Where the frame logs are (default: $XDG_STATE_HOME/ctxopt/logs, else
    /// ~/.local/state/ctxopt/logs).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// The store whose hook ledger to show (a path; default: the default store, when it
    /// exists).
    #[arg(long, value_name = "STORE")]
    store: Option<PathBuf>,
}

/// Runs `ctxopt status`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let logs = args.log_dir.or_else(default_log_dir);
    let locations = args.select.locations()?;
    if locations.is_empty() {
        println!("no client config files found");
    }
    for location in &locations {
        println!("{}", title(location));
        let file = ConfigFile::read(&location.path)?;
        let text = file.text.unwrap_or_default();
        let servers = match entries::read(&text, &location.servers, &location.path) {
            Ok(Some(servers)) => servers,
            Ok(None) => {
                println!("  no servers here");
                continue;
            }
            Err(err) => {
                println!("  error: {err}");
                continue;
            }
        };
        for entry in &servers.entries {
            println!("  {}: {}", entry.key, line(entry, logs.as_deref()));
        }
    }
    hooks(args.store)?;
    Ok(ExitCode::SUCCESS)
}

/// What the client hooks added to each session's context, from the store's ledger.
fn hooks(store: Option<PathBuf>) -> anyhow::Result<()> {
    let path = store.or_else(|| match StoreLocation::default_file() {
        Some(StoreLocation::File(path)) => Some(path),
        _ => None,
    });
    let Some(path) = path.filter(|p| p.is_file()) else {
        println!("hooks: no store yet (nothing injected)");
        return Ok(());
    };
    let totals = Store::open_path(&path)?.injection_totals(None)?;
    let tokens: u64 = totals.iter().map(|t| t.tokens).sum();
    println!(
        "hooks (store {}): {tokens} tokens injected in all",
        path.display()
    );
    let mut sessions: Vec<(&str, &str, &str)> = Vec::new();
    for t in &totals {
        let key = (t.client.as_str(), t.session.as_str(), t.workspace.as_str());
        if !sessions.contains(&key) {
            sessions.push(key);
        }
    }
    for (client, session, workspace) in sessions {
        let events: Vec<String> = totals
            .iter()
            .filter(|t| {
                (t.client.as_str(), t.session.as_str(), t.workspace.as_str())
                    == (client, session, workspace)
            })
            .map(|t| {
                format!(
                    "{} {} answers, {} records, {} tokens",
                    t.event, t.answers, t.records, t.tokens
                )
            })
            .collect();
        println!(
            "  {client} session {session} ({workspace}): {}",
            events.join("; ")
        );
    }
    Ok(())
}

fn line(entry: &Entry, logs: Option<&Path>) -> String {
    match &entry.state {
        State::Stdio(_) => {
            "not wrapped: a stdio server (`ctxopt wrap` puts it behind ctxopt-proxy)".into()
        }
        State::Remote(_) => {
            "not wrapped: a remote server (`ctxopt wrap` puts it behind ctxopt-proxy --url)".into()
        }
        State::LeftAlone(why) => format!("not wrapped: {why}"),
        State::Serve => "ctxopt serve (the context tools)".into(),
        State::Wrapped(_) => {
            let name = logged_name(entry);
            let latest = logs.and_then(|dir| latest_log(dir, &name));
            match latest {
                None => format!("wrapped; no frame log for `{name}` yet (not started since?)"),
                Some(log) => format!("wrapped; {}", session(&log)),
            }
        }
    }
}

/// The server name the proxy logs under: its `--name`, else what it derives from the
/// command after `--`.
fn logged_name(entry: &Entry) -> String {
    let line = entry.command_line().unwrap_or_default();
    if let Some(i) = line.iter().position(|a| a == "--name") {
        if let Some(name) = line.get(i + 1) {
            return server_name::sanitize(name);
        }
    }
    let server: Vec<_> = line
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .map(Into::into)
        .collect();
    server_name::derive(&server)
}

/// The newest `<UTC start>-<name>-<pid>.jsonl` in `dir`.
fn latest_log(dir: &Path, name: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let stem = file.strip_suffix(".jsonl")?;
            let (rest, pid) = stem.rsplit_once('-')?;
            let (start, logged) = rest.split_once('-')?;
            let ok = logged == name
                && !pid.is_empty()
                && pid.bytes().all(|b| b.is_ascii_digit())
                && start.len() == 16;
            ok.then(|| (start.to_string(), e.path()))
        })
        .max()
        .map(|(_, path)| path)
}

fn session(log: &Path) -> String {
    match report::collect(&[log.to_path_buf()]) {
        Ok(report) => match report.sessions.first() {
            Some(s) => {
                let t = &s.tokens;
                let saved: u64 = report.compaction.iter().map(|c| c.saved_tokens).sum();
                format!(
                    "last session {} ({}): {} tokens ({} client to server, {} server to client, {} ctxopt), {} tool calls ({} tokens), wire compaction saved {saved} tokens",
                    s.started,
                    log.display(),
                    t.c2s + t.s2c + t.c2p + t.p2c,
                    t.c2s,
                    t.s2c,
                    t.c2p + t.p2c,
                    s.calls,
                    s.call_tokens
                )
            }
            None => format!("latest log {} holds no session", log.display()),
        },
        Err(err) => format!("latest log {}: {err}", log.display()),
    }
}
