//! Reading and writing a client's config file without losing a byte, the user's or anyone
//! else's: a symlink is followed and its target written, the first change keeps a byte-exact
//! backup beside the target (`<name>.ctxopt-backup`), and a write is compare-and-swap: the
//! new text goes to a temporary file in the same folder (0600 until it is complete, then
//! the original's mode and owner), and right before it is renamed over the target, the
//! target is checked again, content and identity (device, inode, size, modification and
//! change times): a file changed since it was read is not replaced
//! ([`ConfigError::Changed`]; the caller plans again on the new text). A file ctxopt creates
//! gets a marker instead of a backup (`<name>.ctxopt-created`: there was no file before), so
//! that removing ctxopt's entries again can remove the file.
//!
//! Interrupts (SIGINT, SIGTERM, SIGHUP, SIGQUIT) are held back while a write is under way
//! and take effect once it is done or undone, so no temporary file outlives an interrupt. A
//! temporary file left by a process killed outright (SIGKILL, a crash) is named
//! `.<name>.ctxopt-<pid>.tmp` (or `.backup.tmp`), readable by its owner only, and removed by
//! the next write of that file once no process `<pid>` runs. `docs/wrap.md` says which
//! window remains.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::ConfigError;

/// The suffix of a backup's file name.
pub(crate) const BACKUP_SUFFIX: &str = ".ctxopt-backup";

/// The suffix of the marker beside a file that ctxopt created.
pub(crate) const CREATED_SUFFIX: &str = ".ctxopt-created";

