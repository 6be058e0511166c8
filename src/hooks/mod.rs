//! Client hooks: `ctxopt hook claude-code` and `ctxopt hook gemini-cli` read the payload a
//! client sends a hook on stdin, import what is new in the session's transcript into the
//! workspace's store, and answer with a budgeted context in the client's own JSON.
//!
//! - [`payload`]: the payload, parsed;
//! - [`state`]: what a hook remembers per transcript (offset, pending calls, prompts, what it
//!   injected);
//! - [`ingest`]: the transcript into the store, from the last offset read;
//! - [`context`]: the build, leaving out what the model has just seen;
//! - [`restore`]: what a restore knows the model has (the client's summary, a resumed
//!   transcript);
//! - [`answer`]: the marker, the closing line and the client JSON;
//! - [`tool_server`]: whether ctxopt serves `build_context` to the client;
//! - [`log`]: the hooks' own log.
//!
//! A hook must never hurt the user's prompt: [`run`] returns an error for anything that
//! goes wrong, and the command then prints nothing, logs the reason and exits 0. What each
//! event does is in `docs/hooks.md`.

pub(crate) mod answer;
pub(crate) mod context;
pub(crate) mod ingest;
pub mod log;
pub(crate) mod payload;
pub(crate) mod restore;
pub(crate) mod state;
pub mod tool_server;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::clients::catalog::HookClient;
use crate::store::injections::Injection;
use crate::store::{Scope, Store, StoreError};
use crate::tokenizer::Tokenizer;
use payload::Event;
pub use tool_server::ToolServer;

/// The default token budget of a prompt-time context (`UserPromptSubmit`, `BeforeAgent`):
/// it comes on every prompt, beside everything the model still has.
pub const DEFAULT_HOOK_BUDGET: usize = 1500;

/// The default token budget of a restore (`SessionStart` after a compaction or on a resumed
/// session): the model has lost everything but a summary. Chosen from the interactive
/// benchmark (`docs/hooks.md`, "The budget and the size"); the answer stays within
/// [`answer::MAX_CONTEXT_CHARS`] all the same.
pub const DEFAULT_RESTORE_BUDGET: usize = 2500;

/// Why a hook run produced no context.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HookError {
    /// The payload is not what a client sends.
    #[error("bad payload: {0}")]
    Payload(String),
    /// The transcript could not be read.
    #[error("transcript: {0}")]
    Transcript(String),
    /// The hook's state could not be read or written.
    #[error("state: {0}")]
    State(String),
    /// The store failed (locked, read-only, corrupt, …).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The optimizer failed.
    #[error("build: {0}")]
    Build(String),
}

/// How a hook runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookConfig {
    /// The token budget of a prompt-time context.
    pub budget: usize,
    /// The token budget of a restore (`SessionStart` with `compact` or `resume`).
    pub restore_budget: usize,
    /// Whether ctxopt serves `build_context` to the model (named in the answer's last line).
    pub tool_server: ToolServer,
    /// The store (`--store`: a path or `:memory:`); none: the default file.
    pub store: Option<String>,
    /// Where the hook keeps its state and log.
    pub state_dir: PathBuf,
    /// Whether a Claude Code `PreCompact` prints instructions for the client's summarizer: keep
    /// the files in play, the plan and the open problems ([`answer::summary_instructions`]).
    pub summary_instructions: bool,
}

/// What a run did: what to print (if anything) and a line for the log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// The client JSON to print on stdout; none: print nothing.
    pub stdout: Option<String>,
    /// What happened, for the log.
    pub note: String,
}

