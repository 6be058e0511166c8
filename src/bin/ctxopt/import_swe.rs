//! `ctxopt import-swe`: an alias of `ctxopt import --from swe-agent` for one trajectory, kept
//! for the scripts and docs that use it (the same code path and options).

use std::path::PathBuf;
use std::process::ExitCode;

use crate::import::{self, Cuts, From};

/// Arguments of `ctxopt import-swe`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The trajectory (`*.traj.json`, format mini-swe-agent-1.1).
    pub trajectory: PathBuf,
    #[command(flatten)]
    pub cuts: Cuts,
    /// Write the records here (mode 0600, replaced whole) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Runs `ctxopt import-swe` as `ctxopt import --from swe-agent`.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    import::run(import::Args {
        from: From::SweAgent,
        files: vec![args.trajectory],
        cuts: args.cuts,
        output: args.output,
    })
}
