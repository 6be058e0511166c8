//! Writing a frame log: a JSON Lines file created 0600 and opened append-only.
//!
//! A log that cannot be opened or written never stops the relay: the writer reports the
//! first failure once on stderr, remembers every failure for the trailer, and counts what
//! it could not write.
//!
//! With a [`Redactor`] (the proxy's default), secrets in a frame's raw copies (`raw`,
//! `raw_b64`, `server_raw`) and in the header's server command line are replaced by
//! placeholders before the line is written, and the frame's `redactions` says how many.
//! Every count in the record was taken before, from the frame as relayed.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use base64::Engine as _;

use super::record::{Frame, Header, LogLine};
use crate::redact::Redactor;

/// Mode of a frame log file: it holds raw frames, which can hold secrets.
pub(crate) const LOG_FILE_MODE: u32 = 0o600;

/// Mode of the default log directory.
pub(crate) const LOG_DIR_MODE: u32 = 0o700;

/// An existing log file others may read (a `--log` file made by someone else, 0644) is
/// narrowed to [`LOG_FILE_MODE`] before anything is written to it; one that cannot be
/// narrowed (another owner's) is refused. Only a regular file is ours to narrow: a
/// device, pipe or socket given as `--log` (`/dev/full`, `/dev/stdout`, a FIFO) is shared
/// with the rest of the system and keeps its mode.
fn narrowed(file: File) -> io::Result<File> {
    use std::os::unix::fs::PermissionsExt;
    let meta = file.metadata()?;
    let mode = meta.permissions().mode() & 0o777;
    if meta.is_file() && mode & !LOG_FILE_MODE != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(LOG_FILE_MODE))
            .map_err(|err| {
                io::Error::new(
                    err.kind(),
                    format!("it has mode {mode:o}, others may read it, and it cannot be narrowed to {LOG_FILE_MODE:o}: {err}"),
                )
            })?;
        tracing::warn!(
            "ctxopt-proxy: the frame log had mode {mode:o}; narrowed to {LOG_FILE_MODE:o}"
        );
    }
    Ok(file)
}

/// The default log directory: `$XDG_STATE_HOME/ctxopt/logs`, else the platform state
/// directory, else `~/.local/state/ctxopt/logs`.
pub fn default_log_dir() -> Option<PathBuf> {
    let base = dirs::state_dir().or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
    Some(base.join("ctxopt").join("logs"))
}

/// The default log file name: `<UTC start yyyymmddThhmmssZ>-<server name>-<pid>.jsonl`.
pub(crate) fn default_log_name(started: SystemTime, server_name: &str, pid: u32) -> String {
    let at = chrono::DateTime::<chrono::Utc>::from(started).format("%Y%m%dT%H%M%SZ");
    format!("{at}-{server_name}-{pid}.jsonl")
}

/// Creates `dir` (and its parents) with mode 0700 when missing.
pub(crate) fn create_log_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(LOG_DIR_MODE)
        .create(dir)
}

/// A frame-log file, or the memory of why there is none.
#[derive(Debug)]
pub(crate) struct LogWriter {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    written_frames: u64,
    buffered_frames: u64,
    errors: Vec<String>,
    redactor: Option<Arc<Redactor>>,
}

impl LogWriter {
    /// Opens (creating with mode 0600) `path` for appending. Never fails: a log that cannot
    /// be opened is reported once on stderr and the writer counts instead of writing.
    pub(crate) fn open(path: &Path) -> Self {
        let opened = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(LOG_FILE_MODE)
            .open(path);
        let mut writer = LogWriter {
            path: path.to_path_buf(),
            out: None,
            written_frames: 0,
            buffered_frames: 0,
            errors: Vec::new(),
            redactor: None,
        };
        match opened.and_then(narrowed) {
            Ok(file) => writer.out = Some(BufWriter::with_capacity(1 << 16, file)),
            Err(err) => writer.fail("cannot open", &err),
        }
        writer
    }

    /// A writer that writes nothing and records nothing (`--no-log`).
    pub(crate) fn disabled() -> Self {
        LogWriter {
            path: PathBuf::new(),
            out: None,
            written_frames: 0,
            buffered_frames: 0,
            errors: Vec::new(),
            redactor: None,
        }
    }

    /// Redacts every line with `redactor` before writing it (`None`: raw copies, as
    /// `--no-redact` asks).
    pub(crate) fn redacting(mut self, redactor: Option<Arc<Redactor>>) -> Self {
        self.redactor = redactor;
        self
    }

    /// Whether lines still reach the file.
    pub(crate) fn is_open(&self) -> bool {
        self.out.is_some()
    }

