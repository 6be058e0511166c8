//! `ctxopt audit`.

use std::process::ExitCode;

/// Arguments of `ctxopt audit`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `ctxopt audit`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("ctxopt audit is not built yet")
}