/// Runs a hook of `client` on the payload `input`.
pub fn run(client: HookClient, input: &[u8], config: &HookConfig) -> Result<HookRun, HookError> {
    let payload = payload::parse_payload(input)?;
    let workspace = Path::new(&payload.cwd)
        .canonicalize()
        .map_or_else(|_| payload.cwd.clone(), |p| p.display().to_string());
    let scope = Scope {
        workspace,
        server: client.name().to_string(),
        session: payload.session_id.clone(),
    };
    let mut note = format!("{} {}", client.name(), payload.event.name());
    let mut laps = Laps::start();
    let mut store = Store::open_arg(config.store.as_deref())?;
    laps.lap("store");
    let transcript = payload.transcript_path.clone();
    let mut state = match &transcript {
        Some(t) => state::load(&config.state_dir, t).unwrap_or_else(|e| {
            // A state file that cannot be read must not silence the hook for good.
            note.push_str(&format!("; {e}, started afresh"));
            state::TranscriptState {
                transcript: t.clone(),
                ..state::TranscriptState::default()
            }
        }),
        None => state::TranscriptState::default(),
    };
    // The last compaction boundary this run imported (the client wrote it before the hook).
    let mut fresh_boundary = None;
    if let Some(t) = &transcript {
        let path = Path::new(t);
        let summary = match client {
            HookClient::ClaudeCode => ingest::import_claude(path, &mut state, &mut store, &scope)?,
            HookClient::GeminiCli => ingest::import_gemini(path, &mut state, &mut store, &scope)?,
        };
        fresh_boundary = summary.boundaries.last().copied();
        note.push_str(&format!("; imported {summary}"));
        laps.lap("import");
    }
    let last_prompt = state
        .importer
        .last_prompt
        .clone()
        .or_else(|| state.last_prompt.clone());
    let snapshot = transcript.as_deref().map(context::snapshot_log);
    let mut exclusions = context::Exclusions::default();
    let answers = match (&payload.event, payload.source.as_deref()) {
        (Event::UserPromptSubmit | Event::BeforeAgent, _) => true,
        (Event::SessionStart, Some("compact" | "resume")) => true,
        (Event::PreCompact | Event::PreCompress, _) => false,
        _ => {
            finish(config, &state, transcript.is_some(), store, &mut laps)?;
            note.push_str(&laps.note());
            return Ok(HookRun { stdout: None, note });
        }
    };
    let stored = context::load(&store, &scope)?;
    laps.lap("load");
    let task = match &payload.event {
        Event::UserPromptSubmit | Event::BeforeAgent => {
            // Only what the model no longer has: not this session's records since its last
            // compaction boundary, nor what was injected since.
            exclusions.window = transcript.as_ref().map(|_| context::Window {
                log: state.log_name(),
                from_line: state.boundary.unwrap_or(0),
            });
            exclusions.ids = state.injected.iter().cloned().collect::<BTreeSet<_>>();
            payload.prompt.clone()
        }
        Event::SessionStart => {
            // After a compaction: what the last PreCompact saved, task and records; left
            // out, what the model still has (the client's summary, a resumed transcript).
            exclusions.snapshot.clone_from(&snapshot);
            exclusions.restore = true;
            exclusions.window = transcript.as_ref().and_then(|_| {
                restore::window(
                    payload.source.as_deref(),
                    state.log_name(),
                    state.boundary,
                    fresh_boundary,
                    &stored,
                )
            });
            snapshot
                .as_deref()
                .and_then(|log| context::snapshot_task(&stored, log))
                .or(last_prompt.clone())
                .or(state.task.clone())
        }
        _ => last_prompt.clone().or(state.task.clone()),
    };
    // Claude Code gives a `PreCompact` hook's plain output to its summarizer as instructions.
    let instructs = config.summary_instructions
        && client == HookClient::ClaudeCode
        && payload.event == Event::PreCompact;
    let mut stdout = None;
    if let Some(task) = task {
        let budget = match payload.event {
            Event::SessionStart => config.restore_budget,
            _ => config.budget,
        };
        let more = answers.then(|| {
            let server = config.tool_server.resolve(client, Path::new(&payload.cwd));
            answer::more_line(server.as_deref())
        });
        let shape = context::Shape {
            budget,
            // An answer is printed whole: what does not fit is left out by score.
            max_chars: more
                .as_deref()
                .map(|more| answer::room(payload.event.name(), more)),
            // The files in play: for a restore (the model has lost where it was working), and
            // for the instructions that ask the summary to keep them.
            files_in_play: exclusions.snapshot.is_some() || instructs,
        };
        let built = context::build(stored, &task, &exclusions, shape)?;
        laps.lap("build");
        let mut claim = |text: &str, records: usize, store: &mut Store| {
            let injection = Injection {
                key: event_key(&payload, &state),
                workspace: scope.workspace.clone(),
                client: client.name().to_string(),
                session: payload.session_id.clone(),
                event: payload.event.name().to_string(),
                created: crate::store::results::unix_now(),
                records: records as u64,
                characters: text.chars().count() as u64,
                tokens: Tokenizer::default().count(text) as u64,
            };
            let claimed = store.claim_injection(&injection)?;
            note.push_str(&if claimed {
                format!(
                    "; {} {} records, {} characters, {} tokens",
                    if answers {
                        "injected"
                    } else {
                        "instructed the summary with"
                    },
                    injection.records,
                    injection.characters,
                    injection.tokens
                )
            } else {
                "; answered already (the event fired twice): nothing printed".to_string()
            });
            Ok::<bool, HookError>(claimed)
        };
        match built {
            Some(built) if !answers => {
                if let Some(log) = &snapshot {
                    context::save_snapshot(&mut store, &scope, log, &task, &built)?;
                    laps.lap("snapshot");
                }
                let instructions = instructs
                    .then(|| answer::summary_instructions(&built.context))
                    .flatten();
                if let Some(text) = instructions {
                    if claim(&text, built.cited.len(), &mut store)? {
                        stdout = Some(text);
                    }
                }
                if snapshot.is_some() {
                    note.push_str(&format!("; snapshot of {} records", built.cited.len()));
                }
            }
            Some(built) => {
                let text = answer::wrap(
                    payload.event.name(),
                    built.cited.len(),
                    &built.context,
                    more.as_deref().unwrap_or_default(),
                );
                if claim(&text, built.cited.len(), &mut store)? {
                    stdout = Some(answer::hook_output(payload.event.name(), &text));
                    state.injected_now(&built.cited);
                }
            }
            None => note.push_str("; nothing to inject"),
        }
    }
    if !answers {
        // The compaction about to happen is a boundary: all imported so far is before it.
        state.compacted_at(state.lines + 1);
    }
    finish(config, &state, transcript.is_some(), store, &mut laps)?;
    note.push_str(&laps.note());
    Ok(HookRun { stdout, note })
}

