//! Token counts remembered from one process to the next: a hook run is a process of its own
//! that counts the same records' texts as the run before it (most of a workspace's newest
//! records do not change between two prompts), and counting was the largest part of its CPU
//! time (`docs/benchmarks.md`, "Token counts remembered").
//!
//! A [`CountMemo`] maps a text's key to its count. The key is the first 16 bytes of the
//! HMAC-SHA256, under the memo's own secret key, of the tokenizer's name and the text: the
//! file holds no text, and unlike a plain hash its keys cannot be tested against a guessed
//! text (a short password, say) without the secret key, which lives beside it in a file of
//! its own (`<memo file>.key`, mode 0600, made on first use). The memo is loaded from a file,
//! installed for the process with [`remember`], consulted by every [`Tokenizer::count`]
//! (short texts too: a run whose every count is remembered never compiles the tokenizer's
//! patterns), and saved when the run counted something new: the entries the run used first,
//! then the others, at most [`MAX_ENTRIES`]. A count is the tokenizer's own, so a memo
//! changes no figure; a file that is missing, cut or of another version is an empty memo, and
//! a secret key that cannot be read or made leaves the run with a memo it does not save.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use hmac::Mac;

use super::Tokenizer;
use crate::optimizer::dedupe::HashIndex;
use crate::redact::key::{self as secret, Key as SecretKey};

/// The most entries a memo file keeps (20 bytes each).
pub const MAX_ENTRIES: usize = 32 * 1024;

/// What a memo file starts with (version 1 had unkeyed SHA-256 keys).
const MAGIC: &[u8] = b"ctxopt token counts 2\n";

/// A text's key.
type Key = [u8; 16];

/// One entry in the file: the key, then the count (little-endian `u32`).
const ENTRY: usize = 20;

/// Token counts by text, as loaded, and what this process used and added.
#[derive(Debug)]
pub struct CountMemo {
    known: HashIndex<Key, u32>,
    /// The entries used or added, in order (a key may repeat).
    used: Mutex<Vec<(Key, u32)>>,
    /// Whether a count was not in the memo.
    added: AtomicBool,
    /// The HMAC that makes a text's key, keyed with the memo's secret key.
    keyed: hmac::Hmac<sha2::Sha256>,
    /// Whether that secret key is the saved one (a run-only key: the memo is not saved).
    saved_key: bool,
}

impl Default for CountMemo {
    /// An empty memo with a secret key for this process only (never saved).
    fn default() -> CountMemo {
        let key = SecretKey::random().unwrap_or_else(|_| SecretKey::from_bytes([0; 32]));
        CountMemo::with_key(&key, false)
    }
}

/// The file of the secret key of the memo at `path`.
fn key_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".key");
    PathBuf::from(name)
}

/// The memo installed for this process, if any.
static MEMO: OnceLock<CountMemo> = OnceLock::new();

/// Installs `memo` for the rest of the process (every count consults it); a memo installed
/// already stays. Returns the installed one.
pub fn remember(memo: CountMemo) -> &'static CountMemo {
    MEMO.get_or_init(|| memo)
}

/// The count of `text` by `tokenizer`, from the installed memo when it has it; `count`
/// counts it otherwise.
pub(super) fn count(tokenizer: Tokenizer, text: &str, count: impl FnOnce() -> usize) -> usize {
    match MEMO.get() {
        Some(memo) => memo.count(tokenizer, text, count),
        None => count(),
    }
}

impl CountMemo {
    fn with_key(key: &SecretKey, saved_key: bool) -> CountMemo {
        CountMemo {
            known: HashIndex::default(),
            used: Mutex::default(),
            added: AtomicBool::new(false),
            keyed: key.hmac(),
            saved_key,
        }
    }

