//! What the benchmark measures for one strategy on one scenario.
//!
//! - **tokens in / out**: tokens of strategy A's context (the whole session, rendered) and
//!   of the strategy's context; **reduction** is `1 - out / in`.
//! - **facts**: required facts (exact strings) found in the context.
//! - **precision**: of the kept records that carry a label, the share labelled relevant
//!   (`|kept ∩ relevant| / |kept ∩ (relevant ∪ irrelevant)|`); unlabelled records do not
//!   count either way. **recall**: `|kept ∩ relevant| / |relevant|`.
//! - **budget**: the context's tokens are within the budget, or — only in a scenario whose
//!   mandatory content cannot fit (`expect_budget_conflict`) — the strategy reported
//!   `BUDGET_CONFLICT`.
//! - **attribution**: every `[source: …]` tag in the context names an input record
//!   (`record ID` with a known id, or `task`), and every `fr_…` fragment id it names is one
//!   of the strategy's reported sources.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::scenario::{record_ids, Scenario};
use super::strategy::Run;
use crate::tokenizer::Tokenizer;

/// The figures of one strategy on one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Tokens of the whole session, rendered (strategy A's context).
    pub(crate) tokens_in: usize,
    /// Tokens of the context.
    pub(crate) tokens_out: usize,
    /// `1 - tokens_out / tokens_in`.
    pub reduction: f64,
    /// Required facts found in the context.
    pub facts_retained: usize,
    /// Required facts in the scenario.
    pub facts_total: usize,
    /// The facts the context misses.
    pub facts_missing: Vec<String>,
    /// Share of labelled kept records that are relevant (`None` when no labelled record
    /// was kept).
    pub precision: Option<f64>,
    /// Share of relevant records kept (`None` when none is labelled relevant).
    pub recall: Option<f64>,
    /// Relevant records the context left out.
    pub relevant_missing: Vec<String>,
    /// Irrelevant records the context kept.
    pub irrelevant_kept: Vec<String>,
    /// Whether the context's tokens are within the budget.
    pub within_budget: bool,
    /// Whether `BUDGET_CONFLICT` was reported.
    pub conflict_reported: bool,
    /// Budget compliance: within budget, or a conflict reported where one is expected.
    pub budget_ok: bool,
    /// Source tags in the context.
    pub tags_total: usize,
    /// Source tags that resolve to an input record.
    pub tags_resolved: usize,
    /// Whether there are tags and every one resolves.
    pub attribution_ok: bool,
    /// Wall time of the strategy, in milliseconds.
    pub(crate) millis: f64,
}

/// Measures `run` against `scenario`; `tokens_in` is the raw context's token count.
pub fn measure(scenario: &Scenario, run: &Run, tokens_in: usize, tokenizer: Tokenizer) -> Metrics {
    let tokens_out = tokenizer.count(&run.context);
    let facts_missing: Vec<String> = scenario
        .required_facts
        .iter()
        .filter(|f| !run.context.contains(f.as_str()))
        .cloned()
        .collect();
    let (precision, recall) = precision_recall(&run.kept, &scenario.relevant, &scenario.irrelevant);
    let within_budget = tokens_out <= scenario.budget;
    let known: BTreeSet<&str> = record_ids(&scenario.records)
        .into_iter()
        .flatten()
        .chain(std::iter::once("task"))
        .collect();
    let (tags_total, tags_resolved) = attribution(&run.context, &known, &run.fragment_ids);
    Metrics {
        tokens_in,
        tokens_out,
        reduction: if tokens_in == 0 {
            0.0
        } else {
            1.0 - tokens_out as f64 / tokens_in as f64
        },
        facts_retained: scenario.required_facts.len() - facts_missing.len(),
        facts_total: scenario.required_facts.len(),
        facts_missing,
        precision,
        recall,
        relevant_missing: scenario
            .relevant
            .iter()
            .filter(|id| !run.kept.contains(*id))
            .cloned()
            .collect(),
        irrelevant_kept: scenario
            .irrelevant
            .iter()
            .filter(|id| run.kept.contains(*id))
            .cloned()
            .collect(),
        within_budget,
        conflict_reported: run.conflict_reported,
        budget_ok: within_budget || (scenario.expect_budget_conflict && run.conflict_reported),
        tags_total,
        tags_resolved,
        attribution_ok: tags_total > 0 && tags_resolved == tags_total,
        millis: run.millis,
    }
}