/// A file's identity and the stamps every change moves: any write updates the change time
/// (which no user call can set back), a replacement changes the inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Stamp {
    fn of(meta: &fs::Metadata) -> Stamp {
        Stamp {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A config file as read.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The path as named (a symlink stays a symlink).
    pub path: PathBuf,
    /// The file written: `path` with every symlink resolved.
    pub target: PathBuf,
    /// The text read; `None` when the file does not exist.
    pub text: Option<String>,
    /// The file's identity when it was read.
    stamp: Option<Stamp>,
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

/// Called between the moment the new text is complete on disk and the final check before
/// the rename: the window a concurrent edit must be caught in (tests put one there).
pub(crate) type BeforeRename<'a> = dyn FnMut(&Path) + 'a;

impl ConfigFile {
    /// Reads `path`; a missing file reads as `text: None`.
    pub fn read(path: &Path) -> Result<ConfigFile, ConfigError> {
        let target = resolve(path)?;
        let (text, stamp) = match read_stamped(&target)? {
            Some((text, stamp)) => (Some(text), Some(stamp)),
            None => (None, None),
        };
        Ok(ConfigFile {
            path: path.to_path_buf(),
            target,
            text,
            stamp,
        })
    }

    /// Where the backup of this file is (or would be).
    pub fn backup_path(&self) -> PathBuf {
        backup_path(&self.target)
    }

    /// The backup's text, when there is one.
    pub fn backup(&self) -> Result<Option<String>, ConfigError> {
        Ok(read_stamped(&self.backup_path())?.map(|(text, _)| text))
    }

    /// Whether ctxopt created this file (and has not backed it up since: a marker beside it).
    pub fn created_by_ctxopt(&self) -> bool {
        self.text.is_some() && marker_path(&self.target).exists()
    }

    /// Fails with [`ConfigError::Changed`] unless the file is still what was read: the same
    /// text, then the same identity and stamps (checked last, right before the caller
    /// replaces or removes it).
    fn unchanged(&self) -> Result<(), ConfigError> {
        let now = read_stamped(&self.target)?;
        let same_text = now.as_ref().map(|(t, _)| t) == self.text.as_ref();
        let stamp = match fs::symlink_metadata(&self.target) {
            Ok(meta) => Some(Stamp::of(&meta)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ConfigError::io(&self.target, e)),
        };
        if same_text && stamp == self.stamp {
            Ok(())
        } else {
            Err(ConfigError::Changed(self.path.clone()))
        }
    }

    /// Removes the file, which ctxopt created, and its marker. Fails with
    /// [`ConfigError::Changed`] when the file is no longer what was read.
    pub fn remove(&self) -> Result<Written, ConfigError> {
        let _held = HeldSignals::hold();
        self.unchanged()?;
        fs::remove_file(&self.target).map_err(|e| self.refusal(&self.target, e))?;
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
        self.write_with(text, &mut |_| {})
    }

    /// [`write`](ConfigFile::write), calling `before_rename` with the temporary file once
    /// the new text is complete on disk, before the final check.
    pub(crate) fn write_with(
        &self,
        text: &str,
        before_rename: &mut BeforeRename<'_>,
    ) -> Result<Written, ConfigError> {
        let _held = HeldSignals::hold();
        let folder = self.target.parent().unwrap_or(Path::new("."));
        remove_stale_temps(folder, &self.target);
        self.unchanged()?;
        let meta = match &self.text {
            Some(_) => Some(fs::metadata(&self.target).map_err(|e| self.refusal(&self.target, e))?),
            None => {
                create_folders(folder).map_err(|e| self.refusal(folder, e))?;
                None
            }
        };
        self.check_writable(folder, meta.as_ref())?;
        let mode = meta
            .as_ref()
            .map_or(0o600, |m| m.permissions().mode() & 0o7777);
        let mut temps = Temps::default();
        let result = self.replace(text, folder, mode, meta.as_ref(), &mut temps, before_rename);
        temps.remove();
        result
    }

    fn replace(
        &self,
        text: &str,
        folder: &Path,
        mode: u32,
        meta: Option<&fs::Metadata>,
        temps: &mut Temps,
        before_rename: &mut BeforeRename<'_>,
    ) -> Result<Written, ConfigError> {
        let backup = match &self.text {
            Some(original) if !self.backup_path().exists() => {
                let temp = temp_path(&self.target, "backup.tmp");
                temps.0.push(temp.clone());
                let file = self.new_file(&temp, original, meta)?;
                set_mode(&file, mode).map_err(|e| self.refusal(&temp, e))?;
                Some(temp)
            }
            _ => None,
        };
        let temp = temp_path(&self.target, "tmp");
        temps.0.push(temp.clone());
        let file = self.new_file(&temp, text, meta)?;
        before_rename(&temp);
        pause_for_tests(&temp);
        set_mode(&file, mode).map_err(|e| self.refusal(&temp, e))?;
        drop(file);
        self.unchanged()?;
        let made_backup = match backup {
            Some(temp) => {
                let path = self.backup_path();
                // A hard link never replaces a backup another run made meanwhile.
                match fs::hard_link(&temp, &path) {
                    Ok(()) => {
                        // From now on the backup says what the file was before ctxopt.
                        remove_marker(&self.target)?;
                        Some(path)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                    Err(e) => return Err(self.refusal(&path, e)),
                }
            }
            None => None,
        };
        if let Err(e) = fs::rename(&temp, &self.target) {
            if let Some(path) = &made_backup {
                let _ = fs::remove_file(path);
            }
            return Err(self.refusal(&self.target, e));
        }
        let created = self.text.is_none();
        if created {
            let marker = marker_path(&self.target);
            OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&marker)
                .map_err(|e| self.refusal(&marker, e))?;
        }
        if let Ok(dir) = File::open(folder) {
            let _ = dir.sync_all();
        }
        Ok(Written {
            backup: made_backup,
            created,
            removed: false,
        })
    }

    /// A new file at `path` holding `text`, 0600, with the original's owner, synced.
    fn new_file(
        &self,
        path: &Path,
        text: &str,
        original: Option<&fs::Metadata>,
    ) -> Result<File, ConfigError> {
        let file = write_new(path, text, 0o600).map_err(|e| self.refusal(path, e))?;
        if let Some(meta) = original {
            keep_owner(&file, meta).map_err(|e| {
                ConfigError::refused(
                    &self.path,
                    format!(
                        "it belongs to user {} and group {}, which ctxopt cannot give the new copy ({e})",
                        meta.uid(),
                        meta.gid()
                    ),
                )
            })?;
        }
        file.sync_all().map_err(|e| self.refusal(path, e))?;
        Ok(file)
    }

    /// Refuses, naming the config file and why, when it cannot be replaced: a folder that
    /// does not let us create the new copy, or a file whose mode keeps its owner out.
    fn check_writable(
        &self,
        folder: &Path,
        meta: Option<&fs::Metadata>,
    ) -> Result<(), ConfigError> {
        if !access_w(folder) {
            return Err(ConfigError::refused(
                &self.path,
                format!(
                    "its folder {} is not writable by this user{}",
                    folder.display(),
                    read_only_fs(folder)
                ),
            ));
        }
        if meta.is_some() && !access_w(&self.target) {
            let mode = meta.map_or(0, |m| m.permissions().mode() & 0o777);
            return Err(ConfigError::refused(
                &self.path,
                format!(
                    "it is read-only for this user (mode {mode:04o}){}",
                    read_only_fs(folder)
                ),
            ));
        }
        Ok(())
    }

    /// An I/O failure at `at` while changing this file, named after the config file.
    fn refusal(&self, at: &Path, e: std::io::Error) -> ConfigError {
        let cause = if at == self.path || at == self.target {
            e.to_string()
        } else {
            format!("{}: {e}", at.display())
        };
        ConfigError::refused(&self.path, cause)
    }
}

/// The temporary files of one write, removed when it ends (renamed ones are gone already).
#[derive(Default)]
struct Temps(Vec<PathBuf>);

impl Temps {
    fn remove(&self) {
        for path in &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

/// Interrupt signals held back while a config file is being replaced; delivered when this
/// is dropped. The hold is the calling thread's signal mask: it holds back a signal sent to
/// the process only while no other thread leaves these signals unblocked (the `ctxopt`
/// commands that write config files run on one thread).
struct HeldSignals(Option<libc::sigset_t>);

impl HeldSignals {
    fn hold() -> HeldSignals {
        // SAFETY: sigset_t is plain data, initialised by sigemptyset before use, and
        // pthread_sigmask only reads `set` and writes `old`.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut old: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT] {
                libc::sigaddset(&mut set, signal);
            }
            let held = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut old) == 0;
            HeldSignals(held.then_some(old))
        }
    }
}

impl Drop for HeldSignals {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            // SAFETY: restores the mask saved by `hold`.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, old, std::ptr::null_mut());
            }
        }
    }
}

