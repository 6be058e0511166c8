//! Where the store lives: a file (by default in the user's state directory, created with
//! mode 0600 in a 0700 directory) or `:memory:`.

use std::fmt;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The spelling that asks for an in-memory store (nothing written to disk).
pub(crate) const MEMORY: &str = ":memory:";

/// The store's file name inside the state directory.
pub(crate) const FILE_NAME: &str = "store.sqlite3";

/// The arguments that say which store and whose records, shared by `ctxopt-proxy`,
/// `ctxopt serve` and `ctxopt ingest` (flattened into each).
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct StoreArgs {
    /// The session store: a SQLite file, or `:memory:` for none that outlives the run
    /// (default: $XDG_STATE_HOME/ctxopt/store.sqlite3, else ~/.local/state/ctxopt/store.sqlite3).
    #[arg(long, value_name = "PATH")]
    pub store: Option<String>,
    /// The workspace the session's records belong to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
}

/// Where a store lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreLocation {
    /// A SQLite file.
    File(PathBuf),
    /// A private in-memory database, gone when the process ends.
    Memory,
}

impl StoreLocation {
    /// Reads a `--store` argument: `:memory:` or a path.
    pub fn parse(arg: &str) -> StoreLocation {
        if arg == MEMORY {
            StoreLocation::Memory
        } else {
            StoreLocation::File(PathBuf::from(arg))
        }
    }

    /// The default: `$XDG_STATE_HOME/ctxopt/store.sqlite3` (the platform's state directory),
    /// else `~/.local/state/ctxopt/store.sqlite3`. `None` when there is no home directory.
    pub fn default_file() -> Option<StoreLocation> {
        let base =
            dirs::state_dir().or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
        Some(StoreLocation::File(base.join("ctxopt").join(FILE_NAME)))
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreLocation::File(path) => write!(f, "{}", path.display()),
            StoreLocation::Memory => f.write_str(MEMORY),
        }
    }
}

/// Creates the store file (and its directory, 0700) if missing, so that SQLite never
/// creates it with the umask's mode: the file is 0600, and SQLite gives its `-wal` and
/// `-shm` files the mode of the database file. An existing file wider than 0600 is
/// narrowed.
pub(crate) fn prepare_file(path: &Path) -> io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
    }
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(path)?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(mode & 0o600))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_knows_memory() {
        assert_eq!(StoreLocation::parse(":memory:"), StoreLocation::Memory);
        assert_eq!(
            StoreLocation::parse("a/b.sqlite3"),
            StoreLocation::File(PathBuf::from("a/b.sqlite3"))
        );
    }

    #[test]
    fn default_file_ends_in_ctxopt_store() {
        let Some(StoreLocation::File(path)) = StoreLocation::default_file() else {
            panic!("a home directory is expected in tests");
        };
        assert!(path.ends_with("ctxopt/store.sqlite3"), "{}", path.display());
    }

    #[test]
    fn prepare_file_narrows_a_wide_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/store.sqlite3");
        prepare_file(&path).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        prepare_file(&path).unwrap();
        assert_eq!(mode(&path), 0o600);
    }
}
