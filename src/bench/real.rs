//! The real-session benchmark (`ctxopt bench --real`): real mini-swe-agent trajectories,
//! each imported through [`import_with`](crate::import::swe_agent::import_with) and cut at
//! 40 %, 60 % and 80 % of its steps, built under budgets of 2k–16k tokens by ctxopt and by
//! four baselines in the same run, and scored against mechanical labels.
//!
//! **Labels** of a cut: the files the final patch changes that the session saw before the
//! cut (their path occurs in a record the cut holds), tests and reproduction scripts aside
//! (a path with a `test`/`tests`/`testing` folder, or a file name that starts with `test`,
//! `repro` or `conftest`, or ends in `_test.*`); and the error the task names (the last line
//! of the task shaped `SomethingError: …`/`…Exception: …`/`…Warning: …`).
//!
//! A labelled file is **kept** when the context holds its path and, if the session read the
//! file before the cut, at least one line of what it read (a line of at least
//! [`LABEL_LINE_CHARS`] characters, trimmed), so a context that only names the file does
//! not count. Trajectories are split into a tuning and a held-out half by [`half`].
//!
//! The **code** label of a cut ([`code_label`]): the lines of the final patch (trimmed, at
//! least [`CODE_LINE_CHARS`] characters; tests and scripts aside) that a record before the
//! cut holds — the original lines it changes, shown to the session, or its new lines, where
//! the session had already written them. The code is kept when the context holds one.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::session_cut::CODE_LINE_CHARS;
use super::{baseline, strategy};
use crate::import::swe_agent::{self, Cut, ImportOptions, PatchFile};
use crate::optimizer::{self, BuildConfig};
use crate::records::Records;
use crate::tokenizer::Tokenizer;

/// The shares of each trajectory's steps it is cut at.
pub(crate) const CUTS: [f64; 3] = [0.4, 0.6, 0.8];
/// The budgets every strategy is built under.
pub(crate) const BUDGETS: [usize; 4] = [2000, 4000, 8000, 16000];
/// The least length of a line of a read file that counts as showing the file.
pub(crate) const LABEL_LINE_CHARS: usize = 24;

/// The half of the corpus a trajectory belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Half {
    /// Rules may be tuned on it.
    Tuning,
    /// Only reported: a rule is kept only if it helps here too.
    HeldOut,
}

impl Half {
    /// Both, in report order.
    pub(crate) const ALL: [Half; 2] = [Half::Tuning, Half::HeldOut];

    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Half::Tuning => "tuning",
            Half::HeldOut => "held-out",
        }
    }
}

/// The half of the trajectory file `name` (`pydicom__pydicom-901.traj.json`): tuning when
/// the first byte of sha256(name) is even (the rule `SPLIT.md` beside the data states).
pub(crate) fn half(name: &str) -> Half {
    if Sha256::digest(name.as_bytes())[0] % 2 == 0 {
        Half::Tuning
    } else {
        Half::HeldOut
    }
}

/// What the real-session benchmark compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RealStrategy {
    /// [`optimizer::build`].
    Ctxopt,
    /// The transcript's last tokens.
    Tail,
    /// The transcript's first and last tokens.
    HeadTail,
    /// Exact dedupe, then head truncation.
    DedupeTruncate,
    /// BM25 retrieval of chunks by the task.
    Bm25,
}

impl RealStrategy {
    /// All, in report order.
    pub(crate) const ALL: [RealStrategy; 5] = [
        RealStrategy::Ctxopt,
        RealStrategy::Tail,
        RealStrategy::HeadTail,
        RealStrategy::DedupeTruncate,
        RealStrategy::Bm25,
    ];

    /// The name in tables and the chart.
    pub fn name(self) -> &'static str {
        match self {
            RealStrategy::Ctxopt => "ctxopt",
            RealStrategy::Tail => "tail",
            RealStrategy::HeadTail => "head+tail",
            RealStrategy::DedupeTruncate => "dedupe+truncate",
            RealStrategy::Bm25 => "BM25",
        }
    }

    /// The context this strategy builds.
    pub fn context(
        self,
        records: &Records,
        budget: usize,
        tokenizer: Tokenizer,
    ) -> Result<String, optimizer::OptimizerError> {
        Ok(match self {
            RealStrategy::Ctxopt => {
                let config = BuildConfig {
                    budget,
                    tokenizer,
                    ..BuildConfig::default()
                };
                optimizer::build(records, &config)?.context
            }
            RealStrategy::Tail => baseline::tail(records, budget, tokenizer),
            RealStrategy::HeadTail => baseline::head_tail(records, budget, tokenizer),
            RealStrategy::DedupeTruncate => {
                strategy::dedupe_truncate(records, budget, tokenizer).context
            }
            RealStrategy::Bm25 => baseline::bm25(records, budget, tokenizer),
        })
    }
}