/// A seam for the tests that interrupt a write (debug builds only): with
/// `CTXOPT_TEST_PAUSE_BEFORE_RENAME=DIR`, a write about to rename its temporary file creates
/// `DIR/paused` and waits until `DIR/go` exists.
#[cfg(debug_assertions)]
fn pause_for_tests(_temp: &Path) {
    let Some(dir) = std::env::var_os("CTXOPT_TEST_PAUSE_BEFORE_RENAME").map(PathBuf::from) else {
        return;
    };
    let _ = fs::write(dir.join("paused"), "");
    while !dir.join("go").exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[cfg(not(debug_assertions))]
fn pause_for_tests(_temp: &Path) {}

/// Whether this user may write `path` (`access(2)`, which also knows read-only mounts).
fn access_w(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path.
    unsafe { libc::access(c.as_ptr(), libc::W_OK) == 0 }
}

/// `" (a read-only file system)"` when `folder` is on one.
fn read_only_fs(folder: &Path) -> &'static str {
    use std::os::unix::ffi::OsStrExt;
    let Ok(c) = std::ffi::CString::new(folder.as_os_str().as_bytes()) else {
        return "";
    };
    // SAFETY: statvfs writes into a zeroed struct for a valid NUL-terminated path.
    let read_only = unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        libc::statvfs(c.as_ptr(), &mut st) == 0 && st.f_flag & libc::ST_RDONLY != 0
    };
    if read_only {
        " (a read-only file system)"
    } else {
        ""
    }
}

