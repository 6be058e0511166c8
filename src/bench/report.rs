//! Running every scenario under every strategy, and the results as a table, JSON and the
//! `## Optimizer` section of `docs/benchmarks.md`.

use serde::{Deserialize, Serialize};

use super::metrics::{self, Metrics};
use super::real::RealReport;
use super::scenario::Scenario;
use super::speed::SpeedReport;
use super::strategy::{self, Strategy};
use crate::tokenizer::Tokenizer;

/// The reference's published figures on its nine scenario kinds: the bar to beat.
pub(crate) mod reference {
    /// Average reduction.
    pub(crate) const REDUCTION: f64 = 0.42;
    /// Average precision.
    pub(crate) const PRECISION: f64 = 0.71;
    /// Average recall.
    pub(crate) const RECALL: f64 = 1.0;
}

/// One strategy's outcome on one scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StrategyResult {
    /// `raw`, `dedupe_truncate` or `ctxopt`.
    pub strategy: String,
    /// The figures, when the strategy ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Metrics>,
    /// Why it did not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One scenario's outcomes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioResult {
    /// The scenario's name.
    pub name: String,
    /// Its token budget.
    pub budget: usize,
    /// Whether its mandatory content exceeds the budget by design.
    pub expect_budget_conflict: bool,
    /// One result per strategy, in [`Strategy::ALL`] order.
    pub strategies: Vec<StrategyResult>,
}

/// A strategy's averages over all scenarios.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// The strategy.
    pub strategy: String,
    /// Scenarios it ran on.
    pub scenarios: usize,
    /// Scenarios where it failed to run.
    pub errors: usize,
    /// Scenarios with every required fact.
    pub(crate) all_facts: usize,
    /// Required facts retained over all scenarios.
    pub facts_retained: usize,
    /// Required facts over all scenarios.
    pub facts_total: usize,
    /// Scenarios with budget compliance.
    pub budget_ok: usize,
    /// Scenarios where every source tag resolves.
    pub attribution_ok: usize,
    /// Mean reduction.
    pub(crate) avg_reduction: f64,
    /// Mean precision over scenarios where it is defined.
    pub(crate) avg_precision: f64,
    /// Mean recall over scenarios where it is defined.
    pub(crate) avg_recall: f64,
    /// Total milliseconds.
    pub(crate) total_millis: f64,
}

/// The whole benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// The tokenizer of every count.
    pub tokenizer: String,
    /// Per scenario.
    pub scenarios: Vec<ScenarioResult>,
    /// Per strategy.
    pub summary: Vec<Summary>,
    /// Whether C meets the bar: every fact and the budget on every scenario, recall 100%,
    /// and higher average reduction and precision than the reference.
    pub meets_bar: bool,
    /// Each way C falls short, one line each.
    pub(crate) findings: Vec<String>,
}

/// Runs every scenario under every strategy.
pub fn run_all(scenarios: &[Scenario], tokenizer: Tokenizer) -> BenchReport {
    tokenizer.warm();
    let results: Vec<ScenarioResult> = scenarios
        .iter()
        .map(|scenario| {
            let tokens_in = tokenizer.count(&strategy::raw_context(&scenario.records));
            let strategies = Strategy::ALL
                .iter()
                .map(
                    |&s| match strategy::run(s, &scenario.records, scenario.budget, tokenizer) {
                        Ok(run) => StrategyResult {
                            strategy: s.key().into(),
                            metrics: Some(metrics::measure(scenario, &run, tokens_in, tokenizer)),
                            error: None,
                        },
                        Err(err) => StrategyResult {
                            strategy: s.key().into(),
                            metrics: None,
                            error: Some(err.to_string()),
                        },
                    },
                )
                .collect();
            ScenarioResult {
                name: scenario.name.clone(),
                budget: scenario.budget,
                expect_budget_conflict: scenario.expect_budget_conflict,
                strategies,
            }
        })
        .collect();
    let summary: Vec<Summary> = Strategy::ALL
        .iter()
        .enumerate()
        .map(|(i, s)| summarize(s.key(), results.iter().map(|r| &r.strategies[i])))
        .collect();
    let findings = findings(&results);
    let c = &summary[2];
    let meets_bar = findings.is_empty()
        && c.scenarios > 0
        && c.avg_reduction > reference::REDUCTION
        && c.avg_precision > reference::PRECISION
        && c.avg_recall >= reference::RECALL;
    BenchReport {
        tokenizer: tokenizer.name().into(),
        scenarios: results,
        summary,
        meets_bar,
        findings,
    }
}