/// A labelled file of a cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LabelledFile {
    /// The path, as the final patch names it.
    pub path: String,
    /// Lines of what the session read of it (empty when it only saw the path).
    pub lines: Vec<String>,
}

impl LabelledFile {
    /// Whether `context` keeps this file (see the module doc).
    pub(crate) fn kept_by(&self, context: &str) -> bool {
        context.contains(&self.path)
            && (self.lines.is_empty() || self.lines.iter().any(|l| context.contains(l.as_str())))
    }
}

/// One trajectory cut at one share of its steps, with its labels.
#[derive(Debug, Clone, PartialEq)]
pub struct RealCut {
    /// The trajectory's file name.
    pub trajectory: String,
    /// Its half.
    pub half: Half,
    /// The share of steps kept.
    pub share: f64,
    /// The records up to the cut.
    pub records: Records,
    /// The labelled files.
    pub files: Vec<LabelledFile>,
    /// The error the task names, when it names one.
    pub(crate) task_error: Option<String>,
    /// The code label (see the module doc; empty: none).
    pub(crate) code: Vec<String>,
}

/// Why the corpus could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RealError {
    /// A file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// A trajectory could not be imported.
    #[error("{path}: {source}")]
    Import {
        /// The trajectory.
        path: PathBuf,
        /// The cause.
        source: swe_agent::ImportError,
    },
    /// A build failed.
    #[error("{trajectory}: {source}")]
    Build {
        /// The trajectory.
        trajectory: String,
        /// The cause.
        source: optimizer::OptimizerError,
    },
    /// The folder holds no trajectory.
    #[error("{0}: no *.traj.json file")]
    Empty(PathBuf),
}

/// Loads every `*.traj.json` in `dir`, cut at each of [`CUTS`], with labels.
pub fn load_cuts(dir: &Path) -> Result<Vec<RealCut>, RealError> {
    let io = |source| RealError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|e| e.map(|e| e.path()).map_err(io))
        .collect::<Result<_, _>>()?;
    paths.retain(|p| p.to_string_lossy().ends_with(".traj.json"));
    paths.sort();
    if paths.is_empty() {
        return Err(RealError::Empty(dir.to_path_buf()));
    }
    let mut cuts = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).map_err(|source| RealError::Io {
            path: path.clone(),
            source,
        })?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for share in CUTS {
            let options = ImportOptions {
                cut: Some(Cut::Share(share)),
            };
            let imported =
                swe_agent::import_with(&text, &options).map_err(|source| RealError::Import {
                    path: path.clone(),
                    source,
                })?;
            let files = imported
                .final_patch
                .iter()
                .filter(|p| !is_test_or_script(&p.path))
                .filter_map(|p| label(&imported.records, &p.path))
                .collect();
            cuts.push(RealCut {
                trajectory: name.clone(),
                half: half(&name),
                share,
                task_error: imported.records.task.as_deref().and_then(task_error),
                code: code_label(&imported.records, &imported.final_patch),
                records: imported.records,
                files,
            });
        }
    }
    Ok(cuts)
}

/// Whether a patched path is a test or a reproduction script.
pub(crate) fn is_test_or_script(path: &str) -> bool {
    let mut parts = path.split('/').collect::<Vec<_>>();
    let name = parts.pop().unwrap_or_default();
    parts
        .iter()
        .any(|p| matches!(*p, "test" | "tests" | "testing"))
        || ["test", "repro", "conftest"]
            .iter()
            .any(|p| name.starts_with(p))
        || name
            .rsplit_once('.')
            .is_some_and(|(stem, _)| stem.ends_with("_test"))
}

