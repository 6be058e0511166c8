//! The installation's redaction key: 32 random bytes in a file of mode 0600, created on
//! first use, so a placeholder's HMAC lets equal secrets be compared across logs and the
//! store without making a secret recoverable (a plain hash of a short password could be
//! guessed by trying candidates; a keyed one cannot without the key).

use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The key file's name, in the directory of the store (by default the state directory).
pub(crate) const KEY_FILE_NAME: &str = "redact.key";

/// Mode of the key file.
pub(crate) const KEY_FILE_MODE: u32 = 0o600;

/// Bytes of key.
pub(crate) const KEY_LEN: usize = 32;

/// A redaction key.
#[derive(Clone, PartialEq, Eq)]
pub struct Key(pub(super) [u8; KEY_LEN]);

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Key(…)")
    }
}

impl Key {
    /// A key from fixed bytes (tests, fuzzing).
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> Key {
        Key(bytes)
    }

    /// An HMAC-SHA256 keyed with this key, ready for its message.
    pub(crate) fn hmac(&self) -> hmac::Hmac<sha2::Sha256> {
        use hmac::KeyInit;
        hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length")
    }

    /// A fresh random key from the operating system.
    pub fn random() -> io::Result<Key> {
        let mut bytes = [0u8; KEY_LEN];
        let mut filled = 0;
        while filled < KEY_LEN {
            // SAFETY: the pointer and length describe the unfilled tail of `bytes`.
            let n = unsafe {
                libc::getrandom(bytes[filled..].as_mut_ptr().cast(), KEY_LEN - filled, 0)
            };
            if n < 0 {
                let err = io::Error::last_os_error();
                if err.kind() != io::ErrorKind::Interrupted {
                    return Err(err);
                }
                continue;
            }
            filled += n as usize;
        }
        Ok(Key(bytes))
    }
}

/// Why the key file could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// Creating, reading or narrowing the file failed.
    #[error("redaction key {path}: {source}")]
    Io {
        /// The key file.
        path: PathBuf,
        /// The failure.
        source: io::Error,
    },
    /// The file does not hold 64 hexadecimal digits.
    #[error("redaction key {path}: not {} hexadecimal digits", KEY_LEN * 2)]
    Malformed {
        /// The key file.
        path: PathBuf,
    },
}

/// Where the key lives: beside the store file when the store is a file, else in the
/// default state directory (`$XDG_STATE_HOME/ctxopt/`, where the default store is).
/// `None` when there is no home directory either.
pub(crate) fn key_path(store_file: Option<&Path>) -> Option<PathBuf> {
    if let Some(dir) = store_file.map(|f| f.parent().unwrap_or(Path::new(""))) {
        return Some(dir.join(KEY_FILE_NAME));
    }
    let base = dirs::state_dir().or_else(|| dirs::home_dir().map(|h| h.join(".local/state")))?;
    Some(base.join("ctxopt").join(KEY_FILE_NAME))
}

/// Reads the key at `path`, creating it (mode 0600, its directory 0700) when missing. A
/// file wider than 0600 is narrowed.
pub(crate) fn load_or_create(path: &Path) -> Result<Key, KeyError> {
    let io_err = |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(io_err)?;
        }
    }
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(KEY_FILE_MODE)
        .open(path)
    {
        Ok(mut file) => {
            let key = Key::random().map_err(io_err)?;
            let text = format!("{}\n", hex::encode(key.0));
            file.write_all(text.as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(io_err)?;
            Ok(key)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => read(path),
        Err(err) => Err(io_err(err)),
    }
}

fn read(path: &Path) -> Result<Key, KeyError> {
    let io_err = |source| KeyError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut file = fs::File::open(path).map_err(io_err)?;
    let mode = file.metadata().map_err(io_err)?.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(mode & 0o600))
            .map_err(io_err)?;
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io_err)?;
    let mut bytes = [0u8; KEY_LEN];
    // A file another process is still writing reads short: the caller sees Malformed.
    hex::decode_to_slice(text.trim(), &mut bytes).map_err(|_| KeyError::Malformed {
        path: path.to_path_buf(),
    })?;
    Ok(Key(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_created_0600_once_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/redact.key");
        let first = load_or_create(&path).unwrap();
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(load_or_create(&path).unwrap(), first);
        let other = load_or_create(&dir.path().join("other.key")).unwrap();
        assert_ne!(other, first, "each installation gets its own key");
    }

    #[test]
    fn a_wide_key_file_is_narrowed_and_a_bad_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("redact.key");
        load_or_create(&path).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        load_or_create(&path).unwrap();
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        fs::write(&path, "not hex\n").unwrap();
        let err = load_or_create(&path).unwrap_err();
        assert!(matches!(err, KeyError::Malformed { .. }), "{err}");
    }

    #[test]
    fn the_key_sits_beside_a_store_file() {
        assert_eq!(
            key_path(Some(Path::new("/x/y/store.sqlite3"))),
            Some(PathBuf::from("/x/y/redact.key"))
        );
    }
}
