//! MCP clients' config files, edited in place: `ctxopt wrap` / `unwrap` put every stdio
//! server of a client behind `ctxopt-proxy` and take it out again, and `ctxopt hooks`
//! installs and removes ctxopt's hook entries. Every change touches only the bytes it must
//! (comments, trailing commas, CRLF and key order stay), keeps a backup, and is written
//! atomically.
//!
//! # Layout
//! - [`jsonc`]: a JSON/JSONC reader that keeps every value's byte span.
//! - [`edit`]: byte-range edits and the layout an insertion copies.
//! - [`json_edit`]: members and elements added and removed as exact inverses.
//! - [`entries`]: a file's server entries (JSON or TOML), classified.
//! - [`toml_remote`]: Codex's remote entries in `config.toml`, and where each entry's text is.
//! - [`wrap`](mod@wrap): `wrap` / `unwrap` as edits.
//! - [`wrap_record`]: what `wrap` added to each file, for `unwrap`.
//! - [`hook_entries`]: hook entries in Claude Code's and Gemini CLI's settings.
//! - [`catalog`]: the clients, their files per scope and their dialects.
//! - [`config_file`]: reading, backups, compare-and-swap writes.
//! - [`diff`]: the unified diff `--dry-run` prints.

pub mod catalog;
pub mod config_file;
pub(crate) mod diff;
pub(crate) mod edit;
pub mod entries;
pub mod hook_entries;
pub(crate) mod json_edit;
pub(crate) mod jsonc;
pub(crate) mod toml_remote;
pub mod wrap;
pub mod wrap_record;

use std::path::{Path, PathBuf};

use config_file::{ConfigFile, Written};

/// What can go wrong reading or editing a config file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The text is not valid JSON/JSONC or TOML.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// What is wrong.
        message: String,
    },
    /// A syntax error, with the file it is in.
    #[error("{}: {error}; nothing was written", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// The error (part of this one's message, so not a `source` said again).
        error: Box<ConfigError>,
    },
    /// The file is not UTF-8 text.
    #[error("{}: not UTF-8 text; nothing was written", .0.display())]
    NotUtf8(PathBuf),
    /// Reading or writing failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// The file cannot be changed, and why (permissions, a read-only folder or file system,
    /// an owner ctxopt cannot keep, not a regular file).
    #[error("{}: cannot be changed: {cause}; nothing was written", path.display())]
    Refused {
        /// The config file.
        path: PathBuf,
        /// Why.
        cause: String,
    },
    /// The file changed between reading and writing.
    #[error("{}: changed while it was being edited; nothing was written", .0.display())]
    Changed(PathBuf),
}

impl ConfigError {
    fn io(path: &Path, source: std::io::Error) -> ConfigError {
        ConfigError::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    fn refused(path: &Path, cause: String) -> ConfigError {
        ConfigError::Refused {
            path: path.to_path_buf(),
            cause,
        }
    }

    fn in_file(self, path: &Path) -> ConfigError {
        ConfigError::InFile {
            path: path.to_path_buf(),
            error: Box::new(self),
        }
    }
}

/// A change computed for one file.
#[derive(Debug, Clone)]
pub struct Change<T> {
    /// The file as read.
    pub file: ConfigFile,
    /// Its new text (the old one when nothing changes); `None`: the file is removed (only
    /// ever a file ctxopt created, left with nothing of anyone else's).
    pub text: Option<String>,
    /// What the change says about itself (per entry outcomes, …).
    pub detail: T,
    /// The write, when the change was written (not for a dry run or no change).
    pub written: Option<Written>,
}

/// Plans a change for [`change_file`]: given the file as read, the new text (`None`: remove
/// the file) and what it did, or `None` when there is nothing to do here.
pub(crate) type Planner<'a, T> =
    dyn Fn(&ConfigFile) -> Result<Option<(Option<String>, T)>, ConfigError> + 'a;

impl<T> Change<T> {
    /// Whether the text changes.
    pub fn changes(&self) -> bool {
        self.file.text != self.text
    }

    /// The unified diff of the change.
    pub fn diff(&self) -> String {
        diff::unified(
            &self.file.path,
            self.file.text.as_deref().unwrap_or(""),
            self.text.as_deref().unwrap_or(""),
        )
    }
}

/// Computes a change of `path` with `plan`, and writes it unless `dry_run`. When the file
/// changes between reading and writing (a running client rewrote it), it is read and
/// planned again, up to three times.
pub fn change_file<T>(
    path: &Path,
    dry_run: bool,
    plan: &Planner<T>,
) -> Result<Option<Change<T>>, ConfigError> {
    change_file_with(path, dry_run, plan, &mut |_| {})
}

/// [`change_file`], calling `before_rename` in each write's last window (tests).
pub(crate) fn change_file_with<T>(
    path: &Path,
    dry_run: bool,
    plan: &Planner<T>,
    before_rename: &mut config_file::BeforeRename<'_>,
) -> Result<Option<Change<T>>, ConfigError> {
    let mut attempts = 0;
    loop {
        let file = ConfigFile::read(path)?;
        let Some((text, detail)) = plan(&file)? else {
            return Ok(None);
        };
        let mut change = Change {
            file,
            text,
            detail,
            written: None,
        };
        if dry_run || !change.changes() {
            return Ok(Some(change));
        }
        let written = match &change.text {
            Some(text) => change.file.write_with(text, before_rename),
            None => change.file.remove(),
        };
        match written {
            Ok(written) => {
                change.written = Some(written);
                return Ok(Some(change));
            }
            Err(ConfigError::Changed(_)) if attempts < 3 => attempts += 1,
            Err(e) => return Err(e),
        }
    }
}
