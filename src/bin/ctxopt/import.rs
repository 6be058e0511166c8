//! `ctxopt import --from FORMAT FILE…`: session files of another tool in, one records file out
//! (`ctxopt import-swe` is this command with `--from swe-agent`).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::import::{self, swe_agent, ImportOptions, ImportSummary, SourceFormat};
use ctxopt::records::Records;
use ctxopt::records::SessionRecord;

use crate::output_file;

/// The formats `--from` takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum From {
    /// Claude Code transcripts (`~/.claude/projects/…/<session>.jsonl`).
    ClaudeCode,
    /// Gemini CLI saved chats (`~/.gemini/tmp/…/chats/session-*.json`).
    GeminiCli,
    /// Codex CLI rollouts (`~/.codex/sessions/…/rollout-*.jsonl`).
    Codex,
    /// mini-swe-agent trajectories (`*.traj.json`); `ctxopt import-swe` is an alias.
    SweAgent,
}

impl From {
    fn format(self) -> SourceFormat {
        match self {
            From::ClaudeCode => SourceFormat::ClaudeCode,
            From::GeminiCli => SourceFormat::GeminiCli,
            From::Codex => SourceFormat::Codex,
            From::SweAgent => SourceFormat::SweAgent,
        }
    }
}

/// Arguments of `ctxopt import`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The format of the files.
    #[arg(long, value_enum)]
    pub from: From,
    /// The session files; several are merged into one records file (ids prefixed `N/`, the
    /// file's number, from the second file on).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub cuts: Cuts,
    /// Write the records here (mode 0600, replaced whole) instead of stdout.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
}

/// Where to stop reading a mini-swe-agent trajectory (`--from swe-agent` only).
#[derive(Debug, clap::Args)]
pub(crate) struct Cuts {
    /// Keep only this share of the steps (assistant turns), in (0, 1]: ⌊share × steps⌋,
    /// at least one, as if the session were stopped mid-work (swe-agent only).
    #[arg(long, value_name = "SHARE", conflicts_with = "until_step")]
    pub cut: Option<f64>,
    /// Keep only the first N steps (assistant turns; swe-agent only).
    #[arg(long, value_name = "N")]
    pub until_step: Option<usize>,
}

impl Cuts {
    fn options(&self) -> ImportOptions {
        let cut = match (self.cut, self.until_step) {
            (Some(share), _) => Some(swe_agent::Cut::Share(share)),
            (None, Some(n)) => Some(swe_agent::Cut::UntilStep(n)),
            (None, None) => None,
        };
        ImportOptions { cut }
    }
}

/// Runs `ctxopt import`: exit 0 when the records were written (lines that could not be read
/// are named on stderr), 2 when a file cannot be read or is not of the format.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let format = args.from.format();
    let options = args.cuts.options();
    let mut merged = Records::default();
    for (k, file) in args.files.iter().enumerate() {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let (records, summary): (Records, ImportSummary) =
            import::import_text(format, &text, &options)
                .with_context(|| format!("importing {} as {format}", file.display()))?;
        // What a user must see is what was skipped or could not be read; a file imported
        // whole (a trajectory always is) says so only at debug level.
        if summary.skipped.is_empty() && summary.errors.is_empty() {
            tracing::debug!("{}: {summary}", file.display());
        } else {
            tracing::info!("{}: {summary}", file.display());
        }
        if merged.task.is_none() {
            merged.task = records.task.clone();
        }
        for mut record in SessionRecord::all_of(records) {
            if k > 0 {
                let common = record.common_mut();
                common.id = common.id.take().map(|id| format!("{}/{id}", k + 1));
            }
            record.push_into(&mut merged);
        }
    }
    let mut json = serde_json::to_string_pretty(&merged)?;
    json.push('\n');
    output_file::emit(args.output.as_deref(), json.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}
