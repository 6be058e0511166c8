//! The compact, static vocabularies: OpenAI's `o200k_base` and `cl100k_base` token tables
//! (from OpenAI tiktoken, MIT licence, taken from the `tiktoken-rs` crate by `build.rs` at
//! build time).
//!
//! Each vocabulary is a handful of byte arrays compiled into the binary (`include_bytes!`),
//! so nothing is parsed at start-up and a page becomes resident only when a lookup touches
//! it: the token bytes in rank order with `u32` offsets, an open-addressing hash table of
//! ranks (layout in [`super::table`]), and, used only to count long pieces (see
//! [`super::merge`]), per token its longest prefix token and the pair whose merge makes it,
//! with a hash table from such a pair back to the token.

use super::{table, valid_pair};

/// One vocabulary's static tables.
pub(crate) struct Vocab {
    bytes: &'static [u8],
    offsets: &'static [u8],
    table: &'static [u8],
    prefix: &'static [u8],
    split: &'static [u8],
    merges: &'static [u8],
    longest: &'static [u8; 1 << 16],
}

macro_rules! vocab {
    ($name:literal) => {
        Vocab {
            bytes: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".bytes")),
            offsets: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".offsets")),
            table: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".table")),
            prefix: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".prefix")),
            split: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".split")),
            merges: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".merges")),
            longest: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".longest")),
        }
    };
}

/// OpenAI `o200k_base`.
pub(crate) static O200K_BASE: Vocab = vocab!("o200k_base");

/// OpenAI `cl100k_base`.
pub(crate) static CL100K_BASE: Vocab = vocab!("cl100k_base");

/// The `index`-th little-endian `u32` of `words`.
#[inline]
fn word(words: &[u8], index: usize) -> u32 {
    let at = index * 4;
    u32::from_le_bytes(words[at..at + 4].try_into().expect("4 bytes"))
}

/// Looks up the key with hash `h` in a hash table (layout in [`super::table`]): the rank of
/// the first entry with the key's tag for which `is_key` holds.
#[inline]
fn probe(words: &[u8], h: u64, is_key: impl Fn(u32) -> bool) -> Option<u32> {
    let mask = words.len() / 4 - 1;
    let tag = table::tag(h);
    let mut slot = table::home(h, mask);
    loop {
        let entry = word(words, slot);
        if entry == table::EMPTY {
            return None;
        }
        let rank = entry & table::RANK_MASK;
        if entry & !table::RANK_MASK == tag && is_key(rank) {
            return Some(rank);
        }
        slot = (slot + 1) & mask;
    }
}

impl Vocab {
    /// How many ordinary tokens the vocabulary has (ranks `0..len`).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.offsets.len() / 4 - 1
    }

    /// The bytes of the token with `rank`.
    #[inline]
    pub(crate) fn token(&self, rank: u32) -> &'static [u8] {
        let rank = rank as usize;
        &self.bytes[word(self.offsets, rank) as usize..word(self.offsets, rank + 1) as usize]
    }

    /// The length in bytes of the token with `rank`.
    #[inline]
    pub(crate) fn token_len(&self, rank: u32) -> usize {
        let rank = rank as usize;
        (word(self.offsets, rank + 1) - word(self.offsets, rank)) as usize
    }

    /// The rank of the token whose bytes are exactly `bytes`, if there is one.
    #[inline]
    pub(crate) fn rank(&self, bytes: &[u8]) -> Option<u32> {
        probe(self.table, table::hash(bytes), |rank| {
            self.token(rank) == bytes
        })
    }

    /// The longest token that `bytes` starts with (`bytes` must not be empty; every single
    /// byte is a token).
    pub(crate) fn longest_prefix(&self, bytes: &[u8]) -> u32 {
        let max = match bytes {
            [first, second, ..] => {
                usize::from(self.longest[usize::from(*first) << 8 | usize::from(*second)])
            }
            _ => 1,
        };
        (2..=max.min(bytes.len()))
            .rev()
            .find_map(|len| self.rank(&bytes[..len]))
            .or_else(|| self.rank(&bytes[..1]))
            .expect("every byte is a token")
    }

    /// The longest token shorter than `rank` that is a prefix of it.
    #[inline]
    pub(crate) fn shorter_prefix(&self, rank: u32) -> Option<u32> {
        Some(word(self.prefix, rank as usize)).filter(|&p| p != u32::MAX)
    }

    /// The two tokens whose merge makes `rank`, or `(rank, rank)` if no merge does.
    #[inline]
    fn split(&self, rank: u32) -> (u32, u32) {
        let at = rank as usize * 2;
        (word(self.split, at), word(self.split, at + 1))
    }

    /// The token that merging `left` and `right` makes, if byte-pair encoding has that merge.
    fn merge(&self, left: u32, right: u32) -> Option<u32> {
        let h = table::hash(&table::pair_key(left, right));
        probe(self.merges, h, |rank| self.split(rank) == (left, right))
    }

    /// Whether `left` followed by `right` is how byte-pair encoding encodes their bytes.
    pub(crate) fn is_valid_pair(&self, left: u32, right: u32) -> bool {
        valid_pair::is_valid_pair(|a, b| self.merge(a, b), |t| self.split(t), left, right)
    }
}
