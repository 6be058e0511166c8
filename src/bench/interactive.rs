//! The interactive-session benchmark (`ctxopt bench --real`; `--corpus DIR` for any folder of
//! sessions): real Claude Code, Codex CLI and Gemini CLI sessions ([`session_cut`]), each cut
//! after 30, 50 and 70 % of its tool calls; at each cut the client's sequence after a
//! compaction is replayed through the hook's own code path ([`replay_compaction`]), and the
//! hook's answer is set beside three baselines of the same size in tokens (the transcript's
//! tail, its head + tail, BM25 top-k by the task; [`baseline`]). Scored against labels from
//! the session's own future (the files it edits next, the code it is about to change).
//!
//! [`session_cut`]: super::session_cut

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::baseline;
use super::paired::{paired_rows, PairedRow};
use super::real::Half;
use super::session_cut::{Session, SessionClient, SessionCut};
use crate::clients::catalog::HookClient;
use crate::hooks::{self, answer, HookConfig, HookError, ToolServer};
use crate::import::{self, ImportError, ImportOptions};
use crate::optimizer::{self, BuildConfig, OptimizerError};
use crate::records::Records;
use crate::tokenizer::Tokenizer;

/// What the interactive benchmark compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    /// The hook's answer after the compaction sequence (Codex CLI, which has no hook: the
    /// import and build the hook would run, at the hook's budget).
    Ctxopt,
    /// The transcript's last tokens.
    Tail,
    /// The transcript's first and last tokens.
    HeadTail,
    /// BM25 retrieval of chunks by the task.
    Bm25,
}

impl Strategy {
    /// All, in report order.
    pub(crate) const ALL: [Strategy; 4] = [
        Strategy::Ctxopt,
        Strategy::Tail,
        Strategy::HeadTail,
        Strategy::Bm25,
    ];

    /// The name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Ctxopt => "ctxopt",
            Strategy::Tail => "tail",
            Strategy::HeadTail => "head+tail",
            Strategy::Bm25 => "BM25",
        }
    }
}

/// Why the benchmark could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InteractiveError {
    /// A file or folder could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The hook failed on a cut.
    #[error("{session}: hook: {source}")]
    Hook {
        /// The session file.
        session: String,
        /// The cause.
        source: HookError,
    },
    /// A cut could not be imported for the baselines.
    #[error("{session}: import: {source}")]
    Import {
        /// The session file.
        session: String,
        /// The cause.
        source: ImportError,
    },
    /// A build failed.
    #[error("{session}: build: {source}")]
    Build {
        /// The session file.
        session: String,
        /// The cause.
        source: OptimizerError,
    },
    /// The folder holds no session file.
    #[error("{0}: no Claude Code, Codex CLI or Gemini CLI session file")]
    Empty(PathBuf),
}

/// A session file of the corpus, or why it was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Its path relative to the corpus folder.
    pub name: String,
    /// Its repository.
    pub repository: String,
    /// Its half.
    pub half: Half,
    /// Its client (none when it was left out).
    pub client: Option<SessionClient>,
    /// Its tool calls.
    pub(crate) tool_calls: usize,
    /// Its cuts.
    pub cuts: usize,
    /// Why it was left out, when it was.
    pub(crate) left_out: Option<String>,
}

