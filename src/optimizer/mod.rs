//! The context optimizer: session records in, a compact, provenance-tagged context out.
//!
//! Stages run in a fixed order, each a pure function in its own module:
//! [`normalize`] → [`dedupe`] (and [`supersede`]) → [`extract`] → [`score`] → [`select`]
//! → [`render`], and [`assemble`] gathers the figures. What dedupe and superseding find
//! about a unit is gathered in one [`analysis::UnitAnalysis`] per unit; units and fragments
//! are addressed by [`fragment::UnitIx`] and [`fragment::FragmentIx`]. Identical input and config give
//! byte-identical output: nothing reads the clock, draws random numbers or iterates a hash
//! map into the output.

pub(crate) mod analysis;
pub(crate) mod assemble;
pub(crate) mod chunk;
pub(crate) mod condense;
pub(crate) mod dedupe;
pub(crate) mod excerpt;
pub(crate) mod extract;
pub(crate) mod files_in_play;
pub(crate) mod fragment;
#[cfg(test)]
mod invariants;
#[cfg(test)]
mod losses;
pub(crate) mod mandatory;
pub(crate) mod normalize;
pub mod output;
pub(crate) mod parallel;
pub mod parse;
pub(crate) mod regions;
pub(crate) mod render;
pub mod score;
pub(crate) mod select;
pub(crate) mod supersede;
mod tokens;
pub(crate) mod working_set;
pub(crate) mod working_state;
pub(crate) mod workspace;

pub use crate::records::Records;
pub use output::{
    BuildOutput, BuildReport, DropReason, OmittedFragment, ScoreComponent, Signal, SourceFragment,
    Stats,
};
pub use score::Weights;

use crate::tokenizer::Tokenizer;

/// The default token budget of a build.
pub const DEFAULT_BUDGET: usize = 4000;

/// A task longer than the budget over this is cut into parts: its first part and the parts
/// that show an error stay mandatory, the rest competes by score (see `docs/scoring.md`).
const WHOLE_TASK_SHARE: usize = 3;

/// The default least relevance (sum of the content signals' contributions) a fragment
/// needs to fill the budget with.
pub(crate) const DEFAULT_MIN_RELEVANCE: f64 = 1.0;

/// The pipeline's version, written into every report.
pub(crate) const PIPELINE_VERSION: &str =
    concat!("ctxopt-optimizer/", env!("CARGO_PKG_VERSION"), "+1");

/// How to build a context.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildConfig {
    /// The token budget for the rendered context.
    pub budget: usize,
    /// Overrides the records' task when set.
    pub task: Option<String>,
    /// The tokenizer for every count.
    pub tokenizer: Tokenizer,
    /// The scoring weights.
    pub weights: Weights,
    /// The least relevance a non-mandatory fragment needs to be selected.
    pub min_relevance: f64,
    /// Threads for token counting (0: as many as the machine has, at most 8). The output
    /// never depends on it.
    pub threads: usize,
    /// A restore: the model has lost where it was working. Renders the files in play (the
    /// files the session read, changed or ran commands on, the latest first) as a section of
    /// their own, after what the session is doing now (see `docs/scoring.md`, "Files in
    /// play"), and gives the output of the session's latest command a part in the working
    /// state (which a model that still has its window has seen last). Off by default; the
    /// hook's restore after a compaction turns it on.
    pub files_in_play: bool,
    /// What the model already has in its window, as text (a restore's: the client's own
    /// summary of the compacted conversation). The files in play it names are listed after
    /// those it does not name, so the index spends its share on what the model lacks. Not
    /// part of the configuration's hash.
    pub in_window: Option<String>,
    /// The most characters the rendered context may take (a hook's answer: what the client
    /// shows inline). A selection whose text is over it is made again at a smaller budget
    /// (the budget scaled by the limit over the text's length, a little under; the scores
    /// kept; at most [`MAX_REFITS`] times), so what does not fit is left out by score, not cut
    /// from the end. None: no limit.
    pub max_chars: Option<usize>,
}

/// How many times a selection over [`BuildConfig::max_chars`] is made again.
pub const MAX_REFITS: usize = 3;

impl Default for BuildConfig {
    fn default() -> Self {
        BuildConfig {
            budget: DEFAULT_BUDGET,
            task: None,
            tokenizer: Tokenizer::O200kBase,
            weights: Weights::default(),
            min_relevance: DEFAULT_MIN_RELEVANCE,
            threads: 0,
            files_in_play: false,
            in_window: None,
            max_chars: None,
        }
    }
}

/// What can go wrong in a build.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OptimizerError {
    /// The records failed validation; the message names the place (`errors[3].message: …`).
    #[error("{0}")]
    Invalid(String),
}

/// The titles of the headings a built context's sections can have (`## Files in play`
/// included), so that a reader of the text can tell a heading from a line of content.
pub(crate) fn section_titles() -> impl Iterator<Item = &'static str> {
    render::Section::ALL
        .iter()
        .map(|s| s.title())
        .chain(std::iter::once(files_in_play::TITLE))
}

