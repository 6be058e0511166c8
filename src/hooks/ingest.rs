//! A session's transcript into the workspace's store, incrementally: a Claude Code
//! transcript is read from the byte offset the previous run stopped at, only complete lines,
//! and at most [`MAX_BACKLOG`] bytes of it (a longer backlog is skipped to its last
//! `MAX_BACKLOG` bytes, its lines counted so line numbers stay right); a Gemini CLI chat (one
//! JSON document) is re-read when its size changed. Records are stored with the transcript as
//! their log and the line as their `seq`, so importing a line twice stores it once.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use super::state::TranscriptState;
use super::HookError;
use crate::import::{gemini_cli, ImportSummary};
use crate::records::Role;
use crate::records::SessionRecord;
use crate::store::{NewRecord, Provenance, Scope, Store};

/// The most bytes of transcript one run imports.
pub(crate) const MAX_BACKLOG: u64 = 8 * 1024 * 1024;

/// The line number in an imported record's id (`out-L12-…` → 12).
pub(crate) fn id_line(id: &str) -> Option<usize> {
    let at = id.find("-L")? + 2;
    let digits: String = id[at..].chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Names the transcript in an I/O error.
fn transcript_error(path: &Path) -> impl Fn(std::io::Error) -> HookError + Copy + '_ {
    move |e| HookError::Transcript(format!("{}: {e}", path.display()))
}

/// Stores `records` (each with its line and part, when it has one) under `log`.
fn store_records(
    store: &mut Store,
    scope: &Scope,
    log: &str,
    records: impl IntoIterator<Item = (SessionRecord, Option<u64>, u32)>,
) -> Result<(), HookError> {
    let new: Vec<NewRecord> = records
        .into_iter()
        .map(|(record, seq, part)| NewRecord {
            record,
            provenance: Provenance {
                log_path: Some(log.to_string()),
                seq,
                part,
                ..Provenance::default()
            },
        })
        .collect();
    store.insert(scope, &new)?;
    Ok(())
}

/// Imports what is new in a Claude Code transcript; returns what the import saw.
pub(crate) fn import_claude(
    path: &Path,
    state: &mut TranscriptState,
    store: &mut Store,
    scope: &Scope,
) -> Result<ImportSummary, HookError> {
    let transcript = transcript_error(path);
    let mut file = File::open(path).map_err(transcript)?;
    let len = file.metadata().map_err(transcript)?.len();
    if len < state.offset {
        // The file was cut or replaced: start again.
        state.restart();
    }
    let mut summary = ImportSummary::default();
    let mut start = state.offset;
    if len - start > MAX_BACKLOG {
        let skip_to = len - MAX_BACKLOG;
        file.seek(SeekFrom::Start(start)).map_err(transcript)?;
        let mut skipped = vec![0u8; (skip_to - start) as usize];
        file.read_exact(&mut skipped).map_err(transcript)?;
        // Skip to the end of the line that straddles `skip_to`, counting the lines passed.
        let mut rest = Vec::new();
        file.read_to_end(&mut rest).map_err(transcript)?;
        let to_eol = memchr::memchr(b'\n', &rest).map_or(rest.len(), |i| i + 1);
        let lines = memchr::memchr_iter(b'\n', &skipped).count() + usize::from(to_eol > 0);
        state.lines += lines;
        summary
            .skipped
            .insert(format!("lines before the last {MAX_BACKLOG} bytes"), lines);
        start = skip_to + to_eol as u64;
    }
    file.seek(SeekFrom::Start(start)).map_err(transcript)?;
    let mut bytes = Vec::with_capacity((len - start) as usize);
    file.take(len - start)
        .read_to_end(&mut bytes)
        .map_err(transcript)?;
    let complete = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
    let mut out = Vec::new();
    let mut line = state.lines;
    for raw in bytes[..complete].split_inclusive(|b| *b == b'\n') {
        line += 1;
        let text = String::from_utf8_lossy(&raw[..raw.len() - 1]);
        let before = state.importer.last_prompt.clone();
        state
            .importer
            .feed_line(line, &text, &mut out, &mut summary);
        if state.importer.last_prompt != before {
            if let Some(prompt) = state.importer.last_prompt.clone() {
                state.prompt_at(line, &prompt);
            }
        }
    }
    state.task.clone_from(&state.importer.task);
    state.offset = start + complete as u64;
    state.lines = line;
    state.size = len;
    for r in &out {
        summary.count_record(&r.record);
    }
    let records = out
        .into_iter()
        .map(|r| (r.record, Some(r.line as u64), r.part));
    store_records(store, scope, &state.log_name(), records)?;
    Ok(summary)
}

/// Re-imports a Gemini CLI chat when it changed since the last run.
pub(crate) fn import_gemini(
    path: &Path,
    state: &mut TranscriptState,
    store: &mut Store,
    scope: &Scope,
) -> Result<ImportSummary, HookError> {
    let transcript = transcript_error(path);
    let len = std::fs::metadata(path).map_err(transcript)?.len();
    if len > 4 * MAX_BACKLOG {
        return Err(HookError::Transcript(format!(
            "{}: {len} bytes, more than a hook reads",
            path.display()
        )));
    }
    if len == state.size && state.offset == len {
        return Ok(ImportSummary::default());
    }
    let text = std::fs::read_to_string(path).map_err(transcript)?;
    let (records, summary) = gemini_cli::import_chat(&text)
        .map_err(|e| HookError::Transcript(format!("{}: {e}", path.display())))?;
    state.task.clone_from(&records.task);
    for m in records.messages.iter().filter(|m| m.role == Role::User) {
        if let Some(line) = m.common.id.as_deref().and_then(id_line) {
            state.prompt_at(line, m.text.trim());
        }
    }
    state.offset = len;
    state.size = len;
    // A chat is one document: its records are keyed by content (each message's id is in
    // its records' ids), so re-reading it stores nothing twice.
    let records = SessionRecord::all_of(records)
        .into_iter()
        .map(|record| (record, None, 0));
    store_records(store, scope, &state.log_name(), records)?;
    Ok(summary)
}
