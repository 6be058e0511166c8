//! Small files that are ctxopt's own (the hooks' state, wrap's records, the trusted tool
//! catalogs): written whole through a temporary sibling renamed over them, mode 0600, in
//! folders created 0700, whatever the umask.

use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Replaces `path` with `bytes` (0600; its missing folders created 0700). A failure leaves
/// no temporary file.
pub(crate) fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_with(path, bytes, false)
}

/// [`replace`], the bytes on the disk (synced) before the file is renamed over `path`: after
/// a crash `path` holds the old bytes or the new ones, never an empty file.
pub(crate) fn replace_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_with(path, bytes, true)
}

/// Replaces `path` with `bytes`, syncing the temporary file first when `sync`.
fn replace_with(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    // A name of its own per call: two threads of one process (or two processes) replacing
    // the same file at once must not share a temporary file, or one's rename finds it gone.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let temp = path.with_extension(format!("tmp-{}-{n}", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            if sync {
                f.sync_all()?;
            }
            Ok(())
        })
        .and_then(|()| std::fs::rename(&temp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_replacing_one_file_at_once_all_succeed_and_leave_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join("s.json");
        std::thread::scope(|scope| {
            for t in 0..8 {
                let path = &path;
                scope.spawn(move || {
                    for i in 0..200 {
                        // Every other thread syncs: both ways share the temporary names.
                        let replace = if t % 2 == 0 { replace } else { replace_synced };
                        replace(path, format!("{t}-{i}").as_bytes()).unwrap();
                    }
                });
            }
        });
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.ends_with("-199"), "{last}");
        let left: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["s.json"]);
    }
}
