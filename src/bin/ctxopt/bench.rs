//! `ctxopt bench`.

use std::process::ExitCode;

/// Arguments of `ctxopt bench`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `ctxopt bench`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("ctxopt bench is not built yet")
}