/// Saves the transcript's state (when the run had a transcript) and closes the store, each a
/// lap of its own: closing the last connection checkpoints the write-ahead log into the
/// store file, so what the run wrote is in the file when the hook returns.
fn finish(
    config: &HookConfig,
    state: &state::TranscriptState,
    transcript: bool,
    store: Store,
    laps: &mut Laps,
) -> Result<(), HookError> {
    state::save_if(&config.state_dir, state, transcript, &store)?;
    laps.lap("state");
    drop(store);
    laps.lap("close");
    Ok(())
}

/// What makes one firing of an event: the session, the event and its source, the transcript
/// (its log name) and how far it goes, the prompt. A client that fires the hook twice for
/// one event gives both runs the same key.
fn event_key(payload: &payload::Payload, state: &state::TranscriptState) -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for part in [
        payload.session_id.as_str(),
        payload.event.name(),
        payload.source.as_deref().unwrap_or_default(),
        &state.log_name(),
        &state.lines.to_string(),
        payload.prompt.as_deref().unwrap_or_default(),
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hex::encode(hash.finalize())
}

/// Where a run's time went, for its log line (`; ms: store 2, import 5, load 31, build 84,
/// state 0, close 1`; a `PreCompact` also `snapshot`).
struct Laps {
    at: std::time::Instant,
    laps: Vec<(&'static str, u128)>,
}

impl Laps {
    fn start() -> Laps {
        Laps {
            at: std::time::Instant::now(),
            laps: Vec::new(),
        }
    }

    /// Ends the phase `name`.
    fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.laps.push((name, (now - self.at).as_millis()));
        self.at = now;
    }

    fn note(&self) -> String {
        let laps: Vec<String> = self
            .laps
            .iter()
            .map(|(n, ms)| format!("{n} {ms}"))
            .collect();
        format!("; ms: {}", laps.join(", "))
    }
}

#[cfg(test)]
mod tests;
