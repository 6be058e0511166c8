//! `ctxopt bench`: the optimizer benchmark over `fixtures/scenarios/`, with `--speed` the
//! speed benchmark on synthetic sessions, or with `--real` the real-session benchmarks (the
//! mini-swe-agent trajectories and the interactive sessions; `--corpus DIR` the interactive
//! one alone on any folder of sessions).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::bench::{interactive, paired, real, report, scenario, speed};
use ctxopt::hooks::DEFAULT_RESTORE_BUDGET;
use ctxopt::optimizer::DEFAULT_BUDGET;
use ctxopt::tokenizer::Tokenizer;

use crate::output_file;

/// The scenarios' JSON results, under the output folder.
const SCENARIOS_JSON: &str = "optimizer-scenarios.json";
/// The speed results, under the output folder.
const SPEED_JSON: &str = "optimizer-speed.json";
/// The real-session results, under the output folder.
const REAL_JSON: &str = "optimizer-real.json";
/// The interactive-session results, under the output folder.
const INTERACTIVE_JSON: &str = "optimizer-interactive.json";
/// The interactive sessions `--real` runs on.
const DEFAULT_CORPUS: &str = "fixtures/real-world/agent-transcripts";

/// Arguments of `ctxopt bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The folder of scenario files.
    #[arg(long, default_value = "fixtures/scenarios")]
    pub scenarios: PathBuf,
    /// Where the JSON results go.
    #[arg(long, default_value = "benchmarks")]
    pub output_dir: PathBuf,
    /// Rewrite the `## Optimizer` section of this Markdown file (e.g. docs/benchmarks.md)
    /// from the JSON results in the output folder.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Run only the scenarios with these names (repeatable); the JSON and Markdown then
    /// cover only them.
    #[arg(long = "only", value_name = "NAME")]
    pub only: Vec<String>,
    /// Run the speed benchmark (synthetic 1k/10k/60k/100k-record sessions) instead.
    #[arg(long)]
    pub speed: bool,
    /// Run the real-session benchmark (real trajectories cut mid-work, against baselines)
    /// instead.
    #[arg(long, conflicts_with = "speed")]
    pub real: bool,
    /// The folder of `*.traj.json` trajectories for `--real`.
    #[arg(long, default_value = "fixtures/real-world/swe-agent-trajectories")]
    pub trajectories: PathBuf,
    /// Run only the interactive-session benchmark, on this folder of Claude Code
    /// transcripts, Codex CLI rollouts and Gemini CLI chats (searched recursively; e.g.
    /// ~/.claude/projects). Without it, `--real` runs it on
    /// fixtures/real-world/agent-transcripts as well as the trajectories.
    #[arg(long, value_name = "DIR", conflicts_with = "speed")]
    pub corpus: Option<PathBuf>,
    /// The restore's token budget in the interactive-session benchmark (the hook's
    /// `--restore-budget`).
    #[arg(long, default_value_t = DEFAULT_RESTORE_BUDGET, conflicts_with = "speed")]
    pub restore_budget: usize,
    /// Write every interactive cut's labels and each strategy's context to this folder
    /// (one Markdown file per cut), to read what each kept and lost.
    #[arg(long, value_name = "DIR", conflicts_with = "speed")]
    pub dump_cuts: Option<PathBuf>,
    /// Builds per size in the speed benchmark.
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// The tokenizer.
    #[arg(long, default_value = "o200k_base")]
    pub tokenizer: Tokenizer,
}

