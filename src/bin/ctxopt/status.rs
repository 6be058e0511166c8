//! `ctxopt status`: per client and config file, each server: wrapped or not (and why not),
//! its latest frame log, and the last session's tokens and calls.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ctxopt::clients::config_file::ConfigFile;
use ctxopt::clients::entries::{self, Entry, State};
use ctxopt::framelog::writer::default_log_dir;
use ctxopt::measure::report;
use ctxopt::relay::server_name;

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
    Ok(ExitCode::SUCCESS)
}

fn line(entry: &Entry, logs: Option<&Path>) -> String {
    match &entry.state {
        State::Stdio(_) => {
            "not wrapped: a stdio server (`ctxopt wrap` puts it behind ctxopt-proxy)".into()
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
                format!(
                    "last session {} ({}): {} tokens ({} client to server, {} server to client, {} ctxopt), {} tool calls ({} tokens)",
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
