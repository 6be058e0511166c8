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

/// The most bytes of a skipped backlog whose lines are counted (streamed through a small
/// buffer, so that line numbers stay right); a longer one is skipped without reading it,
/// and the lines after it are numbered afresh, under a log name of their own.
pub(crate) const MAX_COUNTED: u64 = 256 * 1024 * 1024;

/// Opens a transcript for reading: only a regular file (a FIFO, a device or a socket would
/// block the hook or never end), opened without blocking.
fn open_transcript(path: &Path) -> Result<(File, u64), HookError> {
    use std::os::unix::fs::OpenOptionsExt;
    let transcript = transcript_error(path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(transcript)?;
    let meta = file.metadata().map_err(transcript)?;
    if !meta.is_file() {
        return Err(HookError::Transcript(format!(
            "{}: not a regular file ({}); not read",
            path.display(),
            file_kind(&meta)
        )));
    }
    Ok((file, meta.len()))
}

/// What kind of file a non-regular file is, in words.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a plain file"
    }
}

/// Counts the line breaks in `file` from `from` to `to`, through a small buffer.
fn count_lines(file: &mut File, from: u64, to: u64) -> std::io::Result<usize> {
    file.seek(SeekFrom::Start(from))?;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut left = to - from;
    let mut lines = 0;
    while left > 0 {
        let want = buffer.len().min(left as usize);
        let n = file.read(&mut buffer[..want])?;
        if n == 0 {
            break;
        }
        lines += memchr::memchr_iter(b'\n', &buffer[..n]).count();
        left -= n as u64;
    }
    Ok(lines)
}

/// Imports what is new in a Claude Code transcript; returns what the import saw. Memory
/// stays within [`MAX_BACKLOG`] and a small buffer, whatever the size of the transcript.
pub(crate) fn import_claude(
    path: &Path,
    state: &mut TranscriptState,
    store: &mut Store,
    scope: &Scope,
) -> Result<ImportSummary, HookError> {
    let transcript = transcript_error(path);
    let (mut file, len) = open_transcript(path)?;
    if len < state.offset {
        // The file was cut or replaced: start again.
        state.restart();
    }
    let mut summary = ImportSummary::default();
    let mut start = state.offset;
    let mut bytes = Vec::with_capacity((len - start).min(MAX_BACKLOG) as usize);
    if len - start > MAX_BACKLOG {
        let skip_to = len - MAX_BACKLOG;
        file.seek(SeekFrom::Start(skip_to)).map_err(transcript)?;
        (&mut file)
            .take(MAX_BACKLOG)
            .read_to_end(&mut bytes)
            .map_err(transcript)?;
        // Skip to the end of the line that straddles `skip_to`.
        let to_eol = memchr::memchr(b'\n', &bytes).map_or(bytes.len(), |i| i + 1);
        bytes.drain(..to_eol);
        if skip_to - start <= MAX_COUNTED {
            let lines = count_lines(&mut file, start, skip_to).map_err(transcript)?
                + usize::from(to_eol > 0);
            state.lines += lines;
            summary
                .skipped
                .insert(format!("lines before the last {MAX_BACKLOG} bytes"), lines);
        } else {
            // Too far to count within the hook's time: the lines after it number afresh.
            state.generation += 1;
            state.lines = 0;
            state.boundary = None;
            summary.skipped.insert(
                format!("uncounted lines before the last {MAX_BACKLOG} bytes (numbered afresh)"),
                1,
            );
        }
        start = skip_to + to_eol as u64;
    } else {
        file.seek(SeekFrom::Start(start)).map_err(transcript)?;
        (&mut file)
            .take(len - start)
            .read_to_end(&mut bytes)
            .map_err(transcript)?;
    }
    let complete = memchr::memrchr(b'\n', &bytes).map_or(0, |i| i + 1);
    let mut out = Vec::new();
    let mut line = state.lines;
    for raw in bytes[..complete].split_inclusive(|b| *b == b'\n') {
        line += 1;
        let text = String::from_utf8_lossy(&raw[..raw.len() - 1]);
        state
            .importer
            .feed_line(line, &text, &mut out, &mut summary);
    }
    if let Some(&boundary) = summary.boundaries.last() {
        state.compacted_at(boundary);
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
    let (mut file, len) = open_transcript(path)?;
    if len > 4 * MAX_BACKLOG {
        return Err(HookError::Transcript(format!(
            "{}: {len} bytes, more than a hook reads",
            path.display()
        )));
    }
    if len == state.size && state.offset == len {
        return Ok(ImportSummary::default());
    }
    let mut text = String::with_capacity(len as usize);
    (&mut file)
        .take(len)
        .read_to_string(&mut text)
        .map_err(transcript)?;
    let (records, summary) = gemini_cli::import_chat(&text)
        .map_err(|e| HookError::Transcript(format!("{}: {e}", path.display())))?;
    state.task.clone_from(&records.task);
    if let Some(m) = records.messages.iter().rfind(|m| m.role == Role::User) {
        state.prompt(m.text.trim());
    }
    // A chat's positions are its messages'; the last one is how far it goes.
    state.lines = records
        .messages
        .iter()
        .filter_map(|m| m.common.id.as_deref().and_then(id_line))
        .max()
        .unwrap_or(state.lines);
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