/// Every session file under `dir` (recursively, `*.jsonl` and `*.json`, in name order): the
/// sessions read, and a line for every file, read or left out.
pub(crate) fn load_corpus(
    dir: &Path,
) -> Result<(Vec<Session>, Vec<SessionInfo>), InteractiveError> {
    let mut paths = Vec::new();
    walk(dir, &mut paths)?;
    paths.sort();
    let mut sessions = Vec::new();
    let mut infos = Vec::new();
    for path in paths {
        let name = path
            .strip_prefix(dir)
            .unwrap_or(&path)
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let text = std::fs::read_to_string(&path).map_err(|source| InteractiveError::Io {
            path: path.clone(),
            source,
        })?;
        match Session::parse(&name, &text) {
            Ok(session) => {
                infos.push(SessionInfo {
                    name,
                    repository: session.repository.clone(),
                    half: session.half,
                    client: Some(session.client),
                    tool_calls: session.calls.len(),
                    cuts: session.cuts().len(),
                    left_out: None,
                });
                sessions.push(session);
            }
            Err(reason) => {
                let repository = super::session_cut::repository_of(&name);
                infos.push(SessionInfo {
                    half: super::session_cut::repository_half(&repository),
                    name,
                    repository,
                    client: None,
                    tool_calls: 0,
                    cuts: 0,
                    left_out: Some(reason.to_string()),
                });
            }
        }
    }
    if sessions.is_empty() {
        return Err(InteractiveError::Empty(dir.to_path_buf()));
    }
    Ok((sessions, infos))
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InteractiveError> {
    let io = |source| InteractiveError::Io {
        path: dir.to_path_buf(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            walk(&path, out)?;
        } else if path
            .extension()
            .is_some_and(|e| e == "jsonl" || e == "json")
        {
            out.push(path);
        }
    }
    Ok(())
}

/// A folder under the system's temporary folder, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    /// A fresh folder with a fixed redaction key beside the store: the store replaces a
    /// secret by a placeholder holding a keyed hash, and a new random key per run would make
    /// the answers (their tokens, so which fragments fit) differ from one run to the next.
    fn new() -> std::io::Result<Scratch> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("ctxopt-bench-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let scratch = Scratch(dir);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(crate::redact::key::KEY_FILE_MODE)
            .open(scratch.0.join(crate::redact::key::KEY_FILE_NAME))?
            .write_all(format!("{}\n", "00".repeat(crate::redact::key::KEY_LEN)).as_bytes())?;
        Ok(scratch)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The hook's answer at a cut and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// The text injected (the `additionalContext`; empty when the hook printed nothing).
    pub context: String,
    /// Milliseconds of the answering run (`SessionStart`; for Codex CLI, import + build).
    pub(crate) millis: f64,
    /// Milliseconds of the run before it (`PreCompact`/`PreCompress`; 0 for Codex CLI).
    pub(crate) before_millis: f64,
    /// What the run before it printed: Claude Code's `PreCompact` instructions for the
    /// client's summarizer (empty when it printed nothing).
    pub(crate) instructions: String,
}

/// Replays a compaction at `cut` through the hook's code path ([`hooks::run`], as `ctxopt
/// hook claude-code|gemini-cli` calls it): the transcript up to the cut written to a scratch
/// folder, then `PreCompact` (Gemini CLI: `PreCompress`) and `SessionStart` with `source:
/// compact`, on a store of their own. That is the client's order: Claude Code runs the
/// `SessionStart` hooks of a compaction before it writes the boundary and the summary to the
/// transcript (`docs/benchmarks.md`, "What the restore sees of the summary"). Codex CLI has no
/// hook: the cut is imported and built at the hook's budget, as the hook would.
pub(crate) fn replay_compaction(
    session: &Session,
    cut: &SessionCut,
    budget: usize,
    tokenizer: Tokenizer,
) -> Result<Replay, InteractiveError> {
    replay(session, cut, None, budget, tokenizer)
}

/// [`replay_compaction`], with `written` (the boundary and summary lines) appended to the
/// transcript between `PreCompact` and `SessionStart` when given: what the restore would do
/// were the summary written before it.
fn replay(
    session: &Session,
    cut: &SessionCut,
    written: Option<&str>,
    budget: usize,
    tokenizer: Tokenizer,
) -> Result<Replay, InteractiveError> {
    let name = session.name.clone();
    let (client, before_event, file) = match session.client {
        SessionClient::ClaudeCode => (HookClient::ClaudeCode, "PreCompact", "transcript.jsonl"),
        SessionClient::GeminiCli => (HookClient::GeminiCli, "PreCompress", "session.json"),
        SessionClient::Codex => return build_without_hook(session, cut, None, budget, tokenizer),
    };
    let scratch = Scratch::new().map_err(|source| InteractiveError::Io {
        path: std::env::temp_dir(),
        source,
    })?;
    let transcript = scratch.0.join(file);
    std::fs::write(&transcript, &cut.text).map_err(|source| InteractiveError::Io {
        path: transcript.clone(),
        source,
    })?;
    let config = HookConfig {
        budget,
        restore_budget: budget,
        tool_server: ToolServer::Known(Some("ctxopt".into())),
        store: Some(scratch.0.join("store.sqlite3").display().to_string()),
        state_dir: scratch.0.clone(),
        summary_instructions: true,
    };
    let payload = |event: &str, source: Option<&str>| {
        let mut p = serde_json::json!({
            "hook_event_name": event,
            "session_id": session.session_id,
            "transcript_path": transcript.display().to_string(),
            "cwd": scratch.0.display().to_string(),
        });
        match source {
            Some(s) => p["source"] = s.into(),
            None => p["trigger"] = "auto".into(),
        }
        p.to_string()
    };
    let hook = |bytes: String| {
        let started = Instant::now();
        let run = hooks::run(client, bytes.as_bytes(), &config).map_err(|source| {
            InteractiveError::Hook {
                session: name.clone(),
                source,
            }
        })?;
        Ok::<_, InteractiveError>((run, started.elapsed().as_secs_f64() * 1000.0))
    };
    let (before, before_millis) = hook(payload(before_event, None))?;
    if let Some(written) = written {
        let mut text = cut.text.clone();
        text.push_str(written);
        std::fs::write(&transcript, text).map_err(|source| InteractiveError::Io {
            path: transcript.clone(),
            source,
        })?;
    }
    let (run, millis) = hook(payload("SessionStart", Some("compact")))?;
    let context = run
        .stdout
        .and_then(|out| serde_json::from_str::<serde_json::Value>(&out).ok())
        .and_then(|v| {
            v.pointer("/hookSpecificOutput/additionalContext")
                .and_then(|c| c.as_str())
                .map(str::to_string)
        })
        .unwrap_or_default();
    Ok(Replay {
        context,
        millis,
        before_millis,
        instructions: before.stdout.unwrap_or_default(),
    })
}

/// A client with no hook (Codex CLI): the import and build a hook's restore would run, at its
/// budget, in the hook's wrapper; `in_window`, what the model already has (the client's
/// summary), as the restore's [`BuildConfig::in_window`].
fn build_without_hook(
    session: &Session,
    cut: &SessionCut,
    in_window: Option<&str>,
    budget: usize,
    tokenizer: Tokenizer,
) -> Result<Replay, InteractiveError> {
    let started = Instant::now();
    let records = import_cut(session, cut)?;
    let more = answer::more_line(Some("ctxopt"));
    let config = BuildConfig {
        budget,
        tokenizer,
        files_in_play: true,
        in_window: in_window.map(str::to_string),
        max_chars: Some(answer::room("SessionStart", &more)),
        ..BuildConfig::default()
    };
    let built = optimizer::build(&records, &config).map_err(|source| InteractiveError::Build {
        session: session.name.clone(),
        source,
    })?;
    let context = answer::wrap("SessionStart", built.sources.len(), &built.context, &more);
    Ok(Replay {
        context,
        millis: started.elapsed().as_secs_f64() * 1000.0,
        before_millis: 0.0,
        instructions: String::new(),
    })
}

/// The records of the transcript up to `cut`, as `ctxopt import` reads them.
fn import_cut(session: &Session, cut: &SessionCut) -> Result<Records, InteractiveError> {
    import::import_text(
        session.client.format(),
        &cut.text,
        &ImportOptions::default(),
    )
    .map(|(records, _)| records)
    .map_err(|source| InteractiveError::Import {
        session: session.name.clone(),
        source,
    })
}

/// What one strategy's context kept of one cut's labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutScore {
    /// The labelled files it names.
    pub(crate) files_kept: usize,
    /// Whether it holds a line of the code label (none when the cut has no code label).
    pub(crate) code_kept: Option<bool>,
    /// How many of the code label's lines it holds.
    #[serde(default)]
    pub(crate) code_lines_kept: usize,
    /// Whether it holds a distinctive line of the code label (none when the label has no
    /// such line: [`SessionCut::distinctive_code`]).
    #[serde(default)]
    pub(crate) distinctive_kept: Option<bool>,
    /// Its tokens.
    pub tokens: usize,
    /// Milliseconds to make it.
    pub(crate) millis: f64,
}

/// Whether `text` names `file`: as the label writes it, or with `/` for each `\` (a path of
/// a session recorded on Windows, which a context may write either way).
fn names(text: &str, file: &str) -> bool {
    text.contains(file) || (file.contains('\\') && text.contains(&file.replace('\\', "/")))
}