/// The label of a patched `path` in `records`, when the session saw it before the cut.
fn label(records: &Records, path: &str) -> Option<LabelledFile> {
    let texts = records
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .chain(
            records
                .tool_outputs
                .iter()
                .flat_map(|o| [o.tool.as_str(), o.output.as_str()]),
        )
        .chain(
            records
                .errors
                .iter()
                .flat_map(|e| std::iter::once(e.message.as_str()).chain(e.stack.as_deref())),
        )
        .chain(records.files.iter().map(|f| f.path.as_str()));
    let seen = texts.into_iter().any(|t| t.contains(path));
    if !seen {
        return None;
    }
    let lines = records
        .files
        .iter()
        .rev()
        .find(|f| f.path == path)
        .map(|f| {
            f.content
                .lines()
                .map(str::trim)
                .filter(|l| l.chars().count() >= LABEL_LINE_CHARS && !l.starts_with("[ctxopt:"))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    Some(LabelledFile {
        path: path.to_string(),
        lines,
    })
}

/// The code label of a cut: the lines the final `patch` removes or adds (trimmed, at least
/// [`CODE_LINE_CHARS`] characters, tests and scripts aside, each once) that a record of
/// `records` holds.
pub(crate) fn code_label(records: &Records, patch: &[PatchFile]) -> Vec<String> {
    let texts: Vec<&str> = records
        .messages
        .iter()
        .map(|m| m.text.as_str())
        .chain(records.tool_outputs.iter().map(|o| o.output.as_str()))
        .chain(records.files.iter().map(|f| f.content.as_str()))
        .chain(records.diffs.iter().map(|d| d.diff.as_str()))
        .collect();
    let mut code: Vec<String> = Vec::new();
    for file in patch.iter().filter(|p| !is_test_or_script(&p.path)) {
        for line in file.diff.lines() {
            if line.starts_with("---") || line.starts_with("+++") {
                continue;
            }
            let Some(line) = line.strip_prefix(['-', '+']).map(str::trim) else {
                continue;
            };
            if line.chars().count() >= CODE_LINE_CHARS
                && !code.iter().any(|c| c == line)
                && texts.iter().any(|t| t.contains(line))
            {
                code.push(line.to_string());
            }
        }
    }
    code
}

/// The error the task names: its last line shaped `NameError: message` (or `…Exception`,
/// `…Warning`), trimmed.
pub(crate) fn task_error(task: &str) -> Option<String> {
    task.lines()
        .map(str::trim)
        .rfind(|l| {
            l.split_once(':').is_some_and(|(name, rest)| {
                let name = name.rsplit('.').next().unwrap_or(name);
                !rest.trim().is_empty()
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && ["Error", "Exception", "Warning"]
                        .iter()
                        .any(|s| name.ends_with(s))
            })
        })
        .map(str::to_string)
}

/// The figures of one strategy under one budget over one half.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealRow {
    /// The half.
    pub half: Half,
    /// The strategy.
    pub strategy: RealStrategy,
    /// The budget.
    pub budget: usize,
    /// Cuts with at least one labelled file.
    pub(crate) labelled_cuts: usize,
    /// Of those, the cuts whose labelled files are all kept.
    pub(crate) all_kept: usize,
    /// Labelled files over all cuts.
    pub files: usize,
    /// Of those, the ones kept.
    pub(crate) files_kept: usize,
    /// Cuts whose task names an error.
    pub(crate) error_cuts: usize,
    /// Of those, the ones whose context holds the error.
    pub(crate) errors_kept: usize,
    /// Cuts with a code label.
    #[serde(default)]
    pub(crate) code_cuts: usize,
    /// Of those, the ones whose context holds a line of it.
    #[serde(default)]
    pub(crate) code_kept: usize,
    /// Mean tokens of the context.
    pub(crate) mean_tokens: f64,
    /// Mean build time in milliseconds.
    pub(crate) mean_millis: f64,
    /// Longest build time in milliseconds.
    pub(crate) max_millis: f64,
}

impl RealRow {
    /// Kept labelled files over labelled files (1 when there are none).
    pub fn recall(&self) -> f64 {
        recall(self.files_kept, self.files)
    }
}

/// `kept` over `labelled` (1 when nothing is labelled).
pub fn recall(kept: usize, labelled: usize) -> f64 {
    if labelled == 0 {
        1.0
    } else {
        kept as f64 / labelled as f64
    }
}

/// Which cuts kept every labelled file, for one strategy and budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CutOutcome {
    /// The trajectory.
    pub trajectory: String,
    /// The share of steps.
    pub share: f64,
    /// The strategy.
    pub strategy: RealStrategy,
    /// The budget.
    pub budget: usize,
    /// The labelled files that were not kept.
    pub lost: Vec<String>,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RealReport {
    /// Trajectories per half.
    pub trajectories: Vec<(Half, usize)>,
    /// One row per half × strategy × budget.
    pub rows: Vec<RealRow>,
    /// The cuts that lost a labelled file, per strategy and budget.
    pub(crate) losses: Vec<CutOutcome>,
}

/// Runs every strategy under every budget on `cuts`.
pub fn run(cuts: &[RealCut], tokenizer: Tokenizer) -> Result<RealReport, RealError> {
    let mut rows = Vec::new();
    let mut losses = Vec::new();
    for half in Half::ALL {
        let mine: Vec<&RealCut> = cuts.iter().filter(|c| c.half == half).collect();
        for strategy in RealStrategy::ALL {
            for budget in BUDGETS {
                let mut row = RealRow {
                    half,
                    strategy,
                    budget,
                    labelled_cuts: 0,
                    all_kept: 0,
                    files: 0,
                    files_kept: 0,
                    error_cuts: 0,
                    errors_kept: 0,
                    code_cuts: 0,
                    code_kept: 0,
                    mean_tokens: 0.0,
                    mean_millis: 0.0,
                    max_millis: 0.0,
                };
                for cut in &mine {
                    let started = Instant::now();
                    let context =
                        strategy
                            .context(&cut.records, budget, tokenizer)
                            .map_err(|source| RealError::Build {
                                trajectory: cut.trajectory.clone(),
                                source,
                            })?;
                    let millis = started.elapsed().as_secs_f64() * 1000.0;
                    row.mean_millis += millis;
                    row.max_millis = row.max_millis.max(millis);
                    row.mean_tokens += tokenizer.count(&context) as f64;
                    if !cut.files.is_empty() {
                        row.labelled_cuts += 1;
                        let lost: Vec<String> = cut
                            .files
                            .iter()
                            .filter(|f| !f.kept_by(&context))
                            .map(|f| f.path.clone())
                            .collect();
                        row.files += cut.files.len();
                        row.files_kept += cut.files.len() - lost.len();
                        if lost.is_empty() {
                            row.all_kept += 1;
                        } else {
                            losses.push(CutOutcome {
                                trajectory: cut.trajectory.clone(),
                                share: cut.share,
                                strategy,
                                budget,
                                lost,
                            });
                        }
                    }
                    if let Some(error) = &cut.task_error {
                        row.error_cuts += 1;
                        row.errors_kept += usize::from(context.contains(error.as_str()));
                    }
                    if !cut.code.is_empty() {
                        row.code_cuts += 1;
                        row.code_kept +=
                            usize::from(cut.code.iter().any(|l| context.contains(l.as_str())));
                    }
                }
                let n = mine.len().max(1) as f64;
                row.mean_tokens /= n;
                row.mean_millis /= n;
                rows.push(row);
            }
        }
    }
    let trajectories = Half::ALL
        .iter()
        .map(|&h| {
            let mut names: Vec<&str> = cuts
                .iter()
                .filter(|c| c.half == h)
                .map(|c| c.trajectory.as_str())
                .collect();
            names.dedup();
            (h, names.len())
        })
        .collect();
    Ok(RealReport {
        trajectories,
        rows,
        losses,
    })
}

/// The file name, in the output folder, of the run recorded before the rules were changed
/// against the corpus (when present, ctxopt's figures of it are shown beside the current
/// run's).
pub const BEFORE_JSON: &str = "optimizer-real-before.json";

/// The file name of the chart, written beside the Markdown file.
pub const CHART_FILE: &str = "optimizer-real-recall.svg";

/// The share of labelled cuts at [`BAR_BUDGET`] whose labelled files ctxopt must all keep.
pub(crate) const BAR_SHARE: f64 = 0.9;
/// The budget the [`BAR_SHARE`] applies at.
pub(crate) const BAR_BUDGET: usize = 4000;

/// How ctxopt stands against one baseline in one half at one budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Standing {
    /// More cuts with every labelled file kept, or as many with a higher per-file recall.
    Ahead,
    /// The same on both.
    Tied,
    /// Fewer cuts, or as many with a lower recall.
    Behind,
}

