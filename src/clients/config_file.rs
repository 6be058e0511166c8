//! Reading and writing a client's config file without losing a byte: a symlink is followed
//! and its target written, the first change keeps a byte-exact backup beside the target
//! (`<name>.ctxopt-backup`), and a write goes to a temporary file in the same folder (the
//! original's mode and owner set on it) that is renamed over the target, after the target
//! was read again to make sure nobody changed it since it was read. A file ctxopt creates
//! gets a marker instead of a backup (`<name>.ctxopt-created`: there was no file before), so
//! that removing ctxopt's entries again can remove the file.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ConfigError;

/// The suffix of a backup's file name.
pub(crate) const BACKUP_SUFFIX: &str = ".ctxopt-backup";

/// The suffix of the marker beside a file that ctxopt created.
pub(crate) const CREATED_SUFFIX: &str = ".ctxopt-created";

/// A config file as read.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The path as named (a symlink stays a symlink).
    pub path: PathBuf,
    /// The file written: `path` with every symlink resolved.
    pub target: PathBuf,
    /// The text read; `None` when the file does not exist.
    pub text: Option<String>,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The backup made before this write, if this was the first change.
    pub backup: Option<PathBuf>,
    /// The file did not exist and was created.
    pub created: bool,
    /// The file (one ctxopt had created) was removed.
    pub removed: bool,
}

impl ConfigFile {
    /// Reads `path`; a missing file reads as `text: None`.
    pub fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let target = resolve(path)?;
        let text = read_text(&target)?;
        Ok(ConfigFile {
            path: path.to_path_buf(),
            target,
            text,
        })
    }

    /// Where the backup of this file is (or would be).
    pub fn backup_path(&self) -> PathBuf {
        backup_path(&self.target)
    }

    /// The backup's text, when there is one.
    pub fn backup(&self) -> Result<Option<String>, ConfigError> {
        read_text(&self.backup_path())
    }

    /// Whether ctxopt created this file (and has not backed it up since: a marker beside it).
    pub fn created_by_ctxopt(&self) -> bool {
        self.text.is_some() && marker_path(&self.target).exists()
    }

    /// Removes the file, which ctxopt created, and its marker. Fails with
    /// [`ConfigError::Changed`] when the file is no longer what was read.
    pub fn remove(&self) -> Result<Written, ConfigError> {
        let now = read_text(&self.target)?;
        if now != self.text {
            return Err(ConfigError::Changed(self.path.clone()));
        }
        fs::remove_file(&self.target).map_err(|e| ConfigError::io(&self.target, e))?;
        remove_marker(&self.target)?;
        Ok(Written {
            backup: None,
            created: false,
            removed: true,
        })
    }

    /// Replaces the file's contents with `text`. Fails with [`ConfigError::Changed`] when the
    /// file is no longer what was read (read it again and redo the change).
    pub fn write(&self, text: &str) -> Result<Written, ConfigError> {
        let now = read_text(&self.target)?;
        if now != self.text {
            return Err(ConfigError::Changed(self.path.clone()));
        }
        let io = |e| ConfigError::io(&self.target, e);
        let folder = self.target.parent().unwrap_or(Path::new("."));
        let meta = match &self.text {
            Some(_) => Some(fs::metadata(&self.target).map_err(io)?),
            None => {
                fs::create_dir_all(folder).map_err(io)?;
                None
            }
        };
        let mode = meta
            .as_ref()
            .map_or(0o644, |m| m.permissions().mode() & 0o7777);
        let mut backup = None;
        if let Some(original) = &self.text {
            let path = self.backup_path();
            if !path.exists() {
                write_new(&path, original, mode)?;
                // From now on the backup says what the file was before ctxopt.
                remove_marker(&self.target)?;
                backup = Some(path);
            }
        }
        let name = self
            .target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let temp = folder.join(format!(".{name}.ctxopt-{}.tmp", std::process::id()));
        if let Err(err) = replace_with(&temp, &self.target, text, mode, meta.as_ref()) {
            let _ = fs::remove_file(&temp);
            return Err(err);
        }
        let created = self.text.is_none();
        if created {
            fs::write(marker_path(&self.target), "").map_err(io)?;
        }
        if let Ok(dir) = File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(Written {
            backup,
            created,
            removed: false,
        })
    }
}

/// The marker beside a (resolved) config file that ctxopt created.
fn marker_path(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(CREATED_SUFFIX);
    PathBuf::from(name)
}