/// Scores `context` against the labels of `cut`.
pub fn score(cut: &SessionCut, context: &str, tokenizer: Tokenizer, millis: f64) -> CutScore {
    let code_lines_kept = cut
        .code
        .iter()
        .filter(|l| context.contains(l.as_str()))
        .count();
    CutScore {
        files_kept: cut.files.iter().filter(|f| names(context, f)).count(),
        code_kept: (!cut.code.is_empty()).then_some(code_lines_kept > 0),
        code_lines_kept,
        distinctive_kept: {
            let lines = cut.distinctive_code();
            (!lines.is_empty()).then(|| lines.iter().any(|l| context.contains(l)))
        },
        tokens: tokenizer.count(context),
        millis,
    }
}

/// One cut, every strategy's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CutResult {
    /// The session file.
    pub session: String,
    /// Its client.
    pub client: SessionClient,
    /// Its half.
    pub half: Half,
    /// The share of tool calls before the cut.
    pub share: f64,
    /// The labelled files.
    pub files: usize,
    /// The lines of the cut's code label (0: it has none).
    #[serde(default)]
    pub(crate) code_lines: usize,
    /// Per strategy, in [`Strategy::ALL`] order.
    pub(crate) scores: Vec<(Strategy, CutScore)>,
    /// Milliseconds of the `PreCompact`/`PreCompress` run before the answer.
    pub(crate) before_millis: f64,
}

impl CutResult {
    /// The score of `strategy` at this cut, if it ran.
    pub(crate) fn score(&self, strategy: Strategy) -> Option<&CutScore> {
        self.scores
            .iter()
            .find(|(s, _)| *s == strategy)
            .map(|(_, score)| score)
    }
}

/// Runs every cut of `sessions`: the hook at `budget`, the baselines at the size of its
/// answer. With `dump`, each cut's labels and every strategy's context are written there
/// ([`dump_cut`]).
pub(crate) fn run_cuts(
    sessions: &[Session],
    budget: usize,
    tokenizer: Tokenizer,
    dump: Option<&Path>,
) -> Result<Vec<CutResult>, InteractiveError> {
    let mut out = Vec::new();
    for session in sessions {
        for cut in session.cuts() {
            let replay = replay_compaction(session, &cut, budget, tokenizer)?;
            let size = tokenizer.count(&replay.context);
            let records = import_cut(session, &cut)?;
            let mut scores = vec![(
                Strategy::Ctxopt,
                score(&cut, &replay.context, tokenizer, replay.millis),
            )];
            let mut contexts = vec![(Strategy::Ctxopt, replay.context.clone())];
            for strategy in &Strategy::ALL[1..] {
                let started = Instant::now();
                let context = match strategy {
                    Strategy::Tail => baseline::tail(&records, size, tokenizer),
                    Strategy::HeadTail => baseline::head_tail(&records, size, tokenizer),
                    _ => baseline::bm25(&records, size, tokenizer),
                };
                let millis = started.elapsed().as_secs_f64() * 1000.0;
                scores.push((*strategy, score(&cut, &context, tokenizer, millis)));
                contexts.push((*strategy, context));
            }
            if let Some(dir) = dump {
                dump_cut(dir, session, &cut, &contexts)?;
            }
            out.push(CutResult {
                session: session.name.clone(),
                client: session.client,
                half: session.half,
                share: cut.share,
                files: cut.files.len(),
                code_lines: cut.code.len(),
                scores,
                before_millis: replay.before_millis,
            });
        }
    }
    Ok(out)
}

/// Writes one cut to `dir` as Markdown, `<session file, / as __>@<share>.md`: the labels
/// (files, code lines) and every strategy's context, each marked with the labels it holds,
/// so a reader sees what each strategy kept and lost; and the session up to the cut beside it
/// (`…@<share>.cut`, the transcript's text as the hook read it), to run the hook or
/// `ctxopt import` on.
fn dump_cut(
    dir: &Path,
    session: &Session,
    cut: &SessionCut,
    contexts: &[(Strategy, String)],
) -> Result<(), InteractiveError> {
    use std::fmt::Write as _;
    let mut text = format!(
        "# {} at {:.0} % ({} tool calls)\n\n## Labels\n\n",
        session.name,
        cut.share * 100.0,
        cut.calls
    );
    for file in &cut.files {
        let _ = writeln!(text, "- file `{file}`");
    }
    for line in &cut.code {
        let _ = writeln!(text, "- code `{}`", line.trim());
    }
    for (strategy, context) in contexts {
        let files = cut.files.iter().filter(|f| names(context, f)).count();
        let code = cut.code.iter().any(|l| context.contains(l.as_str()));
        let _ = write!(
            text,
            "\n## {} (files {files}/{}, code {})\n\n~~~~text\n{context}\n~~~~\n",
            strategy.name(),
            cut.files.len(),
            if cut.code.is_empty() {
                "-"
            } else if code {
                "yes"
            } else {
                "no"
            },
        );
    }
    let stem = format!(
        "{}@{:.0}",
        session.name.replace('/', "__"),
        cut.share * 100.0
    );
    let write = |path: PathBuf, bytes: &str| {
        std::fs::write(&path, bytes).map_err(|source| InteractiveError::Io { path, source })
    };
    write(dir.join(format!("{stem}.cut")), &cut.text)?;
    write(dir.join(format!("{stem}.md")), &text)
}

