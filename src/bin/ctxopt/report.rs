//! `ctxopt report`.

use std::process::ExitCode;

/// Arguments of `ctxopt report`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `ctxopt report`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("ctxopt report is not built yet")
}