    /// The memo saved at `path`, its keys made with the secret key in `<path>.key` (made when
    /// there is none); empty when there is no memo or it cannot be read, and never saved when
    /// the secret key cannot be read or made.
    pub fn load(path: &Path) -> CountMemo {
        let mut memo = match secret::load_or_create(&key_path(path)) {
            Ok(key) => CountMemo::with_key(&key, true),
            Err(_) => return CountMemo::default(),
        };
        let bytes = std::fs::read(path).unwrap_or_default();
        let Some(entries) = bytes.strip_prefix(MAGIC) else {
            return memo;
        };
        if entries.len() % ENTRY != 0 {
            return memo;
        }
        memo.known.reserve(entries.len() / ENTRY);
        for entry in entries.chunks_exact(ENTRY) {
            let (key, n) = entry.split_at(16);
            let key: Key = key.try_into().expect("16 bytes");
            let n = u32::from_le_bytes(n.try_into().expect("4 bytes"));
            memo.known.entry(key).or_insert(n);
        }
        memo
    }

    /// How many counts the memo holds (as loaded).
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether the memo holds no count (as loaded).
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }

    /// Whether this process counted a text the memo did not hold.
    pub fn added(&self) -> bool {
        self.added.load(Ordering::Relaxed)
    }

    /// Saves the memo at `path` (0600) when this process counted something new: the entries
    /// it used first, then the others, at most [`MAX_ENTRIES`]. Returns whether it wrote.
    pub fn save_if_added(&self, path: &Path) -> std::io::Result<bool> {
        if !self.added() || !self.saved_key {
            return Ok(false);
        }
        let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        let mut written: HashIndex<Key, ()> = HashIndex::default();
        let mut bytes = MAGIC.to_vec();
        let rest = self.known.iter().map(|(k, n)| (*k, *n));
        for (key, n) in used.iter().copied().chain(rest) {
            if written.len() == MAX_ENTRIES {
                break;
            }
            if written.insert(key, ()).is_none() {
                bytes.extend_from_slice(&key);
                bytes.extend_from_slice(&n.to_le_bytes());
            }
        }
        crate::private_file::replace(path, &bytes)?;
        Ok(true)
    }

    /// The count of `text`: remembered, or counted by `count` and remembered.
    fn count(&self, tokenizer: Tokenizer, text: &str, count: impl FnOnce() -> usize) -> usize {
        let key = self.key(tokenizer, text);
        let n = match self.known.get(&key) {
            Some(&n) => n,
            None => {
                self.added.store(true, Ordering::Relaxed);
                u32::try_from(count()).unwrap_or(u32::MAX)
            }
        };
        self.used
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((key, n));
        n as usize
    }

    /// The key of `text` counted by `tokenizer`.
    fn key(&self, tokenizer: Tokenizer, text: &str) -> Key {
        let mut mac = self.keyed.clone();
        mac.update(tokenizer.name().as_bytes());
        mac.update(&[0]);
        mac.update(text.as_bytes());
        mac.finalize().into_bytes()[..16]
            .try_into()
            .expect("16 bytes")
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn texts() -> Vec<String> {
        (0..50)
            .map(|i| {
                format!("fn item_{i}() -> Result<(), Error> {{ let x = {i} * 2; }}\n")
                    .repeat(i % 7 + 1)
            })
            .collect()
    }

    #[test]
    fn a_saved_memo_gives_the_counts_the_tokenizer_gives() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts");
        let first = CountMemo::load(&path);
        assert!(first.is_empty());
        let t = Tokenizer::O200kBase;
        let direct: Vec<usize> = texts().iter().map(|s| t.count_directly(s)).collect();
        let counted: Vec<usize> = texts()
            .iter()
            .map(|s| first.count(t, s, || t.count_directly(s)))
            .collect();
        assert_eq!(counted, direct);
        assert!(first.save_if_added(&path).unwrap());
        let again = CountMemo::load(&path);
        assert_eq!(again.len(), 50);
        // From the memo: the closure that would count is never called.
        let remembered: Vec<usize> = texts()
            .iter()
            .map(|s| again.count(t, s, || unreachable!("remembered")))
            .collect();
        assert_eq!(remembered, direct);
        assert!(!again.added());
        assert!(!again.save_if_added(&path).unwrap());
        // Another tokenizer's count of the same text is another entry.
        let cl = Tokenizer::Cl100kBase;
        assert_eq!(again.count(cl, &texts()[9], || 7), 7);
        assert!(again.added());
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }

    #[test]
    fn a_file_cut_or_of_another_version_is_an_empty_memo() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts");
        let memo = CountMemo::load(&path);
        memo.count(Tokenizer::O200kBase, "some text", || 3);
        memo.save_if_added(&path).unwrap();
        assert_eq!(CountMemo::load(&path).len(), 1);
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(CountMemo::load(&path).is_empty());
        let mut other = b"ctxopt token counts 1\n".to_vec();
        other.extend_from_slice(&bytes[MAGIC.len()..]);
        std::fs::write(&path, other).unwrap();
        assert!(CountMemo::load(&path).is_empty());
    }

    #[test]
    fn the_file_keeps_the_entries_used_last_and_at_most_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts");
        let old = CountMemo::load(&path);
        for i in 0..MAX_ENTRIES {
            old.count(Tokenizer::O200kBase, &format!("old {i}"), || i);
        }
        old.save_if_added(&path).unwrap();
        let memo = CountMemo::load(&path);
        assert_eq!(memo.len(), MAX_ENTRIES);
        memo.count(Tokenizer::O200kBase, "old 5", || unreachable!());
        memo.count(Tokenizer::O200kBase, "new", || 1);
        memo.save_if_added(&path).unwrap();
        let saved = std::fs::read(&path).unwrap();
        assert_eq!(saved.len(), MAGIC.len() + MAX_ENTRIES * ENTRY);
        let entries: Vec<&[u8]> = saved[MAGIC.len()..].chunks(ENTRY).collect();
        assert_eq!(&entries[0][..16], &memo.key(Tokenizer::O200kBase, "old 5"));
        assert_eq!(&entries[1][..16], &memo.key(Tokenizer::O200kBase, "new"));
        let reloaded = CountMemo::load(&path);
        assert_eq!(reloaded.count(Tokenizer::O200kBase, "new", || 9), 1);
    }

    #[test]
    fn keys_are_keyed_by_a_secret_of_their_own_so_a_guessed_text_cannot_be_tested() {
        use sha2::{Digest, Sha256};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts");
        let secret = "hunter2-password";
        let memo = CountMemo::load(&path);
        memo.count(Tokenizer::O200kBase, secret, || 5);
        assert!(memo.save_if_added(&path).unwrap());
        let key_file = key_path(&path);
        assert_eq!(
            std::fs::metadata(&key_file).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let saved = std::fs::read(&path).unwrap();
        let stored: Key = saved[MAGIC.len()..MAGIC.len() + 16].try_into().unwrap();
        // The canary: the unkeyed hash a guesser could make is not what the file holds.
        let mut plain = Sha256::new();
        plain.update(Tokenizer::O200kBase.name().as_bytes());
        plain.update([0]);
        plain.update(secret.as_bytes());
        let unkeyed: Key = plain.finalize()[..16].try_into().unwrap();
        assert_ne!(stored, unkeyed);
        assert_eq!(
            stored,
            CountMemo::load(&path).key(Tokenizer::O200kBase, secret)
        );
        // With another secret key the same file remembers nothing.
        std::fs::remove_file(&key_file).unwrap();
        let rekeyed = CountMemo::load(&path);
        assert_eq!(rekeyed.count(Tokenizer::O200kBase, secret, || 9), 9);
    }

    #[test]
    fn a_memo_whose_secret_key_cannot_be_made_is_used_but_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the key's folder would be: the key cannot be made.
        std::fs::write(dir.path().join("blocked"), "x").unwrap();
        let path = dir.path().join("blocked/counts");
        let memo = CountMemo::load(&path);
        assert_eq!(memo.count(Tokenizer::O200kBase, "text", || 4), 4);
        assert!(memo.added());
        assert!(!memo.save_if_added(&path).unwrap());
        assert!(!path.exists());
    }
}