/// One compaction the client made (a Claude Code transcript's `compact_boundary`, a Codex CLI
/// rollout's `compacted` item): what the client's own summary named of the files edited next,
/// and what the summary and ctxopt's restore (the hook's, replayed on the transcript up to the
/// boundary; Codex CLI: imported and built up to it) named together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompactionResult {
    /// The session file.
    pub session: String,
    /// Its client (reports from before it was recorded hold only Claude Code's).
    #[serde(default = "claude_code")]
    pub client: SessionClient,
    /// Its half.
    pub half: Half,
    /// The boundary's line.
    pub line: usize,
    /// The labelled files (edited within the next 30 tool calls after the summary, seen
    /// before the boundary).
    pub files: usize,
    /// Whether it has a code label.
    pub(crate) has_code: bool,
    /// The client's summary alone.
    pub(crate) summary: CutScore,
    /// The summary and ctxopt's answer (Claude Code: the hook's, which has not read the
    /// summary; Codex CLI: built with the summary as what the model has).
    pub(crate) summary_ctxopt: CutScore,
    /// Labelled files ctxopt's answer named and the summary did not.
    pub(crate) only_ctxopt: usize,
    /// The summary and the hook's answer had the client written the summary before the
    /// hook ran (not Claude Code's order; what reading it would give). None for Codex CLI,
    /// whose answer above already knew the summary.
    #[serde(default)]
    pub(crate) summary_read: Option<CutScore>,
    /// Labelled files that answer named and the summary did not.
    #[serde(default)]
    pub(crate) only_read: usize,
    /// The instructions the hook's `PreCompact` printed for the client's summarizer, alone
    /// (the recorded summary was made without them). None for Codex CLI (no hook).
    #[serde(default)]
    pub(crate) instructions: Option<CutScore>,
    /// Labelled files those instructions named and the summary did not.
    #[serde(default)]
    pub(crate) only_instructions: usize,
}

/// The client of a compaction in a report written before the client was recorded.
fn claude_code() -> SessionClient {
    SessionClient::ClaudeCode
}

/// Every compaction recorded in `sessions`: the client's summary alone, and with ctxopt's
/// restore at `budget` added. Claude Code: the hook's, replayed in the client's order, and
/// again had the hook read the summary ([`replay`] with the lines the client writes). Codex
/// CLI, which has no hook: the rollout up to the boundary imported and built as the hook's
/// restore would, knowing the summary ([`build_without_hook`]).
pub(crate) fn run_compactions(
    sessions: &[Session],
    budget: usize,
    tokenizer: Tokenizer,
) -> Result<Vec<CompactionResult>, InteractiveError> {
    let mut out = Vec::new();
    for session in sessions {
        for real in session.real_compactions() {
            let cut = &real.cut;
            let (answer, read) = match &real.written {
                Some(written) => (
                    replay_compaction(session, cut, budget, tokenizer)?,
                    Some(self::replay(
                        session,
                        cut,
                        Some(written),
                        budget,
                        tokenizer,
                    )?),
                ),
                None => (
                    build_without_hook(session, cut, Some(&real.summary), budget, tokenizer)?,
                    None,
                ),
            };
            let only = |context: &str| {
                cut.files
                    .iter()
                    .filter(|f| !names(&real.summary, f) && names(context, f))
                    .count()
            };
            let with_summary = |r: &Replay| {
                let both = format!("{}\n\n{}", real.summary, r.context);
                score(cut, &both, tokenizer, r.millis)
            };
            out.push(CompactionResult {
                session: session.name.clone(),
                client: session.client,
                half: session.half,
                line: real.line,
                files: cut.files.len(),
                has_code: !cut.code.is_empty(),
                summary: score(cut, &real.summary, tokenizer, 0.0),
                summary_ctxopt: with_summary(&answer),
                only_ctxopt: only(&answer.context),
                summary_read: read.as_ref().map(with_summary),
                only_read: read.as_ref().map_or(0, |r| only(&r.context)),
                instructions: read
                    .is_some()
                    .then(|| score(cut, &answer.instructions, tokenizer, answer.before_millis)),
                only_instructions: only(&answer.instructions),
            });
        }
    }
    Ok(out)
}

/// The figures of one strategy over the cuts of one half (and one client, or all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractiveRow {
    /// The half.
    pub half: Half,
    /// The client; none: all clients.
    pub client: Option<SessionClient>,
    /// The strategy.
    pub strategy: Strategy,
    /// Cuts.
    pub cuts: usize,
    /// Cuts with at least one labelled file.
    pub(crate) labelled_cuts: usize,
    /// Of those, the cuts whose labelled files are all named.
    pub(crate) all_files: usize,
    /// Labelled files over all cuts.
    pub files: usize,
    /// Of those, the ones named.
    pub(crate) files_kept: usize,
    /// Cuts with a code label.
    pub(crate) code_cuts: usize,
    /// Of those, the ones whose context holds a line of it.
    pub(crate) code_kept: usize,
    /// The lines of those cuts' code labels.
    #[serde(default)]
    pub(crate) code_lines: usize,
    /// Of those, the ones the context holds.
    #[serde(default)]
    pub(crate) code_lines_kept: usize,
    /// Cuts whose code label has a distinctive line.
    #[serde(default)]
    pub(crate) distinctive_cuts: usize,
    /// Of those, the ones whose context holds one.
    #[serde(default)]
    pub(crate) distinctive_kept: usize,
    /// Mean tokens of the context.
    pub(crate) mean_tokens: f64,
    /// Mean milliseconds to make it.
    pub(crate) mean_millis: f64,
    /// Longest time to make it, in milliseconds.
    pub(crate) max_millis: f64,
}

