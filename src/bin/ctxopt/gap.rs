//! `ctxopt gap`.

use std::process::ExitCode;

/// Arguments of `ctxopt gap`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `ctxopt gap`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("ctxopt gap is not built yet")
}