/// Runs `ctxopt bench`: exit 0 when ctxopt meets the bar (or the speed run finished), 1 when
/// it falls short, 2 on bad input.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.output_dir)
        .with_context(|| format!("creating {}", args.output_dir.display()))?;
    let code = if args.speed {
        let result = speed::measure(&speed::SIZES, args.runs, DEFAULT_BUDGET, args.tokenizer)?;
        output_file::emit(None, result.markdown().as_bytes())?;
        write_json(&args.output_dir.join(SPEED_JSON), &result)?;
        ExitCode::SUCCESS
    } else if args.real || args.corpus.is_some() {
        if args.corpus.is_none() {
            let cuts = real::load_cuts(&args.trajectories)?;
            let result = real::run(&cuts, args.tokenizer)?;
            print!("{}\n{}\n", result.markdown_table(), result.verdict());
            write_json(&args.output_dir.join(REAL_JSON), &result)?;
        }
        let corpus = args
            .corpus
            .clone()
            .unwrap_or_else(|| PathBuf::from(DEFAULT_CORPUS));
        let result = interactive::run(
            &corpus,
            args.restore_budget,
            args.tokenizer,
            args.dump_cuts.as_deref(),
        )?;
        print!("{}\n\n{}", result.corpus_line(), result.markdown_table());
        print!(
            "\nCut by cut against ctxopt (the sign test of the cuts where they disagree):\n\n{}",
            paired::markdown_table(&result.paired)
        );
        if !result.compactions.is_empty() {
            print!(
                "\nAt the compactions the transcripts record:\n\n{}",
                result.compactions_table()
            );
        }
        write_json(&args.output_dir.join(INTERACTIVE_JSON), &result)?;
        ExitCode::SUCCESS
    } else {
        let mut scenarios = scenario::load_dir(&args.scenarios)?;
        if !args.only.is_empty() {
            if let Some(unknown) = args
                .only
                .iter()
                .find(|name| !scenarios.iter().any(|s| &s.name == *name))
            {
                anyhow::bail!(
                    "--only {unknown}: no such scenario in {}",
                    args.scenarios.display()
                );
            }
            scenarios.retain(|s| args.only.contains(&s.name));
        }
        anyhow::ensure!(
            !scenarios.is_empty(),
            "no scenario files in {}",
            args.scenarios.display()
        );
        let result = report::run_all(&scenarios, args.tokenizer);
        output_file::emit(None, report::text_table(&result).as_bytes())?;
        write_json(&args.output_dir.join(SCENARIOS_JSON), &result)?;
        if result.meets_bar {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    };
    if let Some(markdown) = &args.markdown {
        update_markdown(markdown, &args.output_dir)?;
    }
    Ok(code)
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    let mut json = serde_json::to_string_pretty(value)?;
    json.push('\n');
    output_file::emit(Some(path), json.as_bytes())
}

/// Re-renders the `## Optimizer` section from the JSON results on disk, so a scenario run
/// and a speed run each refresh the section without losing the other's figures.
fn update_markdown(markdown: &Path, output_dir: &Path) -> anyhow::Result<()> {
    let read = |name: &str| -> anyhow::Result<Option<serde_json::Value>> {
        let path = output_dir.join(name);
        match std::fs::read_to_string(&path) {
            Ok(text) => Ok(Some(
                serde_json::from_str(&text)
                    .with_context(|| format!("reading {}", path.display()))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
        }
    };
    let scenarios: Option<report::BenchReport> = read(SCENARIOS_JSON)?
        .map(serde_json::from_value)
        .transpose()
        .context("reading the scenario results")?;
    let speed: Option<speed::SpeedReport> = read(SPEED_JSON)?
        .map(serde_json::from_value)
        .transpose()
        .context("reading the speed results")?;
    let real: Option<real::RealReport> = read(REAL_JSON)?
        .map(serde_json::from_value)
        .transpose()
        .context("reading the real-session results")?;
    let before: Option<real::RealReport> = read(real::BEFORE_JSON)?
        .map(serde_json::from_value)
        .transpose()
        .context("reading the earlier real-session results")?;
    if let Some(real) = &real {
        let chart = markdown
            .parent()
            .unwrap_or(Path::new("."))
            .join(real::CHART_FILE);
        output_file::emit(Some(&chart), real.svg_chart().as_bytes())?;
    }
    let Some(scenarios) = scenarios else {
        anyhow::bail!(
            "--markdown needs the scenario results: run `ctxopt bench --output-dir {}` first",
            output_dir.display()
        );
    };
    let section = report::markdown_section(
        &scenarios,
        speed.as_ref(),
        real.as_ref().map(|r| (r, before.as_ref())),
    );
    let doc = match std::fs::read_to_string(markdown) {
        Ok(doc) => doc,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("reading {}", markdown.display())),
    };
    output_file::emit(
        Some(markdown),
        report::replace_section(&doc, &section).as_bytes(),
    )
}
