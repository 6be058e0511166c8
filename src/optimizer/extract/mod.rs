//! Stage 3, extract: the facts the scorer and the selector work with, read from each
//! fragment's text by small scanners, one family per module.

pub(crate) mod definitions;
pub(crate) mod failing_tests;
pub(crate) mod frames;
pub(crate) mod imports;
pub(crate) mod outcomes;
pub(crate) mod paths;
pub(crate) mod requirements;
pub(crate) mod signatures;
pub(crate) mod symbols;
pub(crate) mod terms;

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::excerpt;
use crate::optimizer::fragment::{index_by, Fragment, FragmentIx, Unit};
use crate::optimizer::parallel::par_map;
use crate::records::Kind;
use crate::records::TestStatus;

pub(crate) use outcomes::Outcome;

/// What one fragment says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Features {
    /// Paths (normalized) and code symbols, lowercased, sorted, without repeats.
    pub(crate) identifiers: Vec<String>,
    /// Stack frames.
    pub(crate) frames: Vec<frames::Frame>,
    /// Error signature keys, sorted, without repeats.
    pub(crate) signatures: Vec<String>,
    /// Failing test names.
    pub(crate) failing_tests: Vec<String>,
    /// How many requirement sentences it states.
    pub(crate) requirements: usize,
    /// How many lines are evidence of failure.
    pub(crate) failure_lines: usize,
    /// Whether one of its signatures is rare within its record (in at most
    /// [`RARE_SIGNATURE`] of the record's fragments): a one-off error in a long log, not
    /// the noise that repeats all through it.
    pub(crate) rare_signature: bool,
}

index_by!(FragmentIx, Features);

/// The most fragments of one record a signature may appear in and still be rare.
pub(crate) const RARE_SIGNATURE: usize = 2;

impl Features {
    /// Whether the fragment shows an error: a signature, a frame or a failing test.
    pub(crate) fn shows_error(&self) -> bool {
        !self.signatures.is_empty() || !self.frames.is_empty() || !self.failing_tests.is_empty()
    }
}

/// Extracts the features of one piece of text.
pub(crate) fn features(text: &str) -> Features {
    let mut identifiers: Vec<String> = paths::paths(text)
        .into_iter()
        .map(|p| p.to_lowercase())
        .chain(symbols::symbols(text).into_iter().map(str::to_lowercase))
        .collect();
    identifiers.sort_unstable();
    identifiers.dedup();
    let mut signatures: Vec<String> = signatures::signatures(text)
        .iter()
        .map(|s| s.key())
        .collect();
    signatures.sort_unstable();
    signatures.dedup();
    Features {
        identifiers,
        frames: frames::frames(text),
        signatures,
        failing_tests: failing_tests::failing_tests(text),
        requirements: requirements::requirements(text).len(),
        failure_lines: outcomes::failure_lines(text),
        rare_signature: false,
    }
}

/// The features of every fragment of a live unit, in fragment order (dropped units'
/// fragments get empty features), on `threads` threads.
pub(crate) fn extract(
    units: &[Unit],
    fragments: &[Fragment],
    analyses: &[UnitAnalysis],
    threads: usize,
) -> Vec<Features> {
    let mut features: Vec<Features> = par_map(fragments, threads, |f| {
        match (analyses[f.unit].is_live(), f.excerpt) {
            (false, _) => Features::default(),
            (true, false) => features(f.text(units)),
            (true, true) => features(&excerpt::plain(f.text(units))),
        }
    });
    mark_rare(units, fragments, &mut features);
    features
}

/// Marks the fragments holding a signature that is rare within their record (counted over
/// its chunks: an excerpt repeats their lines).
fn mark_rare(units: &[Unit], fragments: &[Fragment], features: &mut [Features]) {
    for unit in units {
        let range = unit.fragments.clone();
        let mut counts: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (f, ft) in fragments[range.clone()]
            .iter()
            .zip(&features[range.clone()])
        {
            if f.excerpt {
                continue;
            }
            for s in &ft.signatures {
                *counts.entry(s.as_str()).or_default() += 1;
            }
        }
        let rare: Vec<bool> = features[range.clone()]
            .iter()
            .map(|f| {
                f.signatures
                    .iter()
                    .any(|s| counts.get(s.as_str()).map_or(0, |&n| n) <= RARE_SIGNATURE)
            })
            .collect();
        for (f, r) in features[range].iter_mut().zip(rare) {
            f.rare_signature = r;
        }
    }
}

/// The outcome of every unit, on `threads` threads: runs from exit codes and markers, test
/// results from their status; other records have no outcome.
pub(crate) fn outcomes(units: &[Unit], threads: usize) -> Vec<Outcome> {
    par_map(units, threads, |u| match (u.kind, u.test_status) {
        (Kind::ToolOutput, _) => outcomes::run_outcome(u.exit_code, &u.text),
        (Kind::TestResult, Some(TestStatus::Passed)) => Outcome::Passed,
        (Kind::TestResult, Some(TestStatus::Failed)) => Outcome::Failed,
        _ => Outcome::Unknown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_of_a_node_failure() {
        let f = features("FAIL src/billing.test.ts > rounds\nTypeError: x is undefined\n    at computeTotal (src/billing.ts:42:7)");
        assert!(f.identifiers.contains(&"src/billing.ts".to_string()));
        assert!(f.identifiers.contains(&"computetotal".to_string()));
        assert_eq!(f.signatures, vec!["TypeError: x is undefined"]);
        assert_eq!(f.failing_tests, vec!["src/billing.test.ts > rounds"]);
        assert_eq!(f.frames.len(), 1);
        assert!(f.failure_lines >= 1);
        assert!(f.shows_error());
    }

    #[test]
    fn plain_prose_has_no_features() {
        let f = features("Sounds good, thanks!");
        assert_eq!(f, Features::default());
        assert!(!f.shows_error());
    }
}
