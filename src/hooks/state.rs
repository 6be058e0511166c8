//! What the hooks remember between runs, one small JSON file per transcript in
//! `<state dir>/hooks/` (mode 0600, replaced whole through a temporary file): how far the
//! transcript has been imported (byte offset and line), the Claude Code importer's calls
//! still waiting for results, the latest prompt, the last compaction boundary, the records
//! injected since. Fields a state file lacks (one written
//! by an older version) take their defaults. The file is redacted as the store is (the
//! store's redactor, the same key), since it holds prompts and pending tool inputs.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::HookError;
use crate::import::claude_code::ClaudeImporter;
use crate::redact::Redactor;
use crate::store::Store;

/// The most injected record ids a state remembers (the oldest are forgotten first).
const MAX_INJECTED: usize = 4096;

/// The state of one transcript.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct TranscriptState {
    /// The transcript's path.
    pub(crate) transcript: String,
    /// How many times the transcript was found cut or replaced (its lines then number
    /// afresh, so their records are stored under a log name of their own).
    pub(crate) generation: u32,
    /// Bytes imported (always the end of a complete line).
    pub(crate) offset: u64,
    /// Lines imported.
    pub(crate) lines: usize,
    /// The transcript's size at the last import (a Gemini CLI chat is re-read when it changed).
    pub(crate) size: u64,
    /// The Claude Code importer, with the calls still waiting for their results.
    pub(crate) importer: ClaudeImporter,
    /// The session's first prompt.
    pub(crate) task: Option<String>,
    /// The latest prompt imported.
    pub(crate) last_prompt: Option<String>,
    /// The line (a Gemini CLI chat: the message position) of the last compaction boundary:
    /// the transcript's own (`compact_boundary`), or the first line after what was imported
    /// when a `PreCompact`/`PreCompress` ran. The model's window holds the records from it on;
    /// none: the whole session is in the window.
    pub(crate) boundary: Option<usize>,
    /// The ids of the records injected since the last compaction boundary (the model still
    /// has them in its window).
    pub(crate) injected: Vec<String>,
}

impl TranscriptState {
    /// The log name the transcript's records are stored under: its path, and after it was
    /// cut or replaced `<path>#<generation>` (line numbers start again, so the records of
    /// the new lines must not take the keys of the old ones).
    pub(crate) fn log_name(&self) -> String {
        match self.generation {
            0 => self.transcript.clone(),
            n => format!("{}#{n}", self.transcript),
        }
    }

    /// Starts the import over (the transcript was cut or replaced): everything read from it
    /// is forgotten (what a `PreCompact` saved is in the store).
    pub(crate) fn restart(&mut self) {
        *self = TranscriptState {
            transcript: std::mem::take(&mut self.transcript),
            generation: self.generation + 1,
            ..TranscriptState::default()
        };
    }

    /// Notes a compaction boundary at `line`: what was injected before it is gone from the
    /// model's window. A boundary before the last one known changes nothing.
    pub(crate) fn compacted_at(&mut self, line: usize) {
        if self.boundary.is_none_or(|b| line > b) {
            self.boundary = Some(line);
            self.injected.clear();
        }
    }

    /// Notes records injected into the model's window.
    pub(crate) fn injected_now(&mut self, ids: &[String]) {
        for id in ids {
            if !self.injected.contains(id) {
                self.injected.push(id.clone());
            }
        }
        let n = self.injected.len();
        if n > MAX_INJECTED {
            self.injected.drain(..n - MAX_INJECTED);
        }
    }

    /// Notes the latest prompt.
    pub(crate) fn prompt(&mut self, prompt: &str) {
        self.last_prompt = Some(prompt.to_string());
    }
}

/// The state file of `transcript`.
pub(crate) fn state_path(state_dir: &Path, transcript: &str) -> PathBuf {
    let digest = hex::encode(Sha256::digest(transcript.as_bytes()));
    state_dir
        .join("hooks")
        .join(format!("{}.json", &digest[..24]))
}

/// The saved state of `transcript`, or a fresh one when there is none. A state file that
/// cannot be read is an error (the caller starts afresh and logs why).
pub(crate) fn load(state_dir: &Path, transcript: &str) -> Result<TranscriptState, HookError> {
    let path = state_path(state_dir, transcript);
    let fresh = TranscriptState {
        transcript: transcript.to_string(),
        ..TranscriptState::default()
    };
    match std::fs::read(&path) {
        Ok(bytes) => {
            let state: TranscriptState = serde_json::from_slice(&bytes)
                .map_err(|e| HookError::State(format!("{}: {e}", path.display())))?;
            Ok(if state.transcript == transcript {
                state
            } else {
                fresh
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(fresh),
        Err(e) => Err(HookError::State(format!("{}: {e}", path.display()))),
    }
}

/// Saves `state` when `transcript` (the run had a transcript, whose state it is), redacted
/// as `store` redacts.
pub(crate) fn save_if(
    state_dir: &Path,
    state: &TranscriptState,
    transcript: bool,
    store: &Store,
) -> Result<(), HookError> {
    if transcript {
        save(state_dir, state, store.redactor())?;
    }
    Ok(())
}

/// Saves `state` (mode 0600, directory 0700, replaced whole), redacted with `redactor`.
pub(crate) fn save(
    state_dir: &Path,
    state: &TranscriptState,
    redactor: Option<&Redactor>,
) -> Result<(), HookError> {
    let path = state_path(state_dir, &state.transcript);
    let mut json = serde_json::to_string(state).map_err(|e| HookError::State(e.to_string()))?;
    if let Some(redactor) = redactor {
        redactor.redact_string(&mut json);
    }
    crate::private_file::replace(&path, json.as_bytes())
        .map_err(|e| HookError::State(format!("{}: {e}", path.display())))
}
