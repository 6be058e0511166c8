//! Writing a frame log: a JSON Lines file created 0600 and opened append-only.
//!
//! A log that cannot be opened or written never stops the relay: the writer reports the
//! first failure once on stderr, remembers every failure for the trailer, and counts what
//! it could not write.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::record::LogLine;

/// Mode of a frame log file: it holds raw frames, which can hold secrets.
pub const LOG_FILE_MODE: u32 = 0o600;

/// Mode of the default log directory.
pub const LOG_DIR_MODE: u32 = 0o700;

/// The default log directory: `$XDG_STATE_HOME/ctxopt/logs`, else the platform state
/// directory, else `~/.local/state/ctxopt/logs`.
pub fn default_log_dir() -> Option<PathBuf> {
    let base = dirs::state_dir().or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
    Some(base.join("ctxopt").join("logs"))
}

/// The default log file name: `<UTC start yyyymmddThhmmssZ>-<server name>-<pid>.jsonl`.
pub fn default_log_name(started: SystemTime, server_name: &str, pid: u32) -> String {
    let at = chrono::DateTime::<chrono::Utc>::from(started).format("%Y%m%dT%H%M%SZ");
    format!("{at}-{server_name}-{pid}.jsonl")
}

/// Creates `dir` (and its parents) with mode 0700 when missing.
pub fn create_log_dir(dir: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(LOG_DIR_MODE)
        .create(dir)
}

/// A frame-log file, or the memory of why there is none.
#[derive(Debug)]
pub struct LogWriter {
    path: PathBuf,
    out: Option<BufWriter<File>>,
    written_frames: u64,
    buffered_frames: u64,
    errors: Vec<String>,
}

impl LogWriter {
    /// Opens (creating with mode 0600) `path` for appending. Never fails: a log that cannot
    /// be opened is reported once on stderr and the writer counts instead of writing.
    pub fn open(path: &Path) -> Self {
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
        };
        match opened {
            Ok(file) => writer.out = Some(BufWriter::with_capacity(1 << 16, file)),
            Err(err) => writer.fail("cannot open", &err),
        }
        writer
    }

    /// A writer that writes nothing and records nothing (`--no-log`).
    pub fn disabled() -> Self {
        LogWriter {
            path: PathBuf::new(),
            out: None,
            written_frames: 0,
            buffered_frames: 0,
            errors: Vec::new(),
        }
    }

    /// Whether lines still reach the file.
    pub fn is_open(&self) -> bool {
        self.out.is_some()
    }

    /// Where the log is (empty when disabled).
    pub fn path(&self) -> &Path {
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
    pub fn write(&mut self, line: &LogLine) -> bool {
        let Some(out) = self.out.as_mut() else {
            return false;
        };
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
    pub fn flush(&mut self) {
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
    pub fn written_frames(&self) -> u64 {
        self.written_frames
    }

    /// Every open or write failure so far, one line each.
    pub fn errors(&self) -> &[String] {
        &self.errors
    }
}