    /// Where the log is (empty when disabled).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    fn fail(&mut self, what: &str, err: &io::Error) {
        let line = format!("{what} frame log {}: {err}", self.path.display());
        if self.errors.is_empty() {
            tracing::warn!("ctxopt-proxy: {line}; relaying continues without logging");
        }
        self.errors.push(line);
        self.out = None;
        self.buffered_frames = 0;
    }

    /// Writes one line into the buffer (headers and trailers are flushed at once; call
    /// [`LogWriter::flush`] for frames); returns whether it was accepted.
    pub(crate) fn write(&mut self, line: &LogLine) -> bool {
        let Some(out) = self.out.as_mut() else {
            return false;
        };
        let redacted = self.redactor.as_deref().and_then(|r| redact_line(r, line));
        let line = redacted.as_ref().unwrap_or(line);
        let flush = !matches!(line, LogLine::Frame(_));
        let result = serde_json::to_writer(&mut *out, line)
            .map_err(io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| if flush { out.flush() } else { Ok(()) });
        match result {
            Ok(()) => {
                if flush {
                    self.written_frames += self.buffered_frames;
                    self.buffered_frames = 0;
                } else {
                    self.buffered_frames += 1;
                }
                true
            }
            Err(err) => {
                self.fail("cannot write", &err);
                false
            }
        }
    }

    /// Pushes buffered lines to the file.
    pub(crate) fn flush(&mut self) {
        match self.out.as_mut().map(|out| out.flush()) {
            Some(Ok(())) => {
                self.written_frames += self.buffered_frames;
                self.buffered_frames = 0;
            }
            Some(Err(err)) => self.fail("cannot write", &err),
            None => {}
        }
    }

    /// Frame lines that reached the file so far (buffered ones count after a flush).
    pub(crate) fn written_frames(&self) -> u64 {
        self.written_frames
    }

    /// Every open or write failure so far, one line each.
    pub(crate) fn errors(&self) -> &[String] {
        &self.errors
    }
}

/// `line` with its secrets redacted, or `None` when it holds none (the common case: no
/// copy is made).
pub fn redact_line(redactor: &Redactor, line: &LogLine) -> Option<LogLine> {
    match line {
        LogLine::Frame(frame) => redact_frame(redactor, frame).map(|f| LogLine::Frame(Box::new(f))),
        LogLine::Header(header) => redact_header(redactor, header).map(LogLine::Header),
        LogLine::Trailer(_) => None,
    }
}

fn redact_frame(redactor: &Redactor, frame: &Frame) -> Option<Frame> {
    fn redact<'a>(redactor: &Redactor, text: &'a Option<String>) -> Option<(Cow<'a, str>, usize)> {
        let (out, n) = redactor.redact_str(text.as_deref()?);
        (n > 0).then_some((out, n))
    }
    let raw = redact(redactor, &frame.raw);
    let server_raw = redact(redactor, &frame.server_raw);
    let raw_b64 = frame.raw_b64.as_deref().and_then(|b64| {
        let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
        let (redacted, n) = redactor.redact(&bytes);
        (n > 0).then(|| {
            (
                base64::engine::general_purpose::STANDARD.encode(redacted),
                n,
            )
        })
    });
    let count = [&raw, &server_raw]
        .iter()
        .filter_map(|r| r.as_ref())
        .map(|(_, n)| n)
        .sum::<usize>()
        + raw_b64.as_ref().map_or(0, |(_, n)| *n);
    if count == 0 {
        return None;
    }
    let mut out = frame.clone();
    if let Some((text, _)) = raw {
        out.raw = Some(text.into_owned());
    }
    if let Some((text, _)) = server_raw {
        out.server_raw = Some(text.into_owned());
    }
    if let Some((text, _)) = raw_b64 {
        out.raw_b64 = Some(text);
    }
    out.redactions = Some(count as u64);
    Some(out)
}

/// The server's command line and working directory can hold a token
/// (`--token …`, `https://user:pass@…`).
fn redact_header(redactor: &Redactor, header: &Header) -> Option<Header> {
    let mut out = header.clone();
    let mut count = redactor.redact_string(&mut out.cwd);
    for arg in &mut out.server_argv {
        count += redactor.redact_string(arg);
    }
    (count > 0).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn an_existing_log_others_may_read_is_narrowed_to_0600_and_appended_to() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.jsonl");
        std::fs::write(&path, "earlier\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mut writer = LogWriter::open(&path);
        assert!(writer.is_open(), "{:?}", writer.errors());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, LOG_FILE_MODE);
        writer.flush();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "earlier\n");
    }

    #[test]
    fn a_log_that_is_not_a_regular_file_keeps_its_mode() {
        // A FIFO stands for the devices (`/dev/full`, `/dev/null`) a root user may give
        // as `--log`: changing their mode would change them for the whole system.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pipe");
        let c_path = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: `c_path` is a valid NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o644) }, 0);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        // Read and write: opening a FIFO so never blocks on Linux.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        narrowed(file).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644);
    }
}
