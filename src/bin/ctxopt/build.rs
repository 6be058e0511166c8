//! `ctxopt build`.

use std::process::ExitCode;

/// Arguments of `ctxopt build`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `ctxopt build`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("ctxopt build is not built yet")
}