impl RealReport {
    /// The row of `strategy` under `budget` in `half`.
    pub fn row(&self, half: Half, strategy: RealStrategy, budget: usize) -> Option<&RealRow> {
        self.rows
            .iter()
            .find(|r| r.half == half && r.strategy == strategy && r.budget == budget)
    }

    /// How ctxopt stands against `baseline` in `half` under `budget`.
    pub(crate) fn standing(
        &self,
        half: Half,
        baseline: RealStrategy,
        budget: usize,
    ) -> Option<Standing> {
        let ours = self.row(half, RealStrategy::Ctxopt, budget)?;
        let theirs = self.row(half, baseline, budget)?;
        let key = |r: &RealRow| (r.all_kept, r.files_kept);
        Some(match key(ours).cmp(&key(theirs)) {
            std::cmp::Ordering::Greater => Standing::Ahead,
            std::cmp::Ordering::Equal => Standing::Tied,
            std::cmp::Ordering::Less => Standing::Behind,
        })
    }

    /// The bar, one line per half: ahead of every baseline at every budget, and every
    /// labelled file kept in at least [`BAR_SHARE`] of the cuts at [`BAR_BUDGET`]; each
    /// shortfall named.
    pub fn verdict(&self) -> String {
        let mut out = String::new();
        for half in Half::ALL {
            let mut short = Vec::new();
            for budget in BUDGETS {
                for baseline in &RealStrategy::ALL[1..] {
                    match self.standing(half, *baseline, budget) {
                        Some(Standing::Ahead) | None => {}
                        Some(Standing::Tied) => {
                            short.push(format!("tied with {} at {budget}", baseline.name()))
                        }
                        Some(Standing::Behind) => {
                            short.push(format!("behind {} at {budget}", baseline.name()))
                        }
                    }
                }
            }
            if let Some(r) = self.row(half, RealStrategy::Ctxopt, BAR_BUDGET) {
                if (r.all_kept as f64) < BAR_SHARE * r.labelled_cuts as f64 {
                    short.push(format!(
                        "all labelled files kept in {}/{} cuts at {BAR_BUDGET} (below {:.0} %)",
                        r.all_kept,
                        r.labelled_cuts,
                        BAR_SHARE * 100.0
                    ));
                }
            }
            if short.is_empty() {
                out.push_str(&format!("- {} half: **the bar is met**.\n", half.name()));
            } else {
                out.push_str(&format!(
                    "- {} half: **the bar is not met**: {}.\n",
                    half.name(),
                    short.join("; ")
                ));
            }
        }
        out
    }

