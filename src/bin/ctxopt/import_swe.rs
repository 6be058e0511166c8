//! `ctxopt import-swe`: a mini-swe-agent trajectory in, a records file out.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::import::swe_agent;

use crate::output_file;

/// Arguments of `ctxopt import-swe`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The trajectory (`*.traj.json`, format mini-swe-agent-1.1).
    pub trajectory: PathBuf,
    /// Write the records here (mode 0600, replaced whole) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Runs `ctxopt import-swe`: exit 0 on success, 2 when the trajectory cannot be read.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.trajectory)
        .with_context(|| format!("reading {}", args.trajectory.display()))?;
    let records = swe_agent::import_trajectory(&text)
        .with_context(|| format!("importing {}", args.trajectory.display()))?;
    let mut json = serde_json::to_string_pretty(&records)?;
    json.push('\n');
    output_file::emit(args.output.as_deref(), json.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