fn mean(values: impl Iterator<Item = f64>) -> f64 {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    if n == 0 {
        0.0
    } else {
        sum / n as f64
    }
}

fn summarize<'a>(strategy: &str, results: impl Iterator<Item = &'a StrategyResult>) -> Summary {
    let results: Vec<&StrategyResult> = results.collect();
    let ran: Vec<&Metrics> = results.iter().filter_map(|r| r.metrics.as_ref()).collect();
    Summary {
        strategy: strategy.into(),
        scenarios: ran.len(),
        errors: results.len() - ran.len(),
        all_facts: ran
            .iter()
            .filter(|m| m.facts_retained == m.facts_total)
            .count(),
        facts_retained: ran.iter().map(|m| m.facts_retained).sum(),
        facts_total: ran.iter().map(|m| m.facts_total).sum(),
        budget_ok: ran.iter().filter(|m| m.budget_ok).count(),
        attribution_ok: ran.iter().filter(|m| m.attribution_ok).count(),
        avg_reduction: mean(ran.iter().map(|m| m.reduction)),
        avg_precision: mean(ran.iter().filter_map(|m| m.precision)),
        avg_recall: mean(ran.iter().filter_map(|m| m.recall)),
        total_millis: ran.iter().map(|m| m.millis).sum(),
    }
}

/// Every way strategy C misses the bar on a scenario.
fn findings(results: &[ScenarioResult]) -> Vec<String> {
    let mut out = Vec::new();
    for result in results {
        let c = &result.strategies[2];
        let Some(m) = &c.metrics else {
            out.push(format!(
                "{}: ctxopt failed: {}",
                result.name,
                c.error.as_deref().unwrap_or("unknown error")
            ));
            continue;
        };
        for fact in &m.facts_missing {
            out.push(format!("{}: required fact missing: {fact:?}", result.name));
        }
        if !m.relevant_missing.is_empty() {
            out.push(format!(
                "{}: relevant records left out: {}",
                result.name,
                m.relevant_missing.join(", ")
            ));
        }
        if !m.budget_ok {
            out.push(format!(
                "{}: over budget: {} tokens for a budget of {}{}",
                result.name,
                m.tokens_out,
                result.budget,
                if m.conflict_reported {
                    " (BUDGET_CONFLICT reported where the mandatory content fits)"
                } else {
                    " (no BUDGET_CONFLICT reported)"
                }
            ));
        }
        if result.expect_budget_conflict && !m.conflict_reported {
            out.push(format!(
                "{}: BUDGET_CONFLICT expected but not reported",
                result.name
            ));
        }
        if !m.attribution_ok {
            out.push(format!(
                "{}: attribution: {} of {} source tags resolve",
                result.name, m.tags_resolved, m.tags_total
            ));
        }
    }
    out
}

fn percent(v: f64) -> String {
    format!("{:.1}%", v * 100.0)
}

fn optional_percent(v: Option<f64>) -> String {
    v.map(percent).unwrap_or_else(|| "n/a".into())
}

/// The display name of the strategy keyed `key`, or the key itself when no strategy has it.
fn strategy_name(key: &str) -> &str {
    Strategy::ALL
        .iter()
        .find(|s| s.key() == key)
        .map_or(key, |s| s.name())
}

