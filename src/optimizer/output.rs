//! What a build returns: the context, its sources, what was left out and why, and figures.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a fragment was left out of the context.
///
/// Serializes to its snake-case name (`near_duplicate`); the variants are declared in the
/// order of those names, so sorting by reason sorts by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropReason {
    /// It did not fit in the budget.
    Budget,
    /// An excerpt whose lines the kept chunks of its record show.
    Covered,
    /// An exact duplicate of a later record.
    Duplicate,
    /// Not relevant enough to fill the budget with.
    LowRelevance,
    /// Its content is almost all in a later record of the same kind.
    NearDuplicate,
    /// An earlier run of a command run again later.
    RepeatedRun,
    /// A later record replaced it (a newer file snapshot, a fix, a passing run).
    Superseded,
}

impl DropReason {
    /// Every reason, in name order (the tests check each).
    #[cfg(test)]
    pub(crate) const ALL: [DropReason; 7] = [
        DropReason::Budget,
        DropReason::Covered,
        DropReason::Duplicate,
        DropReason::LowRelevance,
        DropReason::NearDuplicate,
        DropReason::RepeatedRun,
        DropReason::Superseded,
    ];

    /// The reason's name in `omitted` and the report's omission counts.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::Budget => "budget",
            DropReason::Covered => "covered",
            DropReason::Duplicate => "duplicate",
            DropReason::LowRelevance => "low_relevance",
            DropReason::NearDuplicate => "near_duplicate",
            DropReason::RepeatedRun => "repeated_run",
            DropReason::Superseded => "superseded",
        }
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A scoring signal (see `docs/scoring.md`). Serializes to its snake-case name
/// (`lexical_overlap`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Signal {
    /// Share of the task's terms the fragment contains.
    LexicalOverlap,
    /// Identifiers (paths, symbols) shared with the task and the errors it is about.
    IdentifierMatch,
    /// The fragment shows an error, above all one the task is about.
    ErrorRelevance,
    /// A decision in force or an explicit requirement.
    ConstraintDecision,
    /// Evidence of a failed attempt.
    FailedAttempt,
    /// Newer is better.
    Recency,
    /// Who said it.
    Role,
    /// Content that largely recurs in a later record.
    Redundancy,
    /// The caller's priority.
    Priority,
    /// The files the session keeps coming back to.
    WorkingSet,
    /// The session's working state: its latest instruction, plan, statement or an open
    /// problem.
    WorkingState,
}

impl Signal {
    /// Every signal, in the order a score lists its components (the tests check each).
    #[cfg(test)]
    pub(crate) const ALL: [Signal; 11] = [
        Signal::LexicalOverlap,
        Signal::IdentifierMatch,
        Signal::ErrorRelevance,
        Signal::ConstraintDecision,
        Signal::FailedAttempt,
        Signal::Recency,
        Signal::Role,
        Signal::Redundancy,
        Signal::Priority,
        Signal::WorkingSet,
        Signal::WorkingState,
    ];

    /// The signal's name in a score's components.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::LexicalOverlap => "lexical_overlap",
            Signal::IdentifierMatch => "identifier_match",
            Signal::ErrorRelevance => "error_relevance",
            Signal::ConstraintDecision => "constraint_decision",
            Signal::FailedAttempt => "failed_attempt",
            Signal::Recency => "recency",
            Signal::Role => "role",
            Signal::Redundancy => "redundancy",
            Signal::Priority => "priority",
            Signal::WorkingSet => "working_set",
            Signal::WorkingState => "working_state",
        }
    }

    /// Whether the signal is a content signal: part of a fragment's relevance, how much it
    /// is *about* something that matters (lexical, identifier, error, constraint, failed
    /// attempt, working set), as opposed to when, from whom and how redundant it is.
    pub(crate) fn is_relevance(self) -> bool {
        matches!(
            self,
            Signal::LexicalOverlap
                | Signal::IdentifierMatch
                | Signal::ErrorRelevance
                | Signal::ConstraintDecision
                | Signal::FailedAttempt
                | Signal::WorkingSet
                | Signal::WorkingState
        )
    }
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One signal's part in a fragment's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreComponent {
    /// The signal.
    pub signal: Signal,
    /// The signal's value for this fragment, usually in 0..=1.
    pub value: f64,
    /// The configured weight.
    pub(crate) weight: f64,
    /// `value * weight`.
    pub(crate) contribution: f64,
    /// Why the signal has its value, where a sentence says more than the number (the
    /// working state's role).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) reason: Option<String>,
}

