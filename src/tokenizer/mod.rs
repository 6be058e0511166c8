//! Token counting shared by the proxy, the optimizer and the measurement commands.
//!
//! Counts are exact `o200k_base` by default (or `cl100k_base`): the same token counts as
//! OpenAI's tiktoken, from a counter of our own that keeps the vocabulary compact. The pieces:
//! - `vocab`: the vocabularies (OpenAI tiktoken's, MIT licence, generated at build time from
//!   the `tiktoken-rs` crate) as static tables compiled into the binary: nothing is parsed at
//!   start-up and a page of them is resident only once a lookup touched it;
//! - `pretokenize`: tiktoken's split patterns, on `regex-automata`;
//! - `merge`: byte-pair merging of one piece, linear in its length for long pieces;
//! - [`memo`]: counts remembered from one process to the next (a hook run's).
//!
//! The regex is compiled on first use (a few milliseconds); [`Tokenizer::warm`] does that up
//! front.

#[cfg(test)]
mod crosscheck;
pub mod memo;
mod merge;
mod pretokenize;
mod table;
mod valid_pair;
mod vocab;

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;
use std::thread::LocalKey;

use pretokenize::Pretokenizer;
use regex_automata::hybrid::dfa::Cache;
use vocab::Vocab;

/// Which tokenizer counts tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Tokenizer {
    /// OpenAI `o200k_base`, exact (the default).
    #[default]
    O200kBase,
    /// OpenAI `cl100k_base`, exact.
    Cl100kBase,
    /// An estimate: Unicode scalar values divided by four, rounded up.
    CharsDiv4,
}

/// A tokenizer name that is not one of ours.
#[derive(Debug, thiserror::Error)]
#[error("unknown tokenizer `{0}` (expected o200k_base, cl100k_base or chars/4)")]
pub struct UnknownTokenizer(pub String);

impl Tokenizer {
    /// The name written into logs and reports.
    pub fn name(self) -> &'static str {
        match self {
            Tokenizer::O200kBase => "o200k_base",
            Tokenizer::Cl100kBase => "cl100k_base",
            Tokenizer::CharsDiv4 => "chars/4",
        }
    }

    /// Counts the tokens of `text` (from the process's [`memo`], when one is installed and
    /// holds it).
    pub fn count(self, text: &str) -> usize {
        match self {
            Tokenizer::CharsDiv4 => text.chars().count().div_ceil(4),
            _ => memo::count(self, text, || self.count_directly(text)),
        }
    }

    /// Counts the tokens of `text`, without the memo.
    fn count_directly(self, text: &str) -> usize {
        match self {
            Tokenizer::O200kBase => O200K_BASE.count(text),
            Tokenizer::Cl100kBase => CL100K_BASE.count(text),
            Tokenizer::CharsDiv4 => text.chars().count().div_ceil(4),
        }
    }

    /// Counts the tokens of bytes that may not be UTF-8 (invalid sequences are replaced
    /// by U+FFFD first, as a client decoding the stream would).
    pub(crate) fn count_bytes(self, bytes: &[u8]) -> usize {
        self.count(&String::from_utf8_lossy(bytes))
    }

    /// Prepares the counter now, on the calling thread (compiles its split patterns).
    pub fn warm(self) {
        self.count("warm");
    }
}

/// A byte-pair encoding: a vocabulary, its pre-tokenizer, and each thread's scratch space
/// for it.
struct Encoding {
    vocab: &'static Vocab,
    pretokenizer: LazyLock<Pretokenizer>,
    scratch: &'static LocalKey<RefCell<Scratch>>,
}

/// What counting reuses from one call to the next on a thread: the pre-tokenizer's search
/// cache and the merge's parts.
#[derive(Default)]
struct Scratch {
    cache: Option<Cache>,
    parts: Vec<(usize, u32)>,
}

thread_local! {
    static O200K_SCRATCH: RefCell<Scratch> = RefCell::default();
    static CL100K_SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// OpenAI `o200k_base`: its vocabulary and split patterns.
static O200K_BASE: Encoding = Encoding {
    vocab: &vocab::O200K_BASE,
    pretokenizer: LazyLock::new(Pretokenizer::o200k_base),
    scratch: &O200K_SCRATCH,
};

/// OpenAI `cl100k_base`: its vocabulary and split patterns.
static CL100K_BASE: Encoding = Encoding {
    vocab: &vocab::CL100K_BASE,
    pretokenizer: LazyLock::new(Pretokenizer::cl100k_base),
    scratch: &CL100K_SCRATCH,
};

impl Encoding {
    /// Counts the tokens of `text`: split it, then merge each piece.
    fn count(&self, text: &str) -> usize {
        let pretokenizer = &*self.pretokenizer;
        let count = |scratch: &mut Scratch| {
            let Scratch { cache, parts } = scratch;
            let cache = cache.get_or_insert_with(|| pretokenizer.create_cache());
            pretokenizer
                .split_with(cache, text)
                .map(|piece| merge::count(self.vocab, piece.as_bytes(), parts))
                .sum()
        };
        // Where the thread's scratch space is not at hand (a thread being torn down), fresh
        // scratch space does.
        self.scratch
            .try_with(|scratch| match scratch.try_borrow_mut() {
                Ok(mut scratch) => count(&mut scratch),
                Err(_) => count(&mut Scratch::default()),
            })
            .unwrap_or_else(|_| count(&mut Scratch::default()))
    }
}

impl fmt::Display for Tokenizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Tokenizer {
    type Err = UnknownTokenizer;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "o200k_base" | "o200k" => Ok(Tokenizer::O200kBase),
            "cl100k_base" | "cl100k" => Ok(Tokenizer::Cl100kBase),
            "chars/4" | "chars" => Ok(Tokenizer::CharsDiv4),
            other => Err(UnknownTokenizer(other.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in [
            Tokenizer::O200kBase,
            Tokenizer::Cl100kBase,
            Tokenizer::CharsDiv4,
        ] {
            assert_eq!(t.name().parse::<Tokenizer>().unwrap(), t);
        }
        assert!("gpt2".parse::<Tokenizer>().is_err());
    }

    #[test]
    fn counts_agree_with_tiktoken_on_mixed_text() {
        let text = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"héllo wörld 😀 \\n  fn main() {}\"}]}}";
        let o200k = tiktoken_rs::o200k_base().unwrap();
        let cl100k = tiktoken_rs::cl100k_base().unwrap();
        assert_eq!(
            Tokenizer::O200kBase.count(text),
            o200k.encode_ordinary(text).len()
        );
        assert_eq!(
            Tokenizer::Cl100kBase.count(text),
            cl100k.encode_ordinary(text).len()
        );
    }

    #[test]
    fn chars_estimate_rounds_up() {
        assert_eq!(Tokenizer::CharsDiv4.count(""), 0);
        assert_eq!(Tokenizer::CharsDiv4.count("abcde"), 2);
        assert_eq!(Tokenizer::CharsDiv4.count("ééé"), 1);
    }

    #[test]
    fn invalid_utf8_is_counted_not_rejected() {
        assert!(Tokenizer::O200kBase.count_bytes(b"ab\xffcd") > 0);
    }
}