impl InteractiveRow {
    /// Named labelled files over labelled files (1 when there are none).
    pub fn recall(&self) -> f64 {
        super::real::recall(self.files_kept, self.files)
    }
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InteractiveReport {
    /// The hook's token budget.
    pub(crate) hook_budget: usize,
    /// Every file of the corpus, read or left out.
    pub sessions: Vec<SessionInfo>,
    /// Per half × client (and all clients) × strategy.
    pub rows: Vec<InteractiveRow>,
    /// The cuts of the tuning half, each strategy's score (the held-out half's cuts are
    /// only counted in the rows).
    pub(crate) tuning_cuts: Vec<CutResult>,
    /// Every compaction the transcripts record, both halves.
    #[serde(default)]
    pub compactions: Vec<CompactionResult>,
    /// ctxopt against each baseline cut by cut, per half × client (and all clients).
    #[serde(default)]
    pub paired: Vec<PairedRow>,
}

/// `results` grouped per half × client (`None`: all clients), in the order the reports give
/// them; empty groups left out.
pub(crate) fn groups(results: &[CutResult]) -> Vec<(Half, Option<SessionClient>, Vec<&CutResult>)> {
    let clients = std::iter::once(None).chain(SessionClient::ALL.map(Some));
    Half::ALL
        .into_iter()
        .flat_map(|half| clients.clone().map(move |client| (half, client)))
        .map(|(half, client)| {
            let mine: Vec<&CutResult> = results
                .iter()
                .filter(|r| r.half == half && client.is_none_or(|c| r.client == c))
                .collect();
            (half, client, mine)
        })
        .filter(|(_, _, mine)| !mine.is_empty())
        .collect()
}

/// Sums `results` into rows per half × client (and all clients) × strategy.
pub fn rows(results: &[CutResult]) -> Vec<InteractiveRow> {
    let mut rows = Vec::new();
    for (half, client, mine) in groups(results) {
        for strategy in Strategy::ALL {
            let mut row = InteractiveRow {
                half,
                client,
                strategy,
                cuts: mine.len(),
                labelled_cuts: 0,
                all_files: 0,
                files: 0,
                files_kept: 0,
                code_cuts: 0,
                code_kept: 0,
                code_lines: 0,
                code_lines_kept: 0,
                distinctive_cuts: 0,
                distinctive_kept: 0,
                mean_tokens: 0.0,
                mean_millis: 0.0,
                max_millis: 0.0,
            };
            for r in &mine {
                let Some(s) = r.score(strategy) else {
                    continue;
                };
                if r.files > 0 {
                    row.labelled_cuts += 1;
                    row.files += r.files;
                    row.files_kept += s.files_kept;
                    row.all_files += usize::from(s.files_kept == r.files);
                }
                if let Some(kept) = s.code_kept {
                    row.code_cuts += 1;
                    row.code_kept += usize::from(kept);
                    row.code_lines += r.code_lines;
                    row.code_lines_kept += s.code_lines_kept;
                }
                if let Some(kept) = s.distinctive_kept {
                    row.distinctive_cuts += 1;
                    row.distinctive_kept += usize::from(kept);
                }
                row.mean_tokens += s.tokens as f64;
                row.mean_millis += s.millis;
                row.max_millis = row.max_millis.max(s.millis);
            }
            row.mean_tokens /= mine.len() as f64;
            row.mean_millis /= mine.len() as f64;
            rows.push(row);
        }
    }
    rows
}

/// Runs the benchmark on every session under `dir`, the restore at `budget` tokens; with
/// `dump`, every cut's labels and contexts are written to that folder.
pub fn run(
    dir: &Path,
    budget: usize,
    tokenizer: Tokenizer,
    dump: Option<&Path>,
) -> Result<InteractiveReport, InteractiveError> {
    let (sessions, infos) = load_corpus(dir)?;
    if let Some(dump) = dump {
        std::fs::create_dir_all(dump).map_err(|source| InteractiveError::Io {
            path: dump.to_path_buf(),
            source,
        })?;
    }
    let results = run_cuts(&sessions, budget, tokenizer, dump)?;
    let compactions = run_compactions(&sessions, budget, tokenizer)?;
    Ok(InteractiveReport {
        compactions,
        paired: paired_rows(&results),
        hook_budget: budget,
        sessions: infos,
        rows: rows(&results),
        tuning_cuts: results
            .into_iter()
            .filter(|r| r.half == Half::Tuning)
            .collect(),
    })
}

impl InteractiveReport {
    /// The corpus in one paragraph: sessions read and cut per half and client, files left
    /// out and why.
    pub fn corpus_line(&self) -> String {
        let mut parts = Vec::new();
        for half in Half::ALL {
            for client in SessionClient::ALL {
                let mine: Vec<&SessionInfo> = self
                    .sessions
                    .iter()
                    .filter(|s| s.half == half && s.client == Some(client))
                    .collect();
                if mine.is_empty() {
                    continue;
                }
                let mut repos: Vec<&str> = mine.iter().map(|s| s.repository.as_str()).collect();
                repos.sort_unstable();
                repos.dedup();
                let cut = mine.iter().filter(|s| s.cuts > 0).count();
                parts.push(format!(
                    "{} {}: {} sessions from {} repositories ({cut} with a cut, {} cuts)",
                    half.name(),
                    client.name(),
                    mine.len(),
                    repos.len(),
                    mine.iter().map(|s| s.cuts).sum::<usize>()
                ));
            }
        }
        let mut left: Vec<&str> = self
            .sessions
            .iter()
            .filter_map(|s| s.left_out.as_deref())
            .collect();
        left.sort_unstable();
        let mut reasons: Vec<String> = Vec::new();
        for reason in &left {
            if !reasons.iter().any(|r| r.ends_with(reason)) {
                let n = left.iter().filter(|r| *r == reason).count();
                reasons.push(format!("{n} × {reason}"));
            }
        }
        let mut out = parts.join("; ");
        if !reasons.is_empty() {
            out.push_str(&format!(". Files left out: {}", reasons.join("; ")));
        }
        out.push('.');
        out
    }

