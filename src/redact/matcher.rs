//! The compiled rule table: an Aho-Corasick pass over every rule's keywords picks the rules
//! that can match at all, and only those run their own pattern. Text without any keyword
//! (nearly every frame) costs one Aho-Corasick scan.
//!
//! A rule whose matches start at one of its keywords, or at the key name that holds it
//! ([`Starts`]), runs its pattern, anchored, only at the starts its keyword hits allow, not
//! over the whole text: tool lists are full of `token`, `auth` and `secret`, and those
//! rules' patterns over whole frames were most of redaction's cost. It finds what a search of the whole text finds
//! ([`Matcher::find_by_whole_text_search`], which a test and the fuzz target compare it with).
//!
//! Patterns are compiled without Unicode (secrets are ASCII; `(?i)` folds ASCII only, `\s`
//! and classes are ASCII) and each on its own: one automaton for all rules at once was
//! larger than its cache on real tool lists and fell back to a slow engine, at eight times
//! the tap's own CPU per frame (`cargo bench --bench redaction`).

use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickKind};
use regex::bytes::{Captures, Regex, RegexBuilder};

use super::escape::widen_to_escapes;
use super::rules::{Rule, Starts, RULES};

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

/// A rule and its patterns, each compiled the first time it is needed (a process that
/// redacts a few texts compiles the few rules they call for).
struct Compiled {
    rule: &'static Rule,
    pattern: OnceLock<Regex>,
    /// The pattern anchored at the start of the text (rules that start at a keyword hit).
    anchored: OnceLock<Regex>,
    allow: OnceLock<Option<Regex>>,
}

impl Compiled {
    /// The rule's pattern, to search a whole text.
    fn pattern(&self) -> &Regex {
        self.pattern.get_or_init(|| ascii(self.rule.pattern))
    }

    /// The rule's pattern, to match at the start of a text.
    fn anchored(&self) -> &Regex {
        self.anchored
            .get_or_init(|| ascii(&format!("^(?:{})", self.rule.pattern)))
    }

    /// The rule's allowlist.
    fn allow(&self) -> Option<&Regex> {
        self.allow
            .get_or_init(|| self.rule.allow.map(ascii))
            .as_ref()
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

/// The keywords found in a text: the rules they call for, and where each hit of a rule
/// that starts at its keyword hits begins.
struct KeywordHits {
    /// The rules whose keywords occur, as a bit set.
    rules: u64,
    /// (rule, start of the keyword) for the rules that start at their keyword hits, sorted.
    starts: Vec<(usize, usize)>,
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
                pattern: OnceLock::new(),
                anchored: OnceLock::new(),
                allow: OnceLock::new(),
            })
            .collect();
        Matcher {
            keywords,
            keyword_rule,
            rules,
            placeholder: ascii(PLACEHOLDER_PATTERN),
        }
    }

    /// The keywords in `text`.
    fn keyword_hits(&self, text: &[u8]) -> KeywordHits {
        let mut hits = KeywordHits {
            rules: 0,
            starts: Vec::new(),
        };
        for hit in self.keywords.find_overlapping_iter(text) {
            let rule = self.keyword_rule[hit.pattern().as_usize()];
            hits.rules |= 1 << rule;
            if self.rules[rule].rule.starts != Starts::Anywhere {
                hits.starts.push((rule, hit.start()));
            }
        }
        hits.starts.sort_unstable();
        hits.starts.dedup();
        hits
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
        self.search(text, false)
    }

    /// What [`Matcher::find`] finds, by running every candidate rule's pattern over the
    /// whole text: the reference that its search at the keyword hits is checked against.
    pub fn find_by_whole_text_search(&self, text: &[u8]) -> Vec<Finding> {
        self.search(text, true)
    }

    fn search(&self, text: &[u8], whole_text: bool) -> Vec<Finding> {
        let hits = self.keyword_hits(text);
        if hits.rules == 0 {
            return Vec::new();
        }
        let mut found = Vec::new();
        for (index, compiled) in self.rules.iter().enumerate() {
            if hits.rules & (1 << index) == 0 {
                continue;
            }
            let matches = match compiled.rule.starts {
                starts if whole_text || starts == Starts::Anywhere => {
                    whole_text_matches(compiled.pattern(), text)
                }
                starts => {
                    let at = hits
                        .starts
                        .iter()
                        .filter(|(rule, _)| *rule == index)
                        .map(|(_, start)| *start);
                    matches_at_keyword_hits(compiled.anchored(), text, at, starts)
                }
            };
            for (offset, caps) in matches {
                let whole = caps.get(0).expect("group 0 always takes part");
                if compiled
                    .allow()
                    .is_some_and(|a| a.is_match(whole.as_bytes()))
                {
                    continue;
                }
                let secret = caps.iter().skip(1).flatten().next().unwrap_or(whole);
                if secret.is_empty() {
                    continue;
                }
                let span = offset + secret.start()..offset + secret.end();
                found.push(Finding {
                    span: widen_to_escapes(text, span),
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

/// A match and the offset in the text of the slice it was found in.
type Located<'t> = (usize, Captures<'t>);

/// `regex`'s matches over the whole of `text`.
fn whole_text_matches<'t>(regex: &Regex, text: &'t [u8]) -> Vec<Located<'t>> {
    regex.captures_iter(text).map(|caps| (0, caps)).collect()
}

/// The matches of `anchored` (a pattern matched at the start of a slice) at the starts the
/// keyword hits `at` (ascending) allow: the matches a search of the whole text finds,
/// since every such match holds a keyword and starts where [`starts_for_hit`] says. Like
/// that search, it goes on after the end of each match; each start is tried once.
fn matches_at_keyword_hits<'t>(
    anchored: &Regex,
    text: &'t [u8],
    at: impl Iterator<Item = usize>,
    starts: Starts,
) -> Vec<Located<'t>> {
    let mut out = Vec::new();
    // Where a search of the whole text would go on from.
    let mut from = 0;
    let mut tried: Option<usize> = None;
    let mut last: Option<Previous> = None;
    for hit in at {
        if hit < from {
            continue;
        }
        let previous = last.filter(|p| p.from == from);
        let candidates = starts_for_hit(text, hit, from, starts, previous);
        last = Some(Previous {
            hit,
            from,
            candidates,
        });
        for start in candidates.into_iter().flatten() {
            if start < from || tried.is_some_and(|t| start <= t) {
                continue;
            }
            tried = Some(start);
            if let Some(caps) = anchored.captures(&text[start..]) {
                let end = caps.get(0).expect("group 0 always takes part").end();
                from = start + end.max(1);
                out.push((start, caps));
                break;
            }
        }
    }
    out
}