/// A fragment kept in the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceFragment {
    /// The fragment id (`fr_` + content hash prefix), as in the context's source tags.
    pub id: String,
    /// The id of the input record it came from.
    pub record: String,
    /// The record's kind (`message`, `toolOutput`, `error`, `file`, `diff`, `testResult`, `decision`, `task`).
    pub kind: String,
    /// The file path, when the fragment is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The section of the context it was rendered into.
    pub section: String,
    /// Whether it was kept as mandatory.
    pub(crate) mandatory: bool,
    /// Its tokens as rendered.
    pub tokens: usize,
    /// Its total score.
    pub score: f64,
    /// The score's components.
    pub(crate) components: Vec<ScoreComponent>,
}

/// A fragment left out of the context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OmittedFragment {
    /// The fragment id.
    pub id: String,
    /// The id of the input record it came from.
    pub record: String,
    /// The record's kind.
    pub kind: String,
    /// Why it was left out.
    pub reason: DropReason,
    /// What superseded or absorbed it, when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) superseded_by: Option<String>,
    /// Its tokens.
    pub tokens: usize,
    /// Its score, when it was scored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// A sentence saying what happened (what it duplicates, what superseded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// How a build went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildReport {
    /// The pipeline's version.
    pub(crate) pipeline_version: String,
    /// sha256 of the canonical JSON of the configuration.
    pub(crate) config_hash: String,
    /// The tokenizer every count used.
    pub tokenizer: String,
    /// The token budget.
    pub budget: usize,
    /// Warnings, such as `BUDGET_CONFLICT: …`.
    pub warnings: Vec<String>,
    /// Every merge dedupe made, explained.
    pub(crate) merges: Vec<String>,
    /// Omission counts by reason, sorted by reason.
    pub(crate) omissions: Vec<(DropReason, usize)>,
}

/// Token figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Tokens of all input records' text.
    pub(crate) input_tokens: usize,
    /// Tokens of the rendered context.
    pub(crate) output_tokens: usize,
    /// `1 - output/input` (0 when the input is empty).
    pub reduction: f64,
}

/// The whole result of a build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildOutput {
    /// The rendered context.
    pub context: String,
    /// The fragments kept, in render order.
    pub sources: Vec<SourceFragment>,
    /// The fragments left out.
    pub omitted: Vec<OmittedFragment>,
    /// How the build went.
    pub report: BuildReport,
    /// Token figures.
    pub stats: Stats,
}

#[cfg(test)]
mod tests {
    use std::fmt::{Debug, Display};

    use serde::de::DeserializeOwned;

    use super::*;

    /// Checks that every value serializes to its name (a JSON string) and back, and
    /// displays as its name; returns the names.
    fn names<T>(all: &[T], name: fn(T) -> &'static str) -> Vec<&'static str>
    where
        T: Copy + Debug + Display + PartialEq + Serialize + DeserializeOwned,
    {
        for &value in all {
            let json = serde_json::to_string(&value).unwrap();
            assert_eq!(json, format!("\"{}\"", name(value)));
            assert_eq!(value.to_string(), name(value));
            assert_eq!(serde_json::from_str::<T>(&json).unwrap(), value);
        }
        all.iter().map(|&v| name(v)).collect()
    }

    #[test]
    fn drop_reasons_serialize_to_their_names_and_back() {
        assert_eq!(
            names(&DropReason::ALL, DropReason::as_str),
            [
                "budget",
                "covered",
                "duplicate",
                "low_relevance",
                "near_duplicate",
                "repeated_run",
                "superseded"
            ]
        );
        let mut sorted = DropReason::ALL;
        sorted.sort_by_key(|r| r.as_str());
        assert_eq!(sorted, DropReason::ALL, "reasons sort by name");
    }

    #[test]
    fn signals_serialize_to_their_names_and_back() {
        assert_eq!(
            names(&Signal::ALL, Signal::as_str),
            [
                "lexical_overlap",
                "identifier_match",
                "error_relevance",
                "constraint_decision",
                "failed_attempt",
                "recency",
                "role",
                "redundancy",
                "priority",
                "working_set",
                "working_state"
            ]
        );
        let relevance: Vec<Signal> = Signal::ALL
            .into_iter()
            .filter(|s| s.is_relevance())
            .collect();
        assert_eq!(
            relevance,
            [
                Signal::LexicalOverlap,
                Signal::IdentifierMatch,
                Signal::ErrorRelevance,
                Signal::ConstraintDecision,
                Signal::FailedAttempt,
                Signal::WorkingSet,
                Signal::WorkingState
            ]
        );
    }
}
