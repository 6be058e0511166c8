//! Pre-tokenization: the split of a text into the pieces that byte-pair encoding sees, by
//! tiktoken's patterns for `o200k_base` and `cl100k_base`.
//!
//! tiktoken's patterns use a negative look-ahead, `\s+(?!\S)`, which `regex-automata` does not
//! support. As in the `bpe-openai` crate (MIT, <https://github.com/github/rust-gems>), the
//! patterns are compiled as one multi-pattern regex where that alternative becomes `\s+\s`, a
//! pattern whose last character is a pseudo look-ahead dropped from the match, plus `\s+$` for
//! the end of the text; a plain `\s+` comes last.
//!
//! Every search is anchored where the last piece ended and needs only where the piece ends, so
//! the patterns are one forward lazy DFA (built as it searches) over an NFA without capture
//! states: no reverse automaton and no other engine is compiled. A hook run is a process of
//! its own and compiles the patterns every time (`docs/benchmarks.md`, "Token counts
//! remembered").

use regex_automata::hybrid::dfa::{Cache, DFA};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::{Anchored, Input};

/// `o200k_base`'s pattern up to (not including) its look-ahead alternative.
const O200K_BASE: &str = concat!(
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n/]*",
    r"|\s*[\r\n]+",
    r"|\s+$",
);

/// `cl100k_base`'s pattern up to (not including) its look-ahead alternative.
const CL100K_BASE: &str = concat!(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)",
    r"|[^\r\n\p{L}\p{N}]?\p{L}+",
    r"|\p{N}{1,3}",
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"|\s*[\r\n]+",
    r"|\s+$",
);

/// The look-ahead alternative rewritten: its match's last character is not part of the piece.
const LOOKAHEAD: &str = r"\s+\s";

/// The last alternative.
const SPACES: &str = r"\s+";

/// A compiled pre-tokenizer.
pub(crate) struct Pretokenizer {
    dfa: DFA,
}

impl Pretokenizer {
    /// `o200k_base`'s pre-tokenizer.
    pub(crate) fn o200k_base() -> Self {
        Self::new(O200K_BASE)
    }

    /// `cl100k_base`'s pre-tokenizer.
    pub(crate) fn cl100k_base() -> Self {
        Self::new(CL100K_BASE)
    }

    fn new(main: &str) -> Self {
        let dfa = DFA::builder()
            // Never give up: a search clears the cache when it is full and goes on.
            .configure(DFA::config().minimum_cache_clear_count(None))
            .thompson(thompson::Config::new().which_captures(WhichCaptures::None))
            .build_many(&[main, LOOKAHEAD, SPACES])
            .expect("valid patterns");
        Self { dfa }
    }

    /// A search cache for [`Pretokenizer::split_with`] (the lazy DFA's states): one per
    /// thread, kept across calls.
    pub(crate) fn create_cache(&self) -> Cache {
        self.dfa.create_cache()
    }

    /// The pieces of `text`, in order; together they are exactly `text`.
    #[cfg(test)]
    pub(crate) fn split<'t>(&'t self, text: &'t str) -> impl Iterator<Item = &'t str> + 't {
        let mut cache = self.create_cache();
        let pieces: Vec<&'t str> = self.split_with(&mut cache, text).collect();
        pieces.into_iter()
    }

    /// The pieces of `text`, in order, searched with `cache` (made by
    /// [`Pretokenizer::create_cache`] for this pre-tokenizer); together they are exactly
    /// `text`.
    pub(crate) fn split_with<'a, 't: 'a>(
        &'a self,
        cache: &'a mut Cache,
        text: &'t str,
    ) -> impl Iterator<Item = &'t str> + 'a {
        let mut at = 0;
        std::iter::from_fn(move || {
            let input = Input::new(text).range(at..).anchored(Anchored::Yes);
            let found = self
                .dfa
                .try_search_fwd(cache, &input)
                .expect("a lazy DFA that never gives up and has no quit byte")?;
            let start = at;
            let mut end = found.offset();
            if found.pattern().as_usize() == 1 {
                let lookahead = text[start..end]
                    .chars()
                    .next_back()
                    .expect("non-empty match");
                end -= lookahead.len_utf8();
            }
            at = end;
            Some(&text[start..end])
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_before_a_word_leave_one_for_the_word() {
        let pre = Pretokenizer::o200k_base();
        let pieces: Vec<_> = pre.split("a   b\n\n  ").collect();
        assert_eq!(pieces, ["a", "  ", " b", "\n\n", "  "]);
    }

    #[test]
    fn pieces_cover_the_text() {
        let text = "Hello, World's 12345 héllo\tfoo/bar//baz  \r\n x";
        for pre in [Pretokenizer::o200k_base(), Pretokenizer::cl100k_base()] {
            assert_eq!(pre.split(text).collect::<String>(), text);
        }
    }
}