    /// The rows as a Markdown table.
    pub fn markdown_table(&self) -> String {
        let mut out = String::from(
            "| half | client | strategy | cuts (labelled) | all files named | per-file recall \
             | cuts with the code | code lines kept | cuts with a distinctive line | mean tokens \
             | mean / max ms |\n\
             | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
        );
        for r in &self.rows {
            let (all, recall) = if r.labelled_cuts == 0 {
                ("–".to_string(), "–".to_string())
            } else {
                (
                    format!("{}/{}", r.all_files, r.labelled_cuts),
                    format!("{:.1} % ({}/{})", r.recall() * 100.0, r.files_kept, r.files),
                )
            };
            let (code, lines) = if r.code_cuts == 0 {
                ("–".to_string(), "–".to_string())
            } else {
                (
                    format!("{}/{}", r.code_kept, r.code_cuts),
                    format!(
                        "{:.1} % ({}/{})",
                        super::real::recall(r.code_lines_kept, r.code_lines) * 100.0,
                        r.code_lines_kept,
                        r.code_lines
                    ),
                )
            };
            let distinctive = if r.distinctive_cuts == 0 {
                "–".to_string()
            } else {
                format!("{}/{}", r.distinctive_kept, r.distinctive_cuts)
            };
            out.push_str(&format!(
                "| {} | {} | {} | {} ({}) | {all} | {recall} | {code} | {lines} | {distinctive} | {:.0} | {:.1} / {:.1} |\n",
                r.half.name(),
                r.client.map_or("all", SessionClient::name),
                r.strategy.name(),
                r.cuts,
                r.labelled_cuts,
                r.mean_tokens,
                r.mean_millis,
                r.max_millis,
            ));
        }
        out
    }
}

impl InteractiveReport {
    /// The real compactions per half and client as a Markdown table: the client's summary
    /// alone, with ctxopt's restore added (Claude Code: the hook's, replayed in the client's
    /// order, and again had it read the summary; Codex CLI: built knowing the summary).
    pub fn compactions_table(&self) -> String {
        let mut out = String::from(
            "| half | client | compactions (labelled) | what | all files named | per-file recall \
             | with the code | mean tokens |\n\
             | --- | --- | ---: | --- | ---: | ---: | ---: | ---: |\n",
        );
        for half in Half::ALL {
            for client in SessionClient::ALL {
                let mine: Vec<&CompactionResult> = self
                    .compactions
                    .iter()
                    .filter(|c| c.half == half && c.client == client)
                    .collect();
                if !mine.is_empty() {
                    compaction_rows(&mut out, half, client, &mine);
                }
            }
        }
        out
    }
}

/// The rows of the compactions of one half and one client.
fn compaction_rows(
    out: &mut String,
    half: Half,
    client: SessionClient,
    mine: &[&CompactionResult],
) {
    let labelled = mine.iter().filter(|c| c.files > 0).count();
    let files: usize = mine.iter().map(|c| c.files).sum();
    let code = mine.iter().filter(|c| c.has_code).count();
    let lead = format!("| {} | {} |", half.name(), client.name());
    let mut row = |what: &str, scores: Vec<(usize, &CutScore)>| {
        let all = scores
            .iter()
            .filter(|(n, s)| *n > 0 && s.files_kept == *n)
            .count();
        let kept: usize = scores.iter().map(|(_, s)| s.files_kept).sum();
        let with_code = scores
            .iter()
            .filter(|(_, s)| s.code_kept == Some(true))
            .count();
        let tokens =
            scores.iter().map(|(_, s)| s.tokens).sum::<usize>() as f64 / scores.len() as f64;
        // Nothing to name (no labelled compaction, no code label): a dash, as in the cuts' table.
        let (all, recall) = if labelled == 0 {
            ("–".to_string(), "–".to_string())
        } else {
            (
                format!("{all}/{labelled}"),
                format!(
                    "{:.1} % ({kept}/{files})",
                    super::real::recall(kept, files) * 100.0
                ),
            )
        };
        let with_code = if code == 0 {
            "–".to_string()
        } else {
            format!("{with_code}/{code}")
        };
        out.push_str(&format!(
            "{lead} {} ({labelled}) | {what} | {all} | {recall} | {with_code} | {tokens:.0} |\n",
            mine.len(),
        ));
    };
    row(
        "summary",
        mine.iter().map(|c| (c.files, &c.summary)).collect(),
    );
    let read: Option<Vec<(usize, &CutScore)>> = mine
        .iter()
        .map(|c| c.summary_read.as_ref().map(|s| (c.files, s)))
        .collect();
    let replayed = read.is_some();
    row(
        if replayed {
            "summary + ctxopt"
        } else {
            "summary + ctxopt, built knowing the summary"
        },
        mine.iter().map(|c| (c.files, &c.summary_ctxopt)).collect(),
    );
    if let Some(read) = read {
        row("summary + ctxopt, had the hook read the summary", read);
    }
    let instructions: Option<Vec<(usize, &CutScore)>> = mine
        .iter()
        .map(|c| c.instructions.as_ref().map(|s| (c.files, s)))
        .collect();
    if let Some(instructions) = instructions {
        row(
            "ctxopt's instructions to the summarizer, alone",
            instructions,
        );
    }
    let only: usize = mine.iter().map(|c| c.only_ctxopt).sum();
    out.push_str(&format!(
        "{lead} | files only ctxopt's answer named | {only} | | | |\n"
    ));
    if replayed {
        let only: usize = mine.iter().map(|c| c.only_read).sum();
        out.push_str(&format!(
            "{lead} | files only the answer that read the summary named | {only} | | | |\n"
        ));
        let only: usize = mine.iter().map(|c| c.only_instructions).sum();
        out.push_str(&format!(
            "{lead} | files the summary lacks that the instructions asked it to keep | {only} | | | |\n"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::session_cut::{
        tests::{claude_fixture, codex_excerpt},
        NotASession,
    };
    use crate::hooks::DEFAULT_RESTORE_BUDGET;

    #[test]
    fn a_windows_path_is_named_with_either_separator() {
        assert!(names(
            "see src/template/func_map.go",
            r"src\template\func_map.go"
        ));
        assert!(names(
            r"see src\template\func_map.go",
            r"src\template\func_map.go"
        ));
        // The canary: another file is not named.
        assert!(!names(
            "see src/template/func.go",
            r"src\template\func_map.go"
        ));
    }

    fn fixture_session() -> Session {
        Session::parse("o__r__s.jsonl", &claude_fixture()).unwrap()
    }

    #[test]
    fn the_hook_replay_answers_after_a_compaction_with_the_file_and_its_code() {
        let session = fixture_session();
        let cut = &session.cuts()[0];
        let replay =
            replay_compaction(&session, cut, DEFAULT_RESTORE_BUDGET, Tokenizer::default()).unwrap();
        assert!(replay.context.starts_with(crate::import::INJECTED_MARKER));
        let s = score(cut, &replay.context, Tokenizer::default(), replay.millis);
        // Canaries: the labels can be found, by the hook's answer and by the tail.
        assert!(s.files_kept >= 1, "{}", replay.context);
        assert_eq!(s.code_kept, Some(true), "{}", replay.context);
        assert!(s.code_lines_kept >= 1 && s.code_lines_kept <= cut.code.len());
        // Counted line by line: a context of the label's first line holds that one.
        let first = score(cut, &cut.code[0], Tokenizer::default(), 0.0);
        assert_eq!(
            first.code_lines_kept,
            cut.code
                .iter()
                .filter(|l| cut.code[0].contains(l.as_str()))
                .count()
        );
        assert!(s.tokens > 0);
        let records = import_cut(&session, cut).unwrap();
        let tail = baseline::tail(&records, 10_000, Tokenizer::default());
        let t = score(cut, &tail, Tokenizer::default(), 0.0);
        assert_eq!((t.files_kept, t.code_kept), (1, Some(true)), "{tail}");
    }

    #[test]
    fn a_replay_that_redacts_a_secret_answers_the_same_bytes_every_time() {
        // A real session whose reads show secret-shaped strings (a redaction script's
        // patterns): the store redacts them with a keyed hash, so a key drawn anew per replay
        // would change the placeholders and with them the answer.
        let name = "M-Thisness__M-Claude__abc757d1-3da3-42fb-bb7b-ffa293a4ba29.jsonl";
        let text = crate::import::real_data_tests::corpus_file("claude-code", name);
        let session = Session::parse(&format!("claude-code/{name}"), &text).unwrap();
        let answer = |cut: &SessionCut| {
            replay_compaction(&session, cut, DEFAULT_RESTORE_BUDGET, Tokenizer::default())
                .unwrap()
                .context
        };
        // The first cut whose answer shows a placeholder.
        let cuts = session.cuts();
        let (cut, first) = cuts
            .iter()
            .find_map(|cut| {
                Some(answer(cut))
                    .filter(|a| a.contains("[REDACTED:"))
                    .map(|a| (cut, a))
            })
            .expect("an answer that shows a redacted secret");
        assert_eq!(first, answer(cut));
    }

    #[test]
    fn rows_count_every_metric_per_half_and_client() {
        let session = fixture_session();
        let results = run_cuts(
            &[session],
            DEFAULT_RESTORE_BUDGET,
            Tokenizer::default(),
            None,
        )
        .unwrap();
        assert_eq!(results.len(), 3);
        let rows = rows(&results);
        // One half (o/r is tuning or held-out), all clients + Claude Code, four strategies.
        assert_eq!(rows.len(), 8);
        let all_tail = rows
            .iter()
            .find(|r| r.client.is_none() && r.strategy == Strategy::Tail)
            .unwrap();
        assert_eq!(
            (all_tail.cuts, all_tail.labelled_cuts, all_tail.files),
            (3, 3, 3)
        );
        assert_eq!(
            (all_tail.all_files, all_tail.code_cuts, all_tail.code_kept),
            (3, 3, 3)
        );
        let ours = rows
            .iter()
            .find(|r| r.client.is_none() && r.strategy == Strategy::Ctxopt)
            .unwrap();
        // Canaries: the hook's answer names files, holds the code, costs tokens and time.
        assert!(
            ours.files_kept > 0 && ours.all_files > 0 && ours.code_kept > 0,
            "{ours:?}"
        );
        assert!(ours.mean_tokens > 0.0 && ours.max_millis > 0.0);
        // The baselines get at most the hook's size (less when the whole transcript is
        // shorter).
        for r in rows.iter().filter(|r| r.strategy != Strategy::Ctxopt) {
            assert!(
                r.mean_tokens > 0.0 && r.mean_tokens <= ours.mean_tokens,
                "{r:?}"
            );
        }
    }

    #[test]
    fn a_corpus_folder_reads_sessions_and_names_what_it_left_out() {
        let dir = std::env::temp_dir().join(format!("ctxopt-corpus-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("proj")).unwrap();
        std::fs::write(dir.join("proj/a.jsonl"), claude_fixture()).unwrap();
        std::fs::write(dir.join("notes.json"), "[1, 2]").unwrap();
        let (sessions, infos) = load_corpus(&dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].repository, "proj");
        assert_eq!(infos.len(), 2);
        assert_eq!(
            infos[0].left_out.as_deref(),
            Some(NotASession::Unknown.to_string().as_str())
        );
        assert_eq!((infos[1].tool_calls, infos[1].cuts), (6, 3));
    }

    #[test]
    fn the_report_renders_rows_and_the_corpus_snapshot() {
        // A kept code label holds 2 of its 4 lines (the tail's all 4).
        let score = |files_kept, code_kept: Option<bool>, tokens| CutScore {
            files_kept,
            code_kept,
            code_lines_kept: match code_kept {
                Some(true) if tokens == 880 => 4,
                Some(true) => 2,
                _ => 0,
            },
            // The tail holds the label's distinctive line; the others only common ones.
            distinctive_kept: code_kept.map(|k| k && tokens == 880),
            tokens,
            millis: 2.0,
        };
        let cut = |session: &str, client, half, files, code: Option<bool>, ours: usize| CutResult {
            session: session.into(),
            client,
            half,
            share: 0.5,
            files,
            code_lines: if code.is_some() { 4 } else { 0 },
            scores: vec![
                (Strategy::Ctxopt, score(ours, code, 900)),
                (Strategy::Tail, score(files, code.map(|_| true), 880)),
                (Strategy::HeadTail, score(0, code.map(|_| false), 880)),
                (Strategy::Bm25, score(1.min(files), code, 700)),
            ],
            before_millis: 1.0,
        };
        let results = [
            cut(
                "a",
                SessionClient::ClaudeCode,
                Half::Tuning,
                2,
                Some(false),
                1,
            ),
            cut("b", SessionClient::Codex, Half::Tuning, 0, None, 0),
            cut(
                "c",
                SessionClient::GeminiCli,
                Half::HeldOut,
                1,
                Some(true),
                1,
            ),
        ];
        let info = |name: &str, client, half, cuts| SessionInfo {
            name: name.into(),
            repository: name.into(),
            half,
            client,
            tool_calls: 9,
            cuts,
            left_out: client.is_none().then(|| NotASession::Unknown.to_string()),
        };
        let report = InteractiveReport {
            paired: Vec::new(),
            hook_budget: DEFAULT_RESTORE_BUDGET,
            sessions: vec![
                info("a", Some(SessionClient::ClaudeCode), Half::Tuning, 1),
                info("b", Some(SessionClient::Codex), Half::Tuning, 1),
                info("c", Some(SessionClient::GeminiCli), Half::HeldOut, 1),
                info("d", None, Half::HeldOut, 0),
            ],
            rows: rows(&results),
            tuning_cuts: Vec::new(),
            compactions: Vec::new(),
        };
        insta::assert_snapshot!(format!(
            "{}\n\n{}",
            report.corpus_line(),
            report.markdown_table()
        ));
    }

    #[test]
    fn a_real_compaction_is_scored_with_the_clients_summary_alone_and_with_the_hooks_answer() {
        let name = "claude-code/marot__spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl";
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/real-world/agent-transcripts")
            .join(name);
        let session = Session::parse(name, &std::fs::read_to_string(path).unwrap()).unwrap();
        let real = session.real_compactions();
        assert_eq!(real.len(), 1);
        assert_eq!(real[0].line, 1256);
        assert!(real[0]
            .summary
            .starts_with("This session is being continued"));
        assert_eq!(real[0].cut.text.lines().count(), 1255);
        assert!(!real[0].cut.files.is_empty(), "{:?}", real[0].cut);
        let results =
            run_compactions(&[session], DEFAULT_RESTORE_BUDGET, Tokenizer::default()).unwrap();
        let r = &results[0];
        assert_eq!((r.line, r.files), (1256, real[0].cut.files.len()));
        // The summary's own score, counted from its text (the canary: it is not the hook's).
        let alone = score(&real[0].cut, &real[0].summary, Tokenizer::default(), 0.0);
        assert_eq!(r.summary, alone);
        assert!(r.summary_ctxopt.tokens > r.summary.tokens);
        assert_eq!(
            r.summary_ctxopt.files_kept,
            r.summary.files_kept + r.only_ctxopt,
            "{r:?}"
        );
        // The lines the client writes after its hooks: the boundary, then the summary.
        let written: Vec<&str> = real[0].written.as_deref().unwrap().lines().collect();
        assert!(
            written[0].contains("\"compact_boundary\""),
            "{}",
            written[0]
        );
        assert!(written
            .last()
            .unwrap()
            .contains("\"isCompactSummary\":true"));
        let read = r.summary_read.as_ref().unwrap();
        assert_eq!(read.files_kept, r.summary.files_kept + r.only_read, "{r:?}");
        // What the `PreCompact` before it asked the summarizer to keep, scored alone (the
        // canary: it names files edited next).
        let instructions = r.instructions.as_ref().unwrap();
        assert!(
            instructions.files_kept >= 1 && instructions.tokens > 0,
            "{r:?}"
        );
        assert!(r.only_instructions <= instructions.files_kept);
        let report = InteractiveReport {
            paired: Vec::new(),
            hook_budget: DEFAULT_RESTORE_BUDGET,
            sessions: Vec::new(),
            rows: Vec::new(),
            tuning_cuts: Vec::new(),
            compactions: results,
        };
        let table = report.compactions_table();
        assert!(table.contains("| summary + ctxopt |"), "{table}");
        assert!(
            table.contains("| summary + ctxopt, had the hook read the summary |"),
            "{table}"
        );
    }

    #[test]
    fn a_codex_compaction_is_scored_with_the_summary_alone_and_with_a_build_that_knows_it() {
        let name = "codex-cli/EntityProcess__agentv__excerpt.jsonl";
        let session = Session::parse(name, &codex_excerpt(true)).unwrap();
        let results =
            run_compactions(&[session], DEFAULT_RESTORE_BUDGET, Tokenizer::default()).unwrap();
        assert_eq!(results.len(), 1);
        let r = &results[0];
        assert_eq!(
            (r.client, r.line, r.files, r.has_code),
            (SessionClient::Codex, 4, 1, true)
        );
        // No hook to replay in the client's order: one answer, built knowing the summary.
        assert_eq!((&r.summary_read, r.only_read), (&None, 0));
        // The canary: the kept messages do not name the README; ctxopt's answer does.
        assert_eq!(r.summary.files_kept, 0);
        assert_eq!(
            (r.summary_ctxopt.files_kept, r.only_ctxopt),
            (1, 1),
            "{r:?}"
        );
        assert!(r.summary_ctxopt.tokens > r.summary.tokens);
    }

    #[test]
    fn the_compactions_table_has_a_row_group_per_half_and_client() {
        let score = |files_kept, code_kept: Option<bool>, tokens| CutScore {
            files_kept,
            code_kept,
            code_lines_kept: usize::from(code_kept == Some(true)),
            distinctive_kept: code_kept,
            tokens,
            millis: 2.0,
        };
        let claude = CompactionResult {
            session: "a".into(),
            client: SessionClient::ClaudeCode,
            half: Half::HeldOut,
            line: 10,
            files: 2,
            has_code: true,
            summary: score(1, Some(false), 3000),
            summary_ctxopt: score(2, Some(true), 5500),
            only_ctxopt: 1,
            summary_read: Some(score(1, Some(true), 5400)),
            only_read: 0,
            instructions: Some(score(2, Some(false), 500)),
            only_instructions: 1,
        };
        let codex = CompactionResult {
            session: "b".into(),
            client: SessionClient::Codex,
            half: Half::Tuning,
            line: 4,
            files: 0,
            has_code: false,
            summary: score(0, None, 200),
            summary_ctxopt: score(0, None, 2700),
            only_ctxopt: 0,
            summary_read: None,
            only_read: 0,
            instructions: None,
            only_instructions: 0,
        };
        let report = InteractiveReport {
            paired: Vec::new(),
            hook_budget: DEFAULT_RESTORE_BUDGET,
            sessions: Vec::new(),
            rows: Vec::new(),
            tuning_cuts: Vec::new(),
            compactions: vec![claude, codex],
        };
        insta::assert_snapshot!(report.compactions_table());
    }

    #[test]
    fn claude_code_runs_session_start_compact_before_it_writes_the_boundary_and_the_summary() {
        // In the real transcripts, a compaction's `SessionStart:compact` hook lines come after
        // its boundary and summary, but each is timed before the boundary: the client ran the
        // hooks, then wrote the boundary and the summary. The replay keeps that order.
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/real-world/agent-transcripts/claude-code");
        let time = |v: &serde_json::Value| {
            v.get("timestamp")
                .and_then(|t| t.as_str())
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        };
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        paths.sort();
        let (mut boundaries, mut with_hooks, mut hooks) = (0, 0, 0);
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let values: Vec<serde_json::Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str(l).ok())
                .collect();
            for (b, v) in values.iter().enumerate() {
                if v["subtype"] != "compact_boundary" {
                    continue;
                }
                boundaries += 1;
                let at = time(v).unwrap();
                let mine: Vec<&serde_json::Value> = values[b + 1..]
                    .iter()
                    .take(12)
                    .filter(|v| v["data"]["hookName"] == "SessionStart:compact")
                    .collect();
                with_hooks += usize::from(!mine.is_empty());
                for hook in mine {
                    hooks += 1;
                    assert!(time(hook).unwrap() < at, "{}: {hook}", path.display());
                }
            }
        }
        assert_eq!((boundaries, with_hooks), (45, 17));
        assert!(hooks >= 8 * 3, "{hooks}");
    }
}
