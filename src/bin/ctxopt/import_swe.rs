//! `ctxopt import-swe`: a mini-swe-agent trajectory in (optionally cut after part of its
//! steps), a records file out; the final patch is never in it.

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
    /// Keep only this share of the steps (assistant turns), in (0, 1]: ⌊share × steps⌋,
    /// at least one, as if the session were stopped mid-work.
    #[arg(long, value_name = "SHARE", conflicts_with = "until_step")]
    pub cut: Option<f64>,
    /// Keep only the first N steps (assistant turns).
    #[arg(long, value_name = "N")]
    pub until_step: Option<usize>,
    /// Write the records here (mode 0600, replaced whole) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Runs `ctxopt import-swe`: exit 0 on success, 2 when the trajectory cannot be read.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.trajectory)
        .with_context(|| format!("reading {}", args.trajectory.display()))?;
    let cut = match (args.cut, args.until_step) {
        (Some(share), _) => Some(swe_agent::Cut::Share(share)),
        (None, Some(n)) => Some(swe_agent::Cut::UntilStep(n)),
        (None, None) => None,
    };
    let records = swe_agent::import_with(&text, &swe_agent::ImportOptions { cut })
        .with_context(|| format!("importing {}", args.trajectory.display()))?
        .records;
    let mut json = serde_json::to_string_pretty(&records)?;
    json.push('\n');
    output_file::emit(args.output.as_deref(), json.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
