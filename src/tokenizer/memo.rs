//! Token counts remembered from one process to the next: a hook run is a process of its own
//! that counts the same records' texts as the run before it (most of a workspace's newest
//! records do not change between two prompts), and counting was the largest part of its CPU
//! time (`docs/benchmarks.md`, "Token counts remembered").
//!
//! A [`CountMemo`] maps a text's key (the first 16 bytes of the SHA-256 of the tokenizer's
//! name and the text) to its count. It is loaded from a file, installed for the process with
//! [`remember`], consulted by every [`Tokenizer::count`] (short texts too: a run whose every
//! count is remembered never compiles the tokenizer's patterns), and saved when the run
//! counted something new: the entries the run used first, then the others, at most
//! [`MAX_ENTRIES`]. A count is the tokenizer's own, so a
//! memo changes no figure; a file that is missing, cut or of another version is an empty
//! memo. The file holds keys and counts, no text.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};

use super::Tokenizer;
use crate::optimizer::dedupe::HashIndex;

/// The most entries a memo file keeps (20 bytes each).
pub const MAX_ENTRIES: usize = 32 * 1024;

/// What a memo file starts with.
const MAGIC: &[u8] = b"ctxopt token counts 1\n";

/// A text's key.
type Key = [u8; 16];

/// One entry in the file: the key, then the count (little-endian `u32`).
const ENTRY: usize = 20;

/// Token counts by text, as loaded, and what this process used and added.
#[derive(Debug, Default)]
pub struct CountMemo {
    known: HashIndex<Key, u32>,
    /// The entries used or added, in order (a key may repeat).
    used: Mutex<Vec<(Key, u32)>>,
    /// Whether a count was not in the memo.
    added: AtomicBool,
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
    /// The memo saved at `path`; empty when there is none or it cannot be read.
    pub fn load(path: &Path) -> CountMemo {
        let bytes = std::fs::read(path).unwrap_or_default();
        let mut memo = CountMemo::default();
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
        if !self.added() {
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
        let key = key(tokenizer, text);
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
}

/// The key of `text` counted by `tokenizer`.
fn key(tokenizer: Tokenizer, text: &str) -> Key {
    let mut hash = Sha256::new();
    hash.update(tokenizer.name().as_bytes());
    hash.update([0]);
    hash.update(text.as_bytes());
    hash.finalize()[..16].try_into().expect("16 bytes")
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
        let mut other = b"ctxopt token counts 2\n".to_vec();
        other.extend_from_slice(&bytes[MAGIC.len()..]);
        std::fs::write(&path, other).unwrap();
        assert!(CountMemo::load(&path).is_empty());
    }

    #[test]
    fn the_file_keeps_the_entries_used_last_and_at_most_its_limit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("counts");
        let old = CountMemo::default();
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
        assert_eq!(&entries[0][..16], &key(Tokenizer::O200kBase, "old 5"));
        assert_eq!(&entries[1][..16], &key(Tokenizer::O200kBase, "new"));
        let reloaded = CountMemo::load(&path);
        assert_eq!(reloaded.count(Tokenizer::O200kBase, "new", || 9), 1);
    }
}