    /// ctxopt's figures in `before` and in this run side by side, per half and budget.
    pub fn comparison(&self, before: &RealReport) -> String {
        let mut out = String::from(
            "| half | budget | all kept before | all kept now | recall before | recall now | mean tokens before | mean tokens now |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for half in Half::ALL {
            for budget in BUDGETS {
                let (Some(b), Some(a)) = (
                    before.row(half, RealStrategy::Ctxopt, budget),
                    self.row(half, RealStrategy::Ctxopt, budget),
                ) else {
                    continue;
                };
                out.push_str(&format!(
                    "| {} | {budget} | {}/{} | {}/{} | {:.1}% | {:.1}% | {:.0} | {:.0} |\n",
                    half.name(),
                    b.all_kept,
                    b.labelled_cuts,
                    a.all_kept,
                    a.labelled_cuts,
                    b.recall() * 100.0,
                    a.recall() * 100.0,
                    b.mean_tokens,
                    a.mean_tokens
                ));
            }
        }
        out
    }

    /// The `### Real sessions` part of the `## Optimizer` section, with ctxopt's figures of
    /// an earlier run (`before`) beside this one's when given.
    pub fn markdown(&self, before: Option<&RealReport>) -> String {
        let count = |h: Half| {
            self.trajectories
                .iter()
                .find(|(x, _)| *x == h)
                .map_or(0, |(_, n)| *n)
        };
        let mut out = format!(
            "### Real sessions\n\nGenerated by `ctxopt bench --real --markdown docs/benchmarks.md`: the {} + {} \
             mini-swe-agent trajectories of `fixtures/real-world/swe-agent-trajectories/` (tuning + held-out \
             half, `SPLIT.md` there), each imported with `ctxopt import-swe --cut` at 40, 60 and 80 % of its \
             steps (the final patch never in the records). Labels: the files the final patch changes that the \
             session saw before the cut (tests and reproduction scripts aside); a file is kept when the context \
             holds its path and a line the session read of it (`docs/records.md`). Baselines in the same run: \
             the transcript's last N tokens (tail), its first and last N/2 (head+tail), exact dedupe + head \
             truncation, BM25 top-k of messages and 1,200-character chunks by the task (the `bm25` \
             crate's Okapi BM25, English tokenizer with stemming and stop words). Raw figures: \
             `benchmarks/optimizer-real.json`.\n\n![per-file recall against budget]({CHART_FILE})\n\n",
            count(Half::Tuning),
            count(Half::HeldOut)
        );
        out.push_str(&self.markdown_table());
        out.push_str("\nThe bar (ahead of every baseline at every budget — more cuts with all labelled files kept, or as many with more files kept — and all labelled files kept in at least 90 % of the cuts at 4k):\n\n");
        out.push_str(&self.verdict());
        if let Some(before) = before {
            out.push_str(&format!(
                "\n#### ctxopt before and after the rule changes\n\nBefore: `benchmarks/{BEFORE_JSON}`, the run recorded when the corpus was last extended, before any rule was changed against it (see the notes below).\n\n"
            ));
            out.push_str(&self.comparison(before));
        }
        out.push('\n');
        out
    }

