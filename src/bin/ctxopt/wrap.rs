//! `ctxopt wrap` and `ctxopt unwrap`: every stdio server of the selected client configs
//! behind `ctxopt-proxy --inject none`, plus one `ctxopt serve` entry; and back.

use std::process::ExitCode;

use ctxopt::clients::catalog::{Client, ConfigScope, Location};
use ctxopt::clients::config_file::ConfigFile;
use ctxopt::clients::entries::ServersAt;
use ctxopt::clients::entries::SERVE_KEY;
use ctxopt::clients::wrap::{self, Originals, Outcome, Plan, WrapOptions};
use ctxopt::clients::wrap_record::{serve_is_ours, ServeOrigin, WrapRecords};
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
    let records = records()?;
    let plan = |file: &ConfigFile, location: &Location| {
        let options = WrapOptions {
            serve: !args.no_serve,
            typed: location.client == Client::VsCode,
        };
        let Some(text) = file.text.as_deref() else {
            return Ok(None);
        };
        wrap::wrap(text, &location.servers, &location.path, options)
    };
    // Once the file is written: a `ctxopt` entry wrap added is recorded as wrap's, one the
    // file had as the user's (a crash in between leaves the backup to tell).
    let written = |file: &ConfigFile, outcomes: &[(String, Outcome)]| {
        let originals: Vec<(String, String)> = outcomes
            .iter()
            .filter_map(|(key, o)| match o {
                Outcome::WrappedRemote(original) => Some((key.clone(), original.clone())),
                _ => None,
            })
            .collect();
        if !originals.is_empty() {
            records.add_remote(&file.target, &originals)?;
        }
        let recorded = records.serve(&file.target)?;
        for (key, outcome) in outcomes {
            let origin = match outcome {
                Outcome::ServeAdded => ServeOrigin::Added,
                Outcome::ServePresent | Outcome::LeftAlone(_) if key == SERVE_KEY => {
                    ServeOrigin::Found
                }
                _ => continue,
            };
            if recorded.is_none() || origin == ServeOrigin::Added {
                records.set_serve(&file.target, origin)?;
            }
        }
        Ok(())
    };
    run(&args.select, args.dry_run, &plan, &written)
}

/// Runs `ctxopt unwrap`.
pub(crate) fn run_unwrap(args: UnwrapArgs) -> anyhow::Result<ExitCode> {
    let records = records()?;
    let plan = |file: &ConfigFile, location: &Location| {
        let Some(text) = file.text.as_deref() else {
            return Ok(None);
        };
        let backup = file.backup()?;
        let ours = serve_is_ours(
            records.serve(&file.target)?,
            backup.as_deref(),
            &location.servers,
            &location.path,
        );
        let originals = Originals {
            recorded: records.remote(&file.target)?,
            backup: backup.as_deref(),
        };
        wrap::unwrap(text, &location.servers, &location.path, &originals, ours)
    };
    let written = |file: &ConfigFile, outcomes: &[(String, Outcome)]| {
        if outcomes.iter().any(|(_, o)| *o == Outcome::ServeRemoved) {
            records.forget(&file.target)?;
        }
        Ok(())
    };
    run(&args.select, args.dry_run, &plan, &written)
}

fn records() -> anyhow::Result<WrapRecords> {
    WrapRecords::default_place()
        .ok_or_else(|| anyhow::anyhow!("no home folder for ctxopt's state (what wrap added)"))
}

type Planner<'a> = dyn Fn(&ConfigFile, &Location) -> Result<Option<Plan>, ConfigError> + 'a;

/// What to do once a file was written, with what happened to its entries.
type Written<'a> = dyn Fn(&ConfigFile, &[(String, Outcome)]) -> Result<(), ConfigError> + 'a;

fn run(
    select: &Selector,
    dry_run: bool,
    planner: &Planner,
    written: &Written,
) -> anyhow::Result<ExitCode> {
    let locations = select.locations()?;
    if locations.is_empty() {
        println!(
            "no client config files found (see `ctxopt wrap --help` for where they are looked for)"
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut failed = false;
    for location in &locations {
        if let Err(err) = one(location, dry_run, planner, written) {
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

fn one(
    location: &Location,
    dry_run: bool,
    planner: &Planner,
    written: &Written,
) -> Result<(), ConfigError> {
    let plan = |file: &ConfigFile| Ok(planner(file, location)?.map(|p| (Some(p.text), p.outcomes)));
    let Some(change) = change_file(&location.path, dry_run, &plan)? else {
        return Ok(());
    };
    if !dry_run {
        written(&change.file, &change.detail)?;
    }
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
        Outcome::WrappedRemote(_) => "wrapped (ctxopt-proxy --inject none --url)".into(),
        Outcome::AlreadyWrapped => "already wrapped".into(),
        Outcome::Unwrapped => "unwrapped".into(),
        Outcome::NotWrapped => "not wrapped".into(),
        Outcome::ServeAdded => "added: ctxopt serve (the context tools, once)".into(),
        Outcome::ServePresent => "ctxopt serve (the context tools)".into(),
        Outcome::ServeRemoved => "removed: ctxopt serve".into(),
        Outcome::LeftAlone(why) => format!("left alone: {why}"),
    }
}
