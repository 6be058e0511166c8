//! `ctxopt trust`: accept a server's changed tool catalog held back by
//! `ctxopt-proxy --hold-changed-tools`, or list the changes waiting.

use std::process::ExitCode;

use anyhow::Context;
use ctxopt::evidence::trusted::CatalogDir;
use ctxopt::store::StoreLocation;
use ctxopt::tokenizer::Tokenizer;

/// Arguments of `ctxopt trust`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The servers whose changed catalog to accept: the proxy's server name (`--name`, or
    /// derived from the command). Without a name (and without --all): list what waits.
    #[arg(value_name = "SERVER", conflicts_with = "all")]
    servers: Vec<String>,
    /// Accept every server's changed catalog.
    #[arg(long)]
    all: bool,
    /// The session store the proxy ran with (the catalogs are kept beside it; default:
    /// $XDG_STATE_HOME/ctxopt/store.sqlite3).
    #[arg(long, value_name = "PATH")]
    store: Option<String>,
}

/// Runs `ctxopt trust`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let location = match args.store.as_deref() {
        Some(arg) => StoreLocation::parse(arg),
        None => StoreLocation::default_file().context("no home directory: give --store")?,
    };
    let StoreLocation::File(store_file) = location else {
        anyhow::bail!("--store :memory: keeps no tool catalogs");
    };
    let catalogs = CatalogDir::beside(&store_file);
    let tokenizer = Tokenizer::O200kBase;
    if args.servers.is_empty() && !args.all {
        let pending = catalogs.pending()?;
        if pending.is_empty() {
            println!(
                "no changed tool catalog waits to be accepted ({})",
                catalogs.path().display()
            );
        }
        for entry in pending {
            println!(
                "{} (accept with `ctxopt trust {}`):",
                entry.key,
                entry.server_name()
            );
            for line in entry
                .remembered
                .pending_diff(tokenizer)
                .unwrap_or_default()
                .lines()
            {
                println!("  {line}");
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let names = (!args.all).then_some(args.servers.as_slice());
    let accepted = catalogs.accept(names, tokenizer)?;
    if accepted.is_empty() {
        println!("no changed tool catalog waits to be accepted");
    }
    for a in accepted {
        match a.diff {
            Some(diff) => {
                println!("{}: accepted", a.key);
                for line in diff.lines() {
                    println!("  {line}");
                }
            }
            None => println!("{}: nothing waits to be accepted", a.key),
        }
    }
    Ok(ExitCode::SUCCESS)
}
