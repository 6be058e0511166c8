//! What a build returns: the context, its sources, what was left out and why, and figures.

use serde::{Deserialize, Serialize};

/// One signal's part in a fragment's score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreComponent {
    /// The signal's name (`lexical_overlap`, `identifier_match`, …).
    pub signal: String,
    /// The signal's value for this fragment, usually in 0..=1.
    pub value: f64,
    /// The configured weight.
    pub weight: f64,
    /// `value * weight`.
    pub contribution: f64,
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
    pub mandatory: bool,
    /// Its tokens as rendered.
    pub tokens: usize,
    /// Its total score.
    pub score: f64,
    /// The score's components.
    pub components: Vec<ScoreComponent>,
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
    /// Why it was left out (`duplicate`, `near_duplicate`, `superseded`, `budget`, …).
    pub reason: String,
    /// What superseded or absorbed it, when something did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub superseded_by: Option<String>,
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
    pub pipeline_version: String,
    /// sha256 of the canonical JSON of the configuration.
    pub config_hash: String,
    /// The tokenizer every count used.
    pub tokenizer: String,
    /// The token budget.
    pub budget: usize,
    /// Warnings, such as `BUDGET_CONFLICT: …`.
    pub warnings: Vec<String>,
    /// Every merge dedupe made, explained.
    pub merges: Vec<String>,
    /// Omission counts by reason, sorted by reason.
    pub omissions: Vec<(String, usize)>,
}

/// Token figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Tokens of all input records' text.
    pub input_tokens: usize,
    /// Tokens of the rendered context.
    pub output_tokens: usize,
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