fn remove_marker(target: &Path) -> Result<(), ConfigError> {
    let marker = marker_path(target);
    match fs::remove_file(&marker) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(ConfigError::io(&marker, e)),
        _ => Ok(()),
    }
}

/// Writes `text` to the new file `temp` (mode `mode`, the owner of `original`), syncs it
/// and renames it over `target`.
fn replace_with(
    temp: &Path,
    target: &Path,
    text: &str,
    mode: u32,
    original: Option<&fs::Metadata>,
) -> Result<(), ConfigError> {
    let file = write_new(temp, text, mode)?;
    if let Some(meta) = original {
        keep_owner(&file, meta).map_err(|e| ConfigError::io(temp, e))?;
    }
    file.sync_all().map_err(|e| ConfigError::io(temp, e))?;
    fs::rename(temp, target).map_err(|e| ConfigError::io(target, e))
}

/// The backup path for a (resolved) config file: `<file>.ctxopt-backup` beside it.
pub fn backup_path(target: &Path) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(BACKUP_SUFFIX);
    PathBuf::from(name)
}

/// `path` with its symlinks resolved; a missing file resolves through its folder.
fn resolve(path: &Path) -> Result<PathBuf, ConfigError> {
    match fs::canonicalize(path) {
        Ok(p) => Ok(p),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // A dangling symlink is written through to where it points.
            if let Ok(link) = fs::read_link(path) {
                let base = path.parent().unwrap_or(Path::new("."));
                return Ok(base.join(link));
            }
            Ok(path.to_path_buf())
        }
        Err(e) => Err(ConfigError::io(path, e)),
    }
}

fn read_text(path: &Path) -> Result<Option<String>, ConfigError> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| ConfigError::NotUtf8(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::io(path, e)),
    }
}

/// Creates `path` (which must not exist) with `mode` and writes `text`.
fn write_new(path: &Path, text: &str, mode: u32) -> Result<File, ConfigError> {
    let io = |e| ConfigError::io(path, e);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)
        .map_err(io)?;
    // The umask may have cleared bits of `mode`; set them exactly.
    file.set_permissions(fs::Permissions::from_mode(mode))
        .map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    Ok(file)
}

/// Gives `file` the owner and group of the original, when they differ from ours.
fn keep_owner(file: &File, original: &fs::Metadata) -> std::io::Result<()> {
    let ours = file.metadata()?;
    if ours.uid() == original.uid() && ours.gid() == original.gid() {
        return Ok(());
    }
    std::os::unix::fs::fchown(file, Some(original.uid()), Some(original.gid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_keep_mode_follow_symlinks_and_back_up_once() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, "{}\n").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();

        let file = ConfigFile::read(&link).unwrap();
        let written = file.write("{\"a\": 1}\n").unwrap();
        assert_eq!(written.backup, Some(backup_path(&file.target)));
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "{\"a\": 1}\n");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(file.backup().unwrap().as_deref(), Some("{}\n"));

        let again = ConfigFile::read(&link).unwrap();
        assert_eq!(again.write("{}\n").unwrap().backup, None);
        assert_eq!(
            again.backup().unwrap().as_deref(),
            Some("{}\n"),
            "the first backup stays"
        );
    }

    #[test]
    fn a_created_file_is_marked_until_backed_up_and_can_be_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.json");
        let written = ConfigFile::read(&path).unwrap().write("{}\n").unwrap();
        assert!(written.created && written.backup.is_none());
        let file = ConfigFile::read(&path).unwrap();
        assert!(file.created_by_ctxopt());
        assert!(file.remove().unwrap().removed);
        assert!(!path.exists() && !marker_path(&path).exists());

        // A file that existed is backed up, never marked, and a stale marker goes.
        fs::write(&path, "{\"mine\": 1}").unwrap();
        fs::write(marker_path(&path), "").unwrap();
        let file = ConfigFile::read(&path).unwrap();
        let written = file.write("{\"mine\": 2}").unwrap();
        assert!(!written.created && written.backup.is_some());
        assert!(!ConfigFile::read(&path).unwrap().created_by_ctxopt());
    }

    #[test]
    fn a_file_changed_since_it_was_read_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        fs::write(&path, "{}").unwrap();
        let file = ConfigFile::read(&path).unwrap();
        fs::write(&path, "{\"other\": true}").unwrap();
        assert!(matches!(
            file.write("{\"a\": 1}"),
            Err(ConfigError::Changed(_))
        ));
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"other\": true}");
        assert!(!backup_path(&path).exists());
    }
}
