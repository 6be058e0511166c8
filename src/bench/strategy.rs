//! The three strategies the benchmark compares:
//! - **A raw**: every record rendered and concatenated, nothing dropped;
//! - **B dedupe + truncate**: A without exact duplicates, cut at the head to the budget;
//! - **C ctxopt**: [`crate::optimizer::build`].
//!
//! A and B render each record as a block headed `[source: record ID] kind label`: the task
//! first, then the records in timestamp order (records without a timestamp first, ties in
//! the format's list order: messages, toolOutputs, errors, files, diffs, testResults,
//! decisions).

use std::collections::BTreeSet;
use std::time::Instant;

use crate::optimizer::{self, BuildConfig, OptimizerError};
use crate::records::Records;
use crate::tokenizer::Tokenizer;

/// Which strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Strategy {
    /// A: everything concatenated.
    Raw,
    /// B: exact dedupe, then head truncation to the budget.
    DedupeTruncate,
    /// C: the optimizer.
    Ctxopt,
}

impl Strategy {
    /// All three, in report order.
    pub(crate) const ALL: [Strategy; 3] =
        [Strategy::Raw, Strategy::DedupeTruncate, Strategy::Ctxopt];

    /// The name used in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Raw => "A raw",
            Strategy::DedupeTruncate => "B dedupe+truncate",
            Strategy::Ctxopt => "C ctxopt",
        }
    }

    /// A short key for JSON.
    pub fn key(self) -> &'static str {
        match self {
            Strategy::Raw => "raw",
            Strategy::DedupeTruncate => "dedupe_truncate",
            Strategy::Ctxopt => "ctxopt",
        }
    }
}

/// What a strategy produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// The context.
    pub context: String,
    /// Ids of the records the context keeps (wholly or in part).
    pub kept: BTreeSet<String>,
    /// Whether the strategy reported `BUDGET_CONFLICT`.
    pub conflict_reported: bool,
    /// Fragment ids the strategy says it kept (only C has them).
    pub(crate) fragment_ids: BTreeSet<String>,
    /// Wall time in milliseconds.
    pub(crate) millis: f64,
}

/// One rendered record.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Block {
    pub(crate) id: String,
    /// The header without its source tag, for exact-duplicate detection.
    pub(crate) label: String,
    pub(crate) body: String,
}

impl Block {
    pub(crate) fn text(&self) -> String {
        format!("[source: record {}] {}\n{}", self.id, self.label, self.body)
    }
}

pub(crate) const SEPARATOR: &str = "\n\n";

/// Runs `strategy` on `records` under `budget`.
pub fn run(
    strategy: Strategy,
    records: &Records,
    budget: usize,
    tokenizer: Tokenizer,
) -> Result<Run, OptimizerError> {
    let started = Instant::now();
    let mut result = match strategy {
        Strategy::Raw => {
            let blocks = blocks(records);
            Run {
                context: join(&blocks),
                kept: blocks.iter().map(|b| b.id.clone()).collect(),
                conflict_reported: false,
                fragment_ids: BTreeSet::new(),
                millis: 0.0,
            }
        }
        Strategy::DedupeTruncate => dedupe_truncate(records, budget, tokenizer),
        Strategy::Ctxopt => {
            let config = BuildConfig {
                budget,
                tokenizer,
                ..BuildConfig::default()
            };
            let output = optimizer::build(records, &config)?;
            Run {
                kept: output.sources.iter().map(|s| s.record.clone()).collect(),
                fragment_ids: output.sources.iter().map(|s| s.id.clone()).collect(),
                conflict_reported: output
                    .report
                    .warnings
                    .iter()
                    .any(|w| w.starts_with("BUDGET_CONFLICT")),
                context: output.context,
                millis: 0.0,
            }
        }
    };
    result.millis = started.elapsed().as_secs_f64() * 1000.0;
    Ok(result)
}

/// Strategy A's context: every record, rendered and concatenated.
pub fn raw_context(records: &Records) -> String {
    join(&blocks(records))
}

pub(crate) fn join(blocks: &[Block]) -> String {
    blocks
        .iter()
        .map(Block::text)
        .collect::<Vec<_>>()
        .join(SEPARATOR)
}

