//! `ctxopt wrap` and `ctxopt unwrap`: every stdio server of the selected client configs
//! behind `ctxopt-proxy --inject none`, plus one `ctxopt serve` entry; and back.

use std::process::ExitCode;

use ctxopt::clients::catalog::{Client, ConfigScope, Location};
use ctxopt::clients::config_file::ConfigFile;
use ctxopt::clients::entries::ServersAt;
use ctxopt::clients::wrap::{self, Outcome, Plan, WrapOptions};
use ctxopt::clients::{change_file, ConfigError};

use crate::client_select::{claude_code_running, title, Selector};

/// Arguments of `ctxopt wrap`.
#[derive(Debug, clap::Args)]
pub(crate) struct WrapArgs {
    #[command(flatten)]
    select: Selector,
    /// Print the unified diff of each change and write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Do not add the `ctxopt serve` entry (the context tools as their own server).
    #[arg(long)]
    no_serve: bool,
}

/// Arguments of `ctxopt unwrap`.
#[derive(Debug, clap::Args)]
pub(crate) struct UnwrapArgs {
    #[command(flatten)]
    select: Selector,
    /// Print the unified diff of each change and write nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Runs `ctxopt wrap`.
pub(crate) fn run_wrap(args: WrapArgs) -> anyhow::Result<ExitCode> {
    run(&args.select, args.dry_run, &|text, location| {
        let options = WrapOptions {
            serve: !args.no_serve,
            typed: location.client == Client::VsCode,
        };
        wrap::wrap(text, &location.servers, &location.path, options)
    })
}

/// Runs `ctxopt unwrap`.
pub(crate) fn run_unwrap(args: UnwrapArgs) -> anyhow::Result<ExitCode> {
    run(&args.select, args.dry_run, &|text, location| {
        let backup = ConfigFile::read(&location.path)?.backup()?;
        wrap::unwrap(text, &location.servers, &location.path, backup.as_deref())
    })
}

type Planner<'a> = dyn Fn(&str, &Location) -> Result<Option<Plan>, ConfigError> + 'a;

fn run(select: &Selector, dry_run: bool, planner: &Planner) -> anyhow::Result<ExitCode> {
    let locations = select.locations()?;
    if locations.is_empty() {
        println!(
            "no client config files found (see `ctxopt wrap --help` for where they are looked for)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for location in &locations {
        if let Err(err) = one(location, dry_run, planner) {
            println!("{}\n  error: {err}", title(location));
            failed = true;
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn one(location: &Location, dry_run: bool, planner: &Planner) -> Result<(), ConfigError> {
    let plan = |file: &ConfigFile| match file.text.as_deref() {
        None => Ok(None),
        Some(text) => Ok(planner(text, location)?.map(|p| (Some(p.text), p.outcomes))),
    };
    let Some(change) = change_file(&location.path, dry_run, &plan)? else {
        return Ok(());
    };
    println!("{}", title(location));
    for (key, outcome) in &change.detail {
        println!("  {key}: {}", describe(outcome));
    }
    if !change.changes() {
        println!("  (no change)");
        return Ok(());
    }
    let claude_json = location.client == Client::ClaudeCode
        && location.scope != ConfigScope::Project
        && matches!(location.servers, ServersAt::Json(_));
    if claude_json && claude_code_running() {
        println!(
            "  warning: Claude Code is running and rewrites this file while it runs; \
             restart it after this change and check the file"
        );
    }
    if dry_run {
        print!("{}", change.diff());
        println!("  (dry run: nothing written)");
    } else if let Some(backup) = change.written.as_ref().and_then(|w| w.backup.as_ref()) {
        println!("  backup of the original: {}", backup.display());
    }
    Ok(())
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Wrapped => "wrapped (ctxopt-proxy --inject none)".into(),
        Outcome::AlreadyWrapped => "already wrapped".into(),
        Outcome::Unwrapped => "unwrapped".into(),
        Outcome::NotWrapped => "not wrapped".into(),
        Outcome::ServeAdded => "added: ctxopt serve (the context tools, once)".into(),
        Outcome::ServePresent => "ctxopt serve (the context tools)".into(),
        Outcome::ServeRemoved => "removed: ctxopt serve".into(),
        Outcome::LeftAlone(why) => format!("left alone: {why}"),
    }
}