/// Builds a context from `records` under `config`. Pure: identical input and config give
/// byte-identical output.
pub fn build(records: &Records, config: &BuildConfig) -> Result<BuildOutput, OptimizerError> {
    // A task over a share of the budget is cut into parts (see `docs/scoring.md`).
    let cut_task = |task: &str| config.tokenizer.count(task) > config.budget / WHOLE_TASK_SHARE;
    let (units, mut fragments) =
        normalize::normalize_on(records, config.task.as_deref(), &cut_task, config.threads)?;
    let mut deduped = dedupe::dedupe(&units, config.threads);
    let outcomes = extract::outcomes(&units, config.threads);
    supersede::supersede(&units, &outcomes, &mut deduped);
    let merges = std::mem::take(&mut deduped.merges);
    let analyses = analysis::analyse(&units, deduped, &outcomes);
    let counts = tokens::count(&units, &mut fragments, config.tokenizer, config.threads);
    let features = extract::extract(&units, &fragments, &analyses, config.threads);
    let focus = score::focus(&units, &features, &analyses);
    let mut state = working_state::working_state(&units, &analyses, config.files_in_play);
    let recency = score::Recency::new(&units, &state.steps_after);
    let indices: Vec<usize> = (0..fragments.len()).collect();
    let mut scores: Vec<Option<score::Scored>> =
        parallel::par_map(&indices, config.threads, |&fi| {
            let f = &fragments[fi];
            let analysis = &analyses[f.unit];
            analysis.is_live().then(|| {
                score::score(
                    &config.weights,
                    &focus,
                    &units,
                    f,
                    &features[fi],
                    analysis,
                    &recency,
                )
            })
        });
    let attention = working_set::attention(&units, &features, &analyses);
    let places = regions::Places::of(&units, &fragments, &analyses);
    let leads = working_set::apply(
        config.weights.working_set,
        &units,
        &fragments,
        &attention,
        &places,
        &mut scores,
        config.budget,
    );
    let state_leads = working_state::apply(
        config.weights.working_state,
        &mut state,
        &fragments,
        &places,
        &mut scores,
        config.budget,
    );
    let current: Vec<bool> = analyses.iter().map(|a| a.current_change).collect();
    let change_leads = select::current_change_leads(&units, &fragments, &current, config.budget);
    let mut candidates = Vec::new();
    for (fi, (f, s)) in fragments.iter().zip(&scores).enumerate() {
        let Some(s) = s else { continue };
        let unit = &units[f.unit];
        candidates.push(select::Candidate {
            placed: render::Placed {
                section: render::Section::of(unit, &features[fi], state.roles[f.unit.0]),
                order: unit.order,
                chunk: f.chunk,
                fragment: fragment::FragmentIx(fi),
            },
            mandatory: mandatory::is_mandatory(unit, f, &features[fi], &focus, f.unit),
            score: s.total,
            // System messages are the agent's standing instructions, which it already has:
            // they never fill the budget.
            eligible: unit.role != Some(crate::records::Role::System)
                && (s.relevance >= config.min_relevance
                    || s.linked
                    || features[fi].rare_signature
                    || f.excerpt
                    || (unit.role == Some(crate::records::Role::User) && s.relevance > 0.0)),
            current_change: change_leads[fi],
            working_set: leads.contains(&fi) || state_leads.contains(&fi),
            // What the session read of its files, then what its tools printed: what budget
            // is left after everything else goes to them.
            leftover: matches!(
                unit.kind,
                crate::records::Kind::File | crate::records::Kind::ToolOutput
            ),
        });
    }
    let index = config
        .files_in_play
        .then(|| {
            files_in_play::index(
                &units,
                config.budget,
                config.tokenizer,
                config.in_window.as_deref(),
            )
        })
        .flatten();
    let index = index
        .as_deref()
        .map(|text| (text, config.tokenizer.count(text) + 1));
    let select_at = |budget| {
        select::select(
            &units,
            &fragments,
            &analyses,
            &candidates,
            budget,
            config.tokenizer,
            index,
        )
    };
    let mut budget = config.budget;
    let mut selection = select_at(budget);
    for _ in 0..MAX_REFITS {
        let chars = selection.context.chars().count();
        match config.max_chars {
            Some(max) if chars > max && budget > 1 => {
                // Characters per token hold roughly from one selection to the next: aim a
                // little under the limit.
                let scaled = budget as f64 * max as f64 / chars as f64 * 0.95;
                budget = (scaled as usize).clamp(1, budget - 1);
                selection = select_at(budget);
            }
            _ => break,
        }
    }
    Ok(assemble::assemble(assemble::Parts {
        config,
        units: &units,
        fragments: &fragments,
        analyses: &analyses,
        merges: &merges,
        candidates: &candidates,
        scores: &scores,
        selection,
        input_tokens: counts.input_tokens,
    }))
}
