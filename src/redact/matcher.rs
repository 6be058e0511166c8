//! The compiled rule table: an Aho-Corasick pass over every rule's keywords picks the rules
//! that can match at all, and only those run their own pattern. Text without any keyword
//! (nearly every frame) costs one Aho-Corasick scan.
//!
//! Patterns are compiled without Unicode (secrets are ASCII; `(?i)` folds ASCII only, `\s`
//! and classes are ASCII) and each on its own: one automaton for all rules at once was
//! larger than its cache on real tool lists and fell back to a slow engine, at eight times
//! the tap's own CPU per frame (`cargo bench --bench redaction`).

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::bytes::{Regex, RegexBuilder};

use super::escape::widen_to_escapes;
use super::rules::{Rule, RULES};

/// What a placeholder looks like; text inside one is never redacted again.
pub(crate) const PLACEHOLDER_PATTERN: &str = r"\[REDACTED:[a-z0-9-]+:[0-9]+:[0-9a-f]{8}\]";

/// One secret found: its bytes and the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The secret's byte range in the text.
    pub span: Range<usize>,
    /// The rule's name.
    pub rule: &'static str,
}

/// A rule and its patterns, compiled the first time the rule's keywords occur (a process
/// that redacts a few texts compiles the few rules they call for).
struct Compiled {
    rule: &'static Rule,
    patterns: OnceLock<(Regex, Option<Regex>)>,
}

impl Compiled {
    /// The rule's pattern and allowlist, compiled.
    fn patterns(&self) -> &(Regex, Option<Regex>) {
        self.patterns
            .get_or_init(|| (ascii(self.rule.pattern), self.rule.allow.map(ascii)))
    }
}

/// The compiled table (built once per process, see [`matcher`]).
pub struct Matcher {
    keywords: AhoCorasick,
    /// For each keyword pattern of `keywords`, the rule it belongs to.
    keyword_rule: Vec<usize>,
    rules: Vec<Compiled>,
    placeholder: Regex,
}

impl std::fmt::Debug for Matcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Matcher")
            .field("rules", &self.rules.len())
            .finish_non_exhaustive()
    }
}

/// `pattern` compiled for bytes, without Unicode. Panics on an invalid pattern: the
/// patterns are constants, and a test compiles them.
fn ascii(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .unicode(false)
        .build()
        .unwrap_or_else(|e| panic!("{pattern}: {e}"))
}

/// The rule table, once per process (each rule's patterns compiled at its first keyword hit).
pub fn matcher() -> &'static Matcher {
    static MATCHER: OnceLock<Matcher> = OnceLock::new();
    MATCHER.get_or_init(|| Matcher::new(RULES))
}

impl Matcher {
    /// Compiles `rules`. Panics on an invalid pattern: the table is a constant, and a test
    /// compiles it.
    fn new(rules: &'static [Rule]) -> Matcher {
        let mut keyword_rule = Vec::new();
        let mut keywords = Vec::new();
        for (index, rule) in rules.iter().enumerate() {
            for keyword in rule.keywords {
                keywords.push(*keyword);
                keyword_rule.push(index);
            }
        }
        let keywords = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .kind(Some(AhoCorasickKind::DFA))
            .build(&keywords)
            .expect("the keywords compile");
        let rules = rules
            .iter()
            .map(|rule| Compiled {
                rule,
                patterns: OnceLock::new(),
            })
            .collect();
        Matcher {
            keywords,
            keyword_rule,
            rules,
            placeholder: ascii(PLACEHOLDER_PATTERN),
        }
    }

    /// The rules whose keywords occur in `text`, as a bit set.
    fn candidates(&self, text: &[u8]) -> u64 {
        let mut found = 0u64;
        let all = (1u64 << self.rules.len()) - 1;
        for hit in self.keywords.find_overlapping_iter(text) {
            found |= 1 << self.keyword_rule[hit.pattern().as_usize()];
            if found == all {
                break;
            }
        }
        found
    }

    /// The byte ranges of the placeholders already in `text`.
    pub fn placeholders(&self, text: &[u8]) -> Vec<Range<usize>> {
        if memchr::memmem::find(text, b"[REDACTED:").is_none() {
            return Vec::new();
        }
        self.placeholder
            .find_iter(text)
            .map(|m| m.range())
            .collect()
    }

    /// Every secret in `text`, in order, none overlapping another or a placeholder: where
    /// two rules' matches overlap, the one that starts first (then the longer) wins; the
    /// parts of a match that lie inside an earlier placeholder are left as they are.
    pub fn find(&self, text: &[u8]) -> Vec<Finding> {
        let candidates = self.candidates(text);
        if candidates == 0 {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (index, compiled) in self.rules.iter().enumerate() {
            if candidates & (1 << index) == 0 {
                continue;
            }
            let (regex, allow) = compiled.patterns();
            for caps in regex.captures_iter(text) {
                let whole = caps.get(0).expect("group 0 always takes part");
                if allow.as_ref().is_some_and(|a| a.is_match(whole.as_bytes())) {
                    continue;
                }
                let secret = caps.iter().skip(1).flatten().next().unwrap_or(whole);
                if secret.is_empty() {
                    continue;
                }
                found.push(Finding {
                    span: widen_to_escapes(text, secret.range()),
                    rule: compiled.rule.name,
                });
            }
        }
        found.sort_by_key(|f| (f.span.start, std::cmp::Reverse(f.span.end)));
        let mut kept: Vec<Finding> = Vec::with_capacity(found.len());
        for finding in found {
            if kept.last().is_some_and(|k| k.span.end > finding.span.start) {
                continue;
            }
            kept.push(finding);
        }
        outside(kept, &self.placeholders(text))
    }
}

/// `findings` with the parts inside `placeholders` cut out (both sorted, neither
/// overlapping itself).
fn outside(findings: Vec<Finding>, placeholders: &[Range<usize>]) -> Vec<Finding> {
    if placeholders.is_empty() {
        return findings;
    }
    let mut out = Vec::with_capacity(findings.len());
    for finding in findings {
        let mut start = finding.span.start;
        for p in placeholders {
            if p.end <= start || p.start >= finding.span.end {
                continue;
            }
            if p.start > start {
                out.push(Finding {
                    span: start..p.start,
                    rule: finding.rule,
                });
            }
            start = start.max(p.end);
        }
        if start < finding.span.end {
            out.push(Finding {
                span: start..finding.span.end,
                rule: finding.rule,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_compiles_and_fits_the_candidate_bit_set() {
        assert!(RULES.len() < 64);
        assert_eq!(matcher().rules.len(), RULES.len());
        for compiled in &matcher().rules {
            compiled.patterns();
        }
    }

    #[test]
    fn only_the_rules_a_text_calls_for_are_compiled() {
        let matcher = Matcher::new(RULES);
        let compiled = |m: &Matcher| {
            m.rules
                .iter()
                .filter(|c| c.patterns.get().is_some())
                .count()
        };
        assert!(matcher.find(b"hello, world").is_empty());
        assert_eq!(compiled(&matcher), 0);
        let found = matcher.find(b"key: AKIAIOSFODNN7EXAMPLQ");
        assert_eq!(found.len(), 1, "{found:?}");
        assert!((1..RULES.len()).contains(&compiled(&matcher)));
    }

    #[test]
    fn placeholder_parts_of_a_finding_are_cut_out() {
        let f = |s: Range<usize>| Finding { span: s, rule: "r" };
        let cut = outside(vec![f(0..10), f(12..14)], &[2..4, 8..12]);
        assert_eq!(cut, vec![f(0..2), f(4..8), f(12..14)]);
    }
}