fn row(name: &str, r: &StrategyResult) -> Vec<String> {
    let strategy = strategy_name(&r.strategy);
    match &r.metrics {
        None => vec![
            name.into(),
            strategy.into(),
            format!("error: {}", r.error.as_deref().unwrap_or("")),
        ],
        Some(m) => vec![
            name.into(),
            strategy.into(),
            m.tokens_in.to_string(),
            m.tokens_out.to_string(),
            percent(m.reduction),
            format!("{}/{}", m.facts_retained, m.facts_total),
            optional_percent(m.precision),
            optional_percent(m.recall),
            if m.within_budget {
                "yes".into()
            } else if m.budget_ok {
                "conflict reported".into()
            } else {
                "NO".into()
            },
            format!("{}/{}", m.tags_resolved, m.tags_total),
            format!("{:.1}", m.millis),
        ],
    }
}

const HEADER: [&str; 11] = [
    "scenario",
    "strategy",
    "tok in",
    "tok out",
    "reduction",
    "facts",
    "precision",
    "recall",
    "budget",
    "tags ok",
    "ms",
];

/// The per-scenario table as aligned plain text.
pub fn text_table(report: &BenchReport) -> String {
    let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|s| s.to_string()).collect()];
    for s in &report.scenarios {
        for r in &s.strategies {
            rows.push(row(&s.name, r));
        }
    }
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|c| {
            rows.iter()
                .filter(|r| r.len() == HEADER.len())
                .map(|r| r[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, v)| format!("{v:<width$}", width = widths[c]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out.push('\n');
    out.push_str(&summary_text(report));
    out
}

fn summary_text(report: &BenchReport) -> String {
    let mut out = String::new();
    for s in &report.summary {
        out.push_str(&format!(
            "{:<17} facts {}/{} ({} of {} scenarios complete), budget ok {}/{}, tags ok {}/{}, \
             avg reduction {}, avg precision {}, avg recall {}, {:.0} ms\n",
            strategy_name(&s.strategy),
            s.facts_retained,
            s.facts_total,
            s.all_facts,
            s.scenarios,
            s.budget_ok,
            s.scenarios,
            s.attribution_ok,
            s.scenarios,
            percent(s.avg_reduction),
            percent(s.avg_precision),
            percent(s.avg_recall),
            s.total_millis,
        ));
    }
    out.push_str(&format!(
        "reference bar: facts 100%, budget 9/9, avg reduction {}, avg precision {}, recall {} — ctxopt {}\n",
        percent(reference::REDUCTION),
        percent(reference::PRECISION),
        percent(reference::RECALL),
        if report.meets_bar { "MEETS the bar" } else { "does NOT meet the bar" }
    ));
    out
}

/// The `## Optimizer` section of `docs/benchmarks.md`.
pub fn markdown_section(
    report: &BenchReport,
    speed: Option<&SpeedReport>,
    real: Option<(&RealReport, Option<&RealReport>)>,
) -> String {
    let mut out = String::from("## Optimizer\n\n");
    out.push_str(
        "Generated by `ctxopt bench` (scenarios) and `ctxopt bench --speed` (speed), release build; \
         the raw figures are in `benchmarks/optimizer-scenarios.json` and \
         `benchmarks/optimizer-speed.json`. Strategies: **A** raw (every record concatenated), \
         **B** exact dedupe + head truncation to the budget, **C** ctxopt. Tokens are `",
    );
    out.push_str(&report.tokenizer);
    out.push_str(
        "`. Precision counts only kept records that carry a label; recall is over the records \
         labelled relevant. Budget: within the budget, or `BUDGET_CONFLICT` reported where the \
         scenario's mandatory content cannot fit. Tags: source tags that resolve to an input \
         record. How scenarios are built and labelled: `docs/records.md`.\n\n",
    );
    out.push_str("### Summary\n\n| strategy | facts | scenarios with all facts | budget ok | tags ok | avg reduction | avg precision | avg recall |\n|---|---|---|---|---|---|---|---|\n");
    for s in &report.summary {
        out.push_str(&format!(
            "| {} | {}/{} | {}/{} | {}/{} | {}/{} | {} | {} | {} |\n",
            strategy_name(&s.strategy),
            s.facts_retained,
            s.facts_total,
            s.all_facts,
            s.scenarios,
            s.budget_ok,
            s.scenarios,
            s.attribution_ok,
            s.scenarios,
            percent(s.avg_reduction),
            percent(s.avg_precision),
            percent(s.avg_recall),
        ));
    }
    out.push_str(&format!(
        "| reference bar (its 9 kinds) | 100% | 9/9 | 9/9 | — | {} | {} | {} |\n\n",
        percent(reference::REDUCTION),
        percent(reference::PRECISION),
        percent(reference::RECALL)
    ));
    out.push_str(if report.meets_bar {
        "**ctxopt meets the bar**: every fact and the budget on every scenario, recall 100%, higher average reduction and precision than the reference.\n\n"
    } else {
        "**ctxopt does not meet the bar yet**; the shortfalls:\n\n"
    });
    for f in &report.findings {
        out.push_str(&format!("- {f}\n"));
    }
    if !report.findings.is_empty() {
        out.push('\n');
    }
    out.push_str("### Per scenario\n\n| scenario | strategy | tok in | tok out | reduction | facts | precision | recall | budget | tags ok | ms |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    for s in &report.scenarios {
        for r in &s.strategies {
            let cells = row(&s.name, r);
            out.push_str(&format!("| {} |\n", cells.join(" | ")));
        }
    }
    out.push('\n');
    if let Some((real, before)) = real {
        out.push_str(&real.markdown(before));
    }
    if let Some(speed) = speed {
        out.push_str(&speed.markdown());
    }
    out
}

/// Replaces the `## Optimizer` section of `doc` (up to the next `## ` heading) with
/// `section`, or appends it; every other section is left byte for byte.
pub fn replace_section(doc: &str, section: &str) -> String {
    const HEADING: &str = "## Optimizer";
    let lines: Vec<&str> = doc.split_inclusive('\n').collect();
    let start = lines.iter().position(|l| l.trim_end() == HEADING);
    let Some(start) = start else {
        let mut out = if doc.trim().is_empty() {
            "# Benchmarks\n\n".to_string()
        } else {
            let mut d = doc.to_string();
            if !d.ends_with('\n') {
                d.push('\n');
            }
            d.push('\n');
            d
        };
        out.push_str(section);
        return out;
    };
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.starts_with("## "))
        .map_or(lines.len(), |p| start + 1 + p);
    let mut out: String = lines[..start].concat();
    out.push_str(section);
    if end < lines.len() {
        if !section.ends_with("\n\n") {
            out.push('\n');
        }
        out.push_str(&lines[end..].concat());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_only_its_own_section() {
        let doc = "# Benchmarks\n\n## Proxy\n\nproxy figures\n\n## Optimizer\n\nold\n\n## Later\n\nkept\n";
        let out = replace_section(doc, "## Optimizer\n\nnew\n");
        assert_eq!(
            out,
            "# Benchmarks\n\n## Proxy\n\nproxy figures\n\n## Optimizer\n\nnew\n\n## Later\n\nkept\n"
        );
        let appended = replace_section("# Benchmarks\n\n## Proxy\n\np\n", "## Optimizer\n\nnew\n");
        assert_eq!(
            appended,
            "# Benchmarks\n\n## Proxy\n\np\n\n## Optimizer\n\nnew\n"
        );
        assert_eq!(
            replace_section("", "## Optimizer\n"),
            "# Benchmarks\n\n## Optimizer\n"
        );
        let at_end = replace_section("## Optimizer\n\nold\n", "## Optimizer\n\nnew\n");
        assert_eq!(at_end, "## Optimizer\n\nnew\n");
    }
}