/// Precision and recall of `kept` against the labels (see the module docs).
pub(crate) fn precision_recall(
    kept: &BTreeSet<String>,
    relevant: &[String],
    irrelevant: &[String],
) -> (Option<f64>, Option<f64>) {
    let kept_relevant = relevant.iter().filter(|id| kept.contains(*id)).count();
    let kept_irrelevant = irrelevant.iter().filter(|id| kept.contains(*id)).count();
    let labelled = kept_relevant + kept_irrelevant;
    let precision = (labelled > 0).then(|| kept_relevant as f64 / labelled as f64);
    let recall = (!relevant.is_empty()).then(|| kept_relevant as f64 / relevant.len() as f64);
    (precision, recall)
}

/// Counts the `[source: …]` tags in `context` and those that resolve: a tag resolves when
/// it names a record (`record ID`, or the whole tag is an id) in `known`, and every
/// `fr_…` part is in `fragments`.
pub(crate) fn attribution(
    context: &str,
    known: &BTreeSet<&str>,
    fragments: &BTreeSet<String>,
) -> (usize, usize) {
    const OPEN: &str = "[source: ";
    let mut total = 0;
    let mut resolved = 0;
    let mut rest = context;
    while let Some(start) = rest.find(OPEN) {
        let after = &rest[start + OPEN.len()..];
        let Some(end) = after.find(']') else { break };
        let tag = &after[..end];
        total += 1;
        let parts: Vec<&str> = tag.split(" | ").map(str::trim).collect();
        let record = parts
            .iter()
            .find_map(|p| p.strip_prefix("record "))
            .or_else(|| (parts.len() == 1).then_some(parts[0]));
        let record_ok = record.is_some_and(|id| known.contains(id));
        let fragments_ok = parts
            .iter()
            .filter(|p| p.starts_with("fr_"))
            .all(|p| fragments.contains(*p));
        if record_ok && fragments_ok {
            resolved += 1;
        }
        rest = &after[end..];
    }
    (total, resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    fn strings(ids: &[&str]) -> Vec<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn precision_and_recall_on_a_hand_made_case() {
        // Kept: 2 of 3 relevant, 1 of 2 irrelevant, 1 unlabelled.
        let kept = set(&["r1", "r2", "x1", "u1"]);
        let (p, r) = precision_recall(
            &kept,
            &strings(&["r1", "r2", "r3"]),
            &strings(&["x1", "x2"]),
        );
        assert_eq!(p, Some(2.0 / 3.0));
        assert_eq!(r, Some(2.0 / 3.0));
        let (p, r) = precision_recall(&set(&["u1"]), &strings(&["r1"]), &strings(&["x1"]));
        assert_eq!((p, r), (None, Some(0.0)));
        let (p, r) = precision_recall(&set(&["r1", "x1"]), &[], &strings(&["x1"]));
        assert_eq!((p, r), (Some(0.0), None));
    }

    #[test]
    fn attribution_counts_unresolved_tags() {
        let known: BTreeSet<&str> = ["m1", "t1", "task"].into_iter().collect();
        let fragments = set(&["fr_aa"]);
        let context = "[source: fr_aa | record m1 | src/a.ts] x\n[source: record t9] y\n\
                       [source: fr_bb | record t1] z\n[source: task] w\n[source: record task]";
        assert_eq!(attribution(context, &known, &fragments), (5, 3));
        assert_eq!(attribution("no tags here", &known, &fragments), (0, 0));
    }
}