/// Strategy B: drop blocks whose label and body repeat an earlier block's, then keep the
/// longest head of the concatenation that fits the budget (the last block may be cut).
pub(crate) fn dedupe_truncate(records: &Records, budget: usize, tokenizer: Tokenizer) -> Run {
    let mut seen = BTreeSet::new();
    let unique: Vec<Block> = blocks(records)
        .into_iter()
        .filter(|b| seen.insert((b.label.clone(), b.body.clone())))
        .collect();
    let mut context = String::new();
    let mut kept = BTreeSet::new();
    let mut used = 0;
    for block in &unique {
        let piece = if context.is_empty() {
            block.text()
        } else {
            format!("{SEPARATOR}{}", block.text())
        };
        let tokens = tokenizer.count(&piece);
        if used + tokens <= budget {
            context.push_str(&piece);
            used += tokens;
            kept.insert(block.id.clone());
            continue;
        }
        let head = longest_head(&piece, budget - used, tokenizer);
        let header_end = piece.find('\n').unwrap_or(piece.len());
        if head.len() > header_end {
            kept.insert(block.id.clone());
        }
        context.push_str(head);
        break;
    }
    // Token counts of pieces need not add up exactly; trim until the whole fits.
    while tokenizer.count(&context) > budget {
        let keep = longest_head(&context, budget, tokenizer).len();
        context.truncate(keep.min(context.len().saturating_sub(1)));
        while !context.is_char_boundary(context.len()) {
            context.pop();
        }
    }
    Run {
        context,
        kept,
        conflict_reported: false,
        fragment_ids: BTreeSet::new(),
        millis: 0.0,
    }
}

/// The longest prefix of `text` (on a char boundary) with at most `tokens` tokens.
pub(crate) fn longest_head(text: &str, tokens: usize, tokenizer: Tokenizer) -> &str {
    // A token is rarely longer than 64 bytes; search below that bound first.
    let mut high = text.len().min(tokens.saturating_mul(64).max(1));
    while high < text.len() && tokenizer.count(prefix(text, high)) <= tokens {
        high = (high * 2).min(text.len());
    }
    let (mut low, mut high) = (0usize, high);
    if tokenizer.count(prefix(text, high)) <= tokens {
        return prefix(text, high);
    }
    while low + 1 < high {
        let mid = (low + high) / 2;
        if tokenizer.count(prefix(text, mid)) <= tokens {
            low = mid;
        } else {
            high = mid;
        }
    }
    prefix(text, low)
}

