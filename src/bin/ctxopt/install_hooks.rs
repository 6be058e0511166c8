//! `ctxopt hooks install|uninstall claude-code|gemini-cli`: ctxopt's hook entries in the
//! client's settings file, added or removed in place (a backup first, `--dry-run` shows the
//! diff).

use std::process::ExitCode;

use ctxopt::clients::catalog::{Client, ConfigScope, HookClient};
use ctxopt::clients::change_file;
use ctxopt::clients::config_file::ConfigFile;
use ctxopt::clients::hook_entries;

use crate::client_select::roots;

/// Arguments of `ctxopt hooks`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Add the hook entries (idempotent).
    Install(Target),
    /// Remove exactly the entries `install` adds.
    Uninstall(Target),
}

#[derive(Debug, clap::Args)]
struct Target {
    /// claude-code or gemini-cli.
    client: Client,
    /// user (~/.claude/settings.json, ~/.gemini/settings.json) or project
    /// (.claude/settings.json, .gemini/settings.json in the current directory).
    #[arg(long, default_value = "user")]
    scope: ConfigScope,
    /// Print the unified diff and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Runs `ctxopt hooks`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (target, installing) = match &args.action {
        Action::Install(t) => (t, true),
        Action::Uninstall(t) => (t, false),
    };
    let client = HookClient::try_from(target.client).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(
        target.scope != ConfigScope::Local,
        "hooks have user and project scopes"
    );
    let path = client.settings(&roots()?, target.scope);
    let plan = |file: &ConfigFile| {
        if installing {
            let (new, events) = hook_entries::install(file.text.as_deref(), client, &path)?;
            Ok(Some((
                Some(new),
                events.iter().map(|e| e.to_string()).collect(),
            )))
        } else {
            match file.text.as_deref() {
                None => Ok(None),
                Some(text) => {
                    hook_entries::uninstall(text, client, &path, file.created_by_ctxopt()).map(Some)
                }
            }
        }
    };
    let Some(change) = change_file(&path, target.dry_run, &plan)? else {
        println!("{}: no such file; nothing to remove", path.display());
        return Ok(ExitCode::SUCCESS);
    };
    let verb = if installing { "added" } else { "removed" };
    println!("{}", path.display());
    if change.detail.is_empty() {
        println!(
            "  nothing to do: `{}` is {}",
            client.command(),
            if installing {
                "installed already"
            } else {
                "not installed"
            }
        );
    }
    for event in &change.detail {
        println!("  {verb}: {event} → {}", client.command());
    }
    if change.text.is_none() && change.changes() {
        println!("  the file ctxopt created holds nothing else: it is removed");
    }
    if target.dry_run {
        print!("{}", change.diff());
        println!("  (dry run: nothing written)");
    } else if let Some(backup) = change.written.as_ref().and_then(|w| w.backup.as_ref()) {
        println!("  backup of the original: {}", backup.display());
    }
    Ok(ExitCode::SUCCESS)
}