/// `.<name>.ctxopt-<pid>.<suffix>` beside `target`.
fn temp_path(target: &Path, suffix: &str) -> PathBuf {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let folder = target.parent().unwrap_or(Path::new("."));
    folder.join(format!(".{name}.ctxopt-{}.{suffix}", std::process::id()))
}

/// Removes the temporary files of `target` that processes no longer running left (killed
/// outright while writing it).
fn remove_stale_temps(folder: &Path, target: &Path) {
    let Some(name) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let prefix = format!(".{name}.ctxopt-");
    let Ok(entries) = fs::read_dir(folder) else {
        return;
    };
    for entry in entries.flatten() {
        let file = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = file.strip_prefix(&prefix) else {
            continue;
        };
        let Some((pid, suffix)) = rest.split_once('.') else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        if !matches!(suffix, "tmp" | "backup.tmp") || pid as u32 == std::process::id() {
            continue;
        }
        // SAFETY: signal 0 only checks that the process exists.
        let running = unsafe { libc::kill(pid, 0) == 0 }
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if !running {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Creates the missing folders of `folder`, each 0700 whatever the umask.
fn create_folders(folder: &Path) -> std::io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
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

/// The text of `path` and its stamp, read so that both belong together (a file written
/// while it is read is read again); `None` for a missing file. Only a regular file is read.
fn read_stamped(path: &Path) -> Result<Option<(String, Stamp)>, ConfigError> {
    let io = |e| ConfigError::io(path, e);
    for _ in 0..3 {
        let mut file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        let before = file.metadata().map_err(io)?;
        if !before.is_file() {
            return Err(ConfigError::refused(path, "not a regular file".into()));
        }
        let mut bytes = Vec::with_capacity(before.len() as usize);
        file.read_to_end(&mut bytes).map_err(io)?;
        let stamp = Stamp::of(&before);
        if Stamp::of(&file.metadata().map_err(io)?) != stamp {
            continue;
        }
        let text =
            String::from_utf8(bytes).map_err(|_| ConfigError::NotUtf8(path.to_path_buf()))?;
        return Ok(Some((text, stamp)));
    }
    Err(ConfigError::Changed(path.to_path_buf()))
}

/// Creates `path` (which must not exist) with `mode` and writes `text`.
fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<File> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(path)?;
    // The umask may have cleared bits of `mode`; set them exactly.
    set_mode(&file, mode)?;
    file.write_all(text.as_bytes())?;
    Ok(file)
}

fn set_mode(file: &File, mode: u32) -> std::io::Result<()> {
    file.set_permissions(fs::Permissions::from_mode(mode))
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

    /// The files of `dir`, but for `keep`.
    fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn an_edit_between_the_write_and_the_rename_is_never_overwritten() {
        // The two ways another process edits a file: a new file renamed over it (editors,
        // Claude Code) and a write in place, each made at the last moment before the
        // rename.
        type Edit = fn(&Path);
        let moved: Edit = |path| {
            let copy = path.with_extension("edited");
            fs::write(&copy, "{\"theirs\": 1}").unwrap();
            fs::rename(&copy, path).unwrap();
        };
        let in_place: Edit = |path| {
            // Same size as the original: only the content and the times say it changed.
            OpenOptions::new()
                .write(true)
                .open(path)
                .unwrap()
                .write_all(b"{\"b\": 1}")
                .unwrap();
        };
        for edit in [moved, in_place] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("c.json");
            fs::write(&path, "{\"a\": 1}").unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
            let file = ConfigFile::read(&path).unwrap();
            let mut temp_mode = 0;
            let written = file.write_with("{\"a\": 2}", &mut |temp| {
                temp_mode = fs::metadata(temp).unwrap().permissions().mode() & 0o777;
                edit(&path);
            });
            let theirs = fs::read_to_string(&path).unwrap();
            assert!(
                matches!(written, Err(ConfigError::Changed(_))),
                "{written:?}; the file holds {theirs:?}"
            );
            assert_ne!(theirs, "{\"a\": 2}", "the other edit was overwritten");
            assert_eq!(temp_mode, 0o600, "the new text is private until renamed");
            assert_eq!(
                others(dir.path(), &["c.json"]),
                Vec::<String>::new(),
                "no temp file, no backup"
            );
        }
    }

    #[test]
    fn a_change_planned_again_keeps_the_edit_made_during_the_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".mcp.json");
        fs::write(
            &path,
            "{\"mcpServers\": {\"a\": {\"command\": \"node\"}}}\n",
        )
        .unwrap();
        let at = crate::clients::entries::ServersAt::Json(vec!["mcpServers".into()]);
        let options = crate::clients::wrap::WrapOptions {
            serve: true,
            typed: false,
        };
        let plan = |file: &ConfigFile| {
            let plan =
                crate::clients::wrap::wrap(file.text.as_deref().unwrap(), &at, &path, options)?;
            Ok(plan.map(|p| (Some(p.text), ())))
        };
        let mut edits = 0;
        let change = crate::clients::change_file_with(&path, false, &plan, &mut |_| {
            if edits == 0 {
                fs::write(
                    &path,
                    "{\"mcpServers\": {\"a\": {\"command\": \"node\"}, \"b\": {\"command\": \"deno\"}}}\n",
                )
                .unwrap();
            }
            edits += 1;
        })
        .unwrap()
        .unwrap();
        assert_eq!(edits, 2, "planned and written again");
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<_> = crate::clients::entries::read(&text, &at, &path)
            .unwrap()
            .unwrap()
            .entries
            .iter()
            .filter_map(|e| Some((e.key.clone(), e.command_line()?[..6].join(" "))))
            .collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines
                .iter()
                .all(|(_, l)| l.starts_with("ctxopt-proxy --name")),
            "{text}"
        );
        // The backup is the file as it was when the change was made: with the edit.
        assert_eq!(
            change.file.backup().unwrap().as_deref(),
            Some("{\"mcpServers\": {\"a\": {\"command\": \"node\"}, \"b\": {\"command\": \"deno\"}}}\n")
        );
        assert_eq!(
            others(dir.path(), &[".mcp.json", ".mcp.json.ctxopt-backup"]),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_temp_file_a_killed_write_left_is_removed_by_the_next_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        fs::write(&path, "{}").unwrap();
        // A process that has ended: a child, waited for.
        let dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        let mut dead = dead;
        dead.wait().unwrap();
        let stale = dir.path().join(format!(".c.json.ctxopt-{pid}.tmp"));
        let stale_backup = dir.path().join(format!(".c.json.ctxopt-{pid}.backup.tmp"));
        // A running process's (pid 1 always runs) is its own business.
        let alive = dir.path().join(".c.json.ctxopt-1.tmp");
        fs::write(&alive, "x").unwrap();
        fs::write(&stale, "x").unwrap();
        fs::write(&stale_backup, "x").unwrap();
        // Someone else's file that only looks alike stays.
        let lookalike = dir.path().join(".c.json.ctxopt-notes.txt");
        fs::write(&lookalike, "mine").unwrap();
        ConfigFile::read(&path)
            .unwrap()
            .write("{\"a\": 1}")
            .unwrap();
        assert!(!stale.exists() && !stale_backup.exists());
        assert!(alive.exists() && lookalike.exists());
    }

    #[test]
    fn a_fifo_is_refused_by_name_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.json");
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = ConfigFile::read(&path).unwrap_err().to_string();
        assert!(
            err.contains("c.json") && err.contains("not a regular file"),
            "{err}"
        );
    }

    #[test]
    fn a_created_file_and_its_folders_are_private_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new/deeper/settings.json");
        ConfigFile::read(&path).unwrap().write("{}").unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&marker_path(&path)), 0o600);
        assert_eq!(mode(&dir.path().join("new")), 0o700);
        assert_eq!(mode(&dir.path().join("new/deeper")), 0o700);
    }
}