/// `text` cut at the last char boundary at or before `at`.
pub(crate) fn prefix(text: &str, at: usize) -> &str {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// Every record as a block: the task, then by timestamp (stable).
pub(crate) fn blocks(records: &Records) -> Vec<Block> {
    let mut timed: Vec<(Option<chrono::DateTime<chrono::Utc>>, Block)> = Vec::new();
    let mut push =
        |id: &Option<String>, timestamp: &Option<String>, label: String, body: String| {
            let at = timestamp
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&chrono::Utc));
            timed.push((
                at,
                Block {
                    id: id.clone().unwrap_or_default(),
                    label,
                    body,
                },
            ));
        };
    for r in &records.messages {
        let role = serde_json::to_value(r.role).ok();
        let role = role.as_ref().and_then(|v| v.as_str()).unwrap_or("message");
        push(
            &r.common.id,
            &r.common.timestamp,
            format!("message ({role})"),
            r.text.clone(),
        );
    }
    for r in &records.tool_outputs {
        let mut label = format!("$ {}", r.tool);
        if let Some(args) = &r.args {
            label.push_str(&format!(" {args}"));
        }
        if let Some(code) = r.exit_code {
            label.push_str(&format!(" (exit {code})"));
        }
        push(&r.common.id, &r.common.timestamp, label, r.output.clone());
    }
    for r in &records.errors {
        let body = match &r.stack {
            Some(stack) => format!("{}\n{stack}", r.message),
            None => r.message.clone(),
        };
        push(&r.common.id, &r.common.timestamp, "error".into(), body);
    }
    for r in &records.files {
        push(
            &r.common.id,
            &r.common.timestamp,
            format!("file {}", r.path),
            r.content.clone(),
        );
    }
    for r in &records.diffs {
        push(
            &r.common.id,
            &r.common.timestamp,
            format!("diff {}", r.path),
            r.diff.clone(),
        );
    }
    for r in &records.test_results {
        let status = serde_json::to_value(r.status).ok();
        let status = status.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        push(
            &r.common.id,
            &r.common.timestamp,
            format!("test {}: {status}", r.name),
            r.output.clone().unwrap_or_default(),
        );
    }
    for r in &records.decisions {
        let status = serde_json::to_value(r.status).ok();
        let status = status.as_ref().and_then(|v| v.as_str()).unwrap_or("?");
        push(
            &r.common.id,
            &r.common.timestamp,
            format!("decision ({status})"),
            r.text.clone(),
        );
    }
    // Stable: equal times keep list order; records without a time come first.
    timed.sort_by_key(|(at, _)| *at);
    let mut out = Vec::with_capacity(timed.len() + 1);
    if let Some(task) = &records.task {
        out.push(Block {
            id: "task".into(),
            label: "task".into(),
            body: task.clone(),
        });
    }
    out.extend(timed.into_iter().map(|(_, b)| b));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::parse::parse_records;

    fn sample() -> Records {
        parse_records(
            r#"{"task":"fix the bug",
                "toolOutputs":[
                  {"id":"t2","tool":"npm test","output":"FAIL a.test.ts","exitCode":1,"timestamp":"2026-01-01T00:02:00Z"},
                  {"id":"t1","tool":"npm test","output":"FAIL a.test.ts","exitCode":1,"timestamp":"2026-01-01T00:01:00Z"}],
                "messages":[{"id":"m1","role":"user","text":"please look","timestamp":"2026-01-01T00:00:00Z"}],
                "files":[{"id":"f1","path":"a.ts","content":"export const a = 1;\n","timestamp":"2026-01-01T00:03:00Z"}]}"#,
        )
        .unwrap()
    }

    #[test]
    fn raw_keeps_everything_in_time_order() {
        let raw = raw_context(&sample());
        assert_eq!(
            raw,
            "[source: record task] task\nfix the bug\n\n\
             [source: record m1] message (user)\nplease look\n\n\
             [source: record t1] $ npm test (exit 1)\nFAIL a.test.ts\n\n\
             [source: record t2] $ npm test (exit 1)\nFAIL a.test.ts\n\n\
             [source: record f1] file a.ts\nexport const a = 1;\n"
        );
    }

    #[test]
    fn dedupe_drops_the_exact_repeat() {
        let run = run(
            Strategy::DedupeTruncate,
            &sample(),
            10_000,
            Tokenizer::O200kBase,
        )
        .unwrap();
        let kept: Vec<&str> = run.kept.iter().map(String::as_str).collect();
        assert_eq!(kept, ["f1", "m1", "t1", "task"]);
        assert!(!run.context.contains("record t2"));
    }

    #[test]
    fn truncation_fits_the_budget_and_cuts_the_tail() {
        let records = sample();
        let full = run(
            Strategy::DedupeTruncate,
            &records,
            10_000,
            Tokenizer::O200kBase,
        )
        .unwrap();
        for budget in [0, 1, 5, 12, 20, 30] {
            let cut = run(
                Strategy::DedupeTruncate,
                &records,
                budget,
                Tokenizer::O200kBase,
            )
            .unwrap();
            assert!(
                Tokenizer::O200kBase.count(&cut.context) <= budget,
                "{budget}"
            );
            assert!(full.context.starts_with(&cut.context), "{budget}");
            assert!(cut.context.len() < full.context.len(), "{budget}");
        }
        let run = run(Strategy::DedupeTruncate, &records, 12, Tokenizer::O200kBase).unwrap();
        assert!(run.kept.contains("task"));
        assert!(!run.kept.contains("f1"));
    }

    #[test]
    fn longest_head_is_maximal() {
        let text = "alpha beta gamma delta epsilon ".repeat(50);
        for tokens in [0, 1, 7, 100] {
            let head = longest_head(&text, tokens, Tokenizer::O200kBase);
            assert!(Tokenizer::O200kBase.count(head) <= tokens);
            if head.len() < text.len() {
                let longer = prefix(&text, head.len() + 1);
                assert!(Tokenizer::O200kBase.count(longer) > tokens, "{tokens}");
            }
        }
    }
}