/// The starts a keyword hit allowed, remembered for the next hit of the same key name.
#[derive(Debug, Clone, Copy)]
struct Previous {
    hit: usize,
    from: usize,
    candidates: [Option<usize>; 2],
}

/// A byte of a key name.
fn is_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || is_separator(b)
}

/// A byte that may follow a run of a key name once.
fn is_separator(b: u8) -> bool {
    b == b'_' || b == b'-'
}

/// Where a match holding the keyword that begins at `hit` can start, not before `from`
/// (ascending, at most two). [`Starts::AtKeyword`]: the hit. [`Starts::KeyName`]: the leftmost letter or digit from which
/// the key name reaches the keyword with no two separators in a row (a match from any
/// later start would also be one from it). [`Starts::QuotedKeyName`]: the `\"` and the `"`
/// right before the run of name bytes the keyword is in. `previous` (a hit before this one,
/// found with the same `from`) saves scanning a long name twice.
fn starts_for_hit(
    text: &[u8],
    hit: usize,
    from: usize,
    starts: Starts,
    previous: Option<Previous>,
) -> [Option<usize>; 2] {
    let floor = previous.map_or(from, |p| p.hit.max(from));
    let mut at = hit;
    match starts {
        Starts::Anywhere => [None, None],
        Starts::AtKeyword => [Some(hit), None],
        Starts::KeyName => {
            let mut leftmost = hit;
            while at > floor {
                let byte = text[at - 1];
                if !is_name_byte(byte) || (is_separator(byte) && is_separator(text[at])) {
                    return [Some(leftmost), None];
                }
                at -= 1;
                if byte.is_ascii_alphanumeric() {
                    leftmost = at;
                }
            }
            match previous {
                Some(p) if p.hit == at => p.candidates,
                _ => [Some(leftmost), None],
            }
        }
        Starts::QuotedKeyName => {
            while at > floor && is_name_byte(text[at - 1]) {
                at -= 1;
            }
            match previous {
                Some(p) if p.hit == at => p.candidates,
                _ => [
                    (at >= from + 2 && &text[at - 2..at] == b"\\\"").then(|| at - 2),
                    (at > from && text[at - 1] == b'"').then(|| at - 1),
                ],
            }
        }
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
            compiled.pattern();
            compiled.anchored();
            compiled.allow();
        }
    }

    #[test]
    fn only_the_rules_a_text_calls_for_are_compiled() {
        let matcher = Matcher::new(RULES);
        let compiled = |m: &Matcher| {
            m.rules
                .iter()
                .filter(|c| c.pattern.get().is_some() || c.anchored.get().is_some())
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
