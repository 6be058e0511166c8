//! Assembling the output: sources, omissions, warnings, merges, the configuration hash and
//! the token figures.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::fragment::{Fragment, FragmentIx, Unit};
use crate::optimizer::normalize::canonical_json;
use crate::optimizer::output::{
    BuildOutput, BuildReport, DropReason, OmittedFragment, SourceFragment, Stats,
};
use crate::optimizer::parallel::par_map;
use crate::optimizer::score::Scored;
use crate::optimizer::select::{Candidate, Selection};
use crate::optimizer::{BuildConfig, PIPELINE_VERSION};

/// sha256 (hex) of the canonical JSON of the configuration (keys sorted).
pub(crate) fn config_hash(config: &BuildConfig) -> String {
    let mut json = serde_json::json!({
        "budget": config.budget,
        "files_in_play": config.files_in_play,
        "min_relevance": config.min_relevance,
        "pipeline_version": PIPELINE_VERSION,
        "task": config.task,
        "tokenizer": config.tokenizer.name(),
        "weights": config.weights,
    });
    // Only when set, so the hashes of builds without a limit stay what they were.
    if let Some(max) = config.max_chars {
        json["max_chars"] = max.into();
    }
    hex::encode(Sha256::digest(canonical_json(&json).as_bytes()))
}

/// Everything the output is made of.
pub(crate) struct Parts<'a> {
    /// The configuration.
    pub(crate) config: &'a BuildConfig,
    /// The units.
    pub(crate) units: &'a [Unit],
    /// The fragments.
    pub(crate) fragments: &'a [Fragment],
    /// Per unit: what dedupe and supersede decided.
    pub(crate) analyses: &'a [UnitAnalysis],
    /// Every merge dedupe made, explained.
    pub(crate) merges: &'a [String],
    /// The live fragments offered to selection.
    pub(crate) candidates: &'a [Candidate],
    /// Per fragment: its score, when it was live.
    pub(crate) scores: &'a [Option<Scored>],
    /// What selection decided.
    pub(crate) selection: Selection,
    /// Tokens of the input.
    pub(crate) input_tokens: usize,
}

/// Builds the output.
pub(crate) fn assemble(p: Parts<'_>) -> BuildOutput {
    let Parts {
        config,
        units,
        fragments,
        analyses,
        merges,
        candidates,
        scores,
        selection,
        input_tokens,
    } = p;
    let mandatory: BTreeMap<FragmentIx, bool> = candidates
        .iter()
        .map(|c| (c.placed.fragment, c.mandatory))
        .collect();
    let sources: Vec<SourceFragment> = selection
        .kept
        .iter()
        .map(|pl| {
            let f = &fragments[pl.fragment];
            let u = &units[f.unit];
            let s = scores[pl.fragment.0].as_ref();
            SourceFragment {
                id: f.id.clone(),
                record: u.id.clone(),
                kind: u.kind.name().to_string(),
                path: u.path.clone(),
                section: pl.section.title().to_string(),
                mandatory: mandatory.get(&pl.fragment).copied().unwrap_or(false),
                tokens: selection
                    .rendered_tokens
                    .get(&pl.fragment)
                    .copied()
                    .unwrap_or(f.tokens),
                score: s.map_or(0.0, |s| s.total),
                components: s.map(|s| s.components.clone()).unwrap_or_default(),
            }
        })
        .collect();
    // Most fragments of a big session are left out: their entries are made on every thread.
    let indices: Vec<usize> = (0..fragments.len()).collect();
    let omitted: Vec<OmittedFragment> = par_map(&indices, config.threads, |&fi| {
        let f = &fragments[fi];
        let u = &units[f.unit];
        let (reason, by, detail) = match (
            &analyses[f.unit].dropped,
            selection.left_out.get(&FragmentIx(fi)),
        ) {
            (Some(d), _) => (
                d.reason,
                d.by.map(|b| units[b].id.clone()),
                Some(d.detail.clone()),
            ),
            (None, Some(&reason)) => (reason, None, None),
            (None, None) => return None,
        };
        Some(OmittedFragment {
            id: f.id.clone(),
            record: u.id.clone(),
            kind: u.kind.name().to_string(),
            reason,
            superseded_by: by,
            tokens: f.tokens,
            score: scores[fi].as_ref().map(|s| s.total),
            detail,
        })
    })
    .into_iter()
    .flatten()
    .collect();
    let mut counts: BTreeMap<DropReason, usize> = BTreeMap::new();
    for o in &omitted {
        *counts.entry(o.reason).or_default() += 1;
    }
    let mut warnings = Vec::new();
    if let Some(needed) = selection.conflict {
        warnings.push(format!(
            "BUDGET_CONFLICT: mandatory content renders to {needed} tokens, over the budget of {}; it was kept whole",
            config.budget
        ));
    }
    let output_tokens = selection.tokens;
    let reduction = if input_tokens == 0 {
        0.0
    } else {
        crate::optimizer::score::round4(1.0 - output_tokens as f64 / input_tokens as f64)
    };
    BuildOutput {
        context: selection.context,
        sources,
        omitted,
        report: BuildReport {
            pipeline_version: PIPELINE_VERSION.to_string(),
            config_hash: config_hash(config),
            tokenizer: config.tokenizer.name().to_string(),
            budget: config.budget,
            warnings,
            merges: merges.to_vec(),
            omissions: counts.into_iter().collect(),
        },
        stats: Stats {
            input_tokens,
            output_tokens,
            reduction,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_hash_changes_with_the_config_only() {
        let a = BuildConfig::default();
        let mut b = BuildConfig::default();
        assert_eq!(config_hash(&a), config_hash(&b));
        b.threads = 3;
        assert_eq!(
            config_hash(&a),
            config_hash(&b),
            "threads never change the output"
        );
        b.weights.recency = 2.0;
        assert_ne!(config_hash(&a), config_hash(&b));
        assert_eq!(config_hash(&a).len(), 64);
    }
}