    /// The Markdown table: one row per half × strategy × budget.
    pub fn markdown_table(&self) -> String {
        let mut out = String::from(
            "| half | strategy | budget | all labelled files kept | per-file recall | task error kept | code kept | mean tokens | mean ms | max ms |\n\
             |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for r in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {}/{} | {:.1}% | {}/{} | {}/{} | {:.0} | {:.1} | {:.1} |\n",
                r.half.name(),
                r.strategy.name(),
                r.budget,
                r.all_kept,
                r.labelled_cuts,
                r.recall() * 100.0,
                r.errors_kept,
                r.error_cuts,
                r.code_kept,
                r.code_cuts,
                r.mean_tokens,
                r.mean_millis,
                r.max_millis
            ));
        }
        out
    }

    /// An SVG chart: per-file recall against budget, one line per strategy, one panel per
    /// half.
    pub fn svg_chart(&self) -> String {
        const W: f64 = 360.0;
        const H: f64 = 240.0;
        const PAD: f64 = 44.0;
        const COLORS: [&str; 5] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e"];
        let x = |i: usize| PAD + i as f64 * (W - 2.0 * PAD) / (BUDGETS.len() - 1) as f64;
        let y = |recall: f64| H - PAD - recall * (H - 2.0 * PAD);
        let mut svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
            W * 2.0,
            H + 30.0
        );
        for (p, half) in Half::ALL.iter().enumerate() {
            let dx = p as f64 * W;
            svg.push_str(&format!("<g transform=\"translate({dx},0)\">\n"));
            svg.push_str(&format!(
                "<text x=\"{}\" y=\"18\" text-anchor=\"middle\" font-size=\"13\">{} half: per-file recall</text>\n",
                W / 2.0,
                half.name()
            ));
            for tick in [0.0, 0.25, 0.5, 0.75, 1.0] {
                svg.push_str(&format!(
                    "<line x1=\"{PAD}\" x2=\"{}\" y1=\"{y:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{:.0}%</text>\n",
                    W - PAD,
                    PAD - 4.0,
                    y(tick) + 4.0,
                    tick * 100.0,
                    y = y(tick)
                ));
            }
            for (i, b) in BUDGETS.iter().enumerate() {
                svg.push_str(&format!(
                    "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}k</text>\n",
                    x(i),
                    H - PAD + 16.0,
                    b / 1000
                ));
            }
            for (s, strategy) in RealStrategy::ALL.iter().enumerate() {
                let points: Vec<String> = BUDGETS
                    .iter()
                    .enumerate()
                    .filter_map(|(i, &b)| {
                        self.rows
                            .iter()
                            .find(|r| r.half == *half && r.strategy == *strategy && r.budget == b)
                            .map(|r| format!("{:.1},{:.1}", x(i), y(r.recall())))
                    })
                    .collect();
                svg.push_str(&format!(
                    "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                    COLORS[s],
                    points.join(" ")
                ));
            }
            svg.push_str("</g>\n");
        }
        for (s, strategy) in RealStrategy::ALL.iter().enumerate() {
            let lx = PAD + s as f64 * 120.0;
            svg.push_str(&format!(
                "<line x1=\"{lx}\" x2=\"{}\" y1=\"{}\" y2=\"{}\" stroke=\"{}\" stroke-width=\"3\"/><text x=\"{}\" y=\"{}\">{}</text>\n",
                lx + 18.0,
                H + 14.0,
                H + 14.0,
                COLORS[s],
                lx + 22.0,
                H + 18.0,
                strategy.name()
            ));
        }
        svg.push_str("</svg>\n");
        svg
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_follow_the_committed_split() {
        let split = include_str!("../../fixtures/real-world/swe-agent-trajectories/SPLIT.md");
        let mut current = None;
        let mut listed = 0;
        for line in split.lines() {
            match line {
                "## tuning" => current = Some(Half::Tuning),
                "## held-out" => current = Some(Half::HeldOut),
                l if l.starts_with("- ") => {
                    assert_eq!(Some(half(&l[2..])), current, "{l}");
                    listed += 1;
                }
                _ => {}
            }
        }
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/real-world/swe-agent-trajectories"
        );
        let on_disk = std::fs::read_dir(dir)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".traj.json")
            })
            .count();
        assert_eq!(listed, on_disk, "SPLIT.md must list every trajectory");
        assert!(on_disk >= 73);
    }

    #[test]
    fn tests_and_scripts_are_not_labels() {
        for p in [
            "tests/test_a.py",
            "pkg/testing/x.py",
            "reproduce.py",
            "a/b_test.go",
            "test_fix.py",
        ] {
            assert!(is_test_or_script(p), "{p}");
        }
        for p in [
            "astroid/nodes/as_string.py",
            "src/latest.py",
            "pkg/contest.py",
        ] {
            assert!(!is_test_or_script(p), "{p}");
        }
    }

    #[test]
    fn the_task_error_is_its_last_exception_line() {
        let task = "Title\nTraceback (most recent call last):\n  File \"x\"\nAttributeError: 'A' object has no attribute 'b'\n>>>";
        assert_eq!(
            task_error(task).as_deref(),
            Some("AttributeError: 'A' object has no attribute 'b'")
        );
        assert_eq!(
            task_error("x\nmarshmallow.exceptions.ValidationError: bad\n").as_deref(),
            Some("marshmallow.exceptions.ValidationError: bad")
        );
        assert_eq!(task_error("Note: nothing failed"), None);
    }

    #[test]
    fn a_file_is_kept_only_with_its_path_and_a_line_that_was_read() {
        let file = LabelledFile {
            path: "pkg/a.py".into(),
            lines: vec!["def parse_header(stream, size):".into()],
        };
        assert!(file.kept_by("[x | pkg/a.py]\ndef parse_header(stream, size):\n"));
        assert!(!file.kept_by("pkg/a.py was read"));
        assert!(!file.kept_by("def parse_header(stream, size):"));
        let named = LabelledFile {
            path: "pkg/a.py".into(),
            lines: vec![],
        };
        assert!(named.kept_by("see pkg/a.py"));
    }

    fn row(strategy: RealStrategy, budget: usize, all_kept: usize, files_kept: usize) -> RealRow {
        RealRow {
            half: Half::Tuning,
            strategy,
            budget,
            labelled_cuts: 10,
            all_kept,
            files: 12,
            files_kept,
            error_cuts: 0,
            errors_kept: 0,
            code_cuts: 0,
            code_kept: 0,
            mean_tokens: 0.0,
            mean_millis: 0.0,
            max_millis: 0.0,
        }
    }

    #[test]
    fn the_verdict_names_every_shortfall() {
        let mut rows = Vec::new();
        for budget in BUDGETS {
            rows.push(row(RealStrategy::Ctxopt, budget, 9, 11));
            rows.push(row(RealStrategy::Tail, budget, 5, 6));
            rows.push(row(RealStrategy::HeadTail, budget, 9, 10));
            rows.push(row(RealStrategy::DedupeTruncate, budget, 4, 5));
            rows.push(row(RealStrategy::Bm25, budget, 8, 11));
        }
        let mut report = RealReport {
            trajectories: vec![(Half::Tuning, 1)],
            rows,
            losses: vec![],
        };
        assert_eq!(
            report.standing(Half::Tuning, RealStrategy::HeadTail, 4000),
            Some(Standing::Ahead),
            "as many cuts, more files"
        );
        assert!(report.verdict().contains("tuning half: **the bar is met**"));
        report.rows[2].all_kept = 10; // head+tail at 2k
        report.rows[5].all_kept = 8; // ctxopt at 4k: 8/10 < 90 %
        report.rows[9].files_kept = 11; // BM25 at 4k: same cuts, same files
        let verdict = report.verdict();
        assert!(verdict.contains("behind head+tail at 2000"), "{verdict}");
        assert!(verdict.contains("tied with BM25 at 4000"), "{verdict}");
        assert!(verdict.contains("kept in 8/10 cuts at 4000"), "{verdict}");
        let before = report.clone();
        report.rows[5].all_kept = 10;
        let table = report.comparison(&before);
        assert!(
            table.contains("| tuning | 4000 | 8/10 | 10/10 |"),
            "{table}"
        );
    }

    /// The canary: on the real corpus every metric is non-zero for some strategy, and the
    /// whole transcript (a budget beyond any cut) keeps every label.
    #[test]
    fn on_the_real_corpus_the_metrics_move() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/real-world/swe-agent-trajectories");
        let cuts = load_cuts(&dir).unwrap();
        assert_eq!(cuts.len(), 73 * CUTS.len());
        let labelled = cuts.iter().filter(|c| !c.files.is_empty()).count();
        assert!(labelled >= 30, "{labelled} labelled cuts");
        assert!(cuts
            .iter()
            .any(|c| c.files.iter().any(|f| !f.lines.is_empty())));
        assert!(cuts.iter().all(|c| c.records.diffs.is_empty()));
        let t = Tokenizer::O200kBase;
        for cut in cuts.iter().filter(|c| !c.files.is_empty()).take(6) {
            let whole = strategy::raw_context(&cut.records);
            assert!(
                cut.files.iter().all(|f| f.kept_by(&whole)),
                "{}",
                cut.trajectory
            );
            let tiny = RealStrategy::Tail.context(&cut.records, 50, t).unwrap();
            assert!(t.count(&tiny) <= 50);
        }
        // The code label: most cuts have one, the whole transcript holds it, a tiny tail
        // does not always.
        let coded: Vec<&RealCut> = cuts.iter().filter(|c| !c.code.is_empty()).collect();
        assert!(coded.len() >= 30, "{} cuts with code", coded.len());
        for cut in &coded {
            let whole = strategy::raw_context(&cut.records);
            assert!(cut.code.iter().any(|l| whole.contains(l.as_str())));
        }
        assert!(coded.iter().any(|c| {
            let tiny = RealStrategy::Tail.context(&c.records, 50, t).unwrap();
            !c.code.iter().any(|l| tiny.contains(l.as_str()))
        }));
    }

    #[test]
    fn the_code_label_is_the_patch_lines_the_session_saw() {
        let records = Records {
            files: vec![crate::records::FileRecord {
                common: crate::records::Common::default(),
                path: "pkg/a.py".into(),
                content: "def total(xs):\n    return sum(x.cents for x in xs)\n".into(),
            }],
            messages: vec![crate::records::Message {
                common: crate::records::Common::default(),
                role: crate::records::Role::Assistant,
                text: "I wrote `return sum(x.amount for x in xs)` already".into(),
            }],
            ..Records::default()
        };
        let patch = |path: &str| {
            PatchFile {
            path: path.into(),
            diff: "--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n def total(xs):\n-    return sum(x.cents for x in xs)\n+    return sum(x.amount for x in xs)\n+    # a new comment never shown\n-x\n".into(),
        }
        };
        assert_eq!(
            code_label(&records, &[patch("pkg/a.py"), patch("tests/test_a.py")]),
            [
                "return sum(x.cents for x in xs)",
                "return sum(x.amount for x in xs)"
            ]
        );
        assert!(code_label(&Records::default(), &[patch("pkg/a.py")]).is_empty());
    }
}
