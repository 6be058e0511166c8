//! ctxopt against each baseline cut by cut: on how many cuts one keeps what the other
//! loses, and whether that split could be chance.
//!
//! The interactive benchmark's halves hold about a hundred cuts each, so a difference of a
//! few cuts in a total may be noise. Both strategies answer the same cuts, so the fair test
//! compares them pair by pair: only the cuts where they disagree (one keeps all files, or
//! the code, and the other does not) say anything, and were the two equally good, each such
//! cut would go either way with even odds. The **sign test** gives the chance of a split at
//! least as uneven as the one seen under those odds (two-sided, exact binomial).
//!
//! "Holds a line of the code label" is one bit per cut; how many of the label's lines each
//! holds says more, so the code is also compared by that count: the cuts where ctxopt holds
//! more of the lines than the baseline against the cuts where it holds fewer.

use serde::{Deserialize, Serialize};

use super::interactive::{groups, CutResult, Strategy};
use super::real::Half;
use super::session_cut::SessionClient;

/// The cuts where ctxopt and one baseline disagree on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Split {
    /// Cuts where ctxopt keeps it and the baseline does not.
    pub ctxopt_only: usize,
    /// Cuts where the baseline keeps it and ctxopt does not.
    pub baseline_only: usize,
}

impl Split {
    /// The two-sided sign test's p-value of this split: the chance, were each disagreeing cut
    /// a fair coin, of a split at least as uneven (1 when they never disagree).
    pub fn p_value(self) -> f64 {
        sign_test(self.ctxopt_only, self.baseline_only)
    }

    /// The split's two table cells: `ctxopt_only / baseline_only` and the p-value.
    fn cells(self) -> String {
        format!(
            "{} / {} | {}",
            self.ctxopt_only,
            self.baseline_only,
            shown(self.p_value())
        )
    }

    fn add(&mut self, ours: bool, theirs: bool) {
        self.ctxopt_only += usize::from(ours && !theirs);
        self.baseline_only += usize::from(theirs && !ours);
    }
}

/// The exact two-sided sign test of `a` successes against `b`: twice the binomial tail
/// P(X ≤ min(a, b)) for X ~ Bin(a + b, ½), at most 1.
pub fn sign_test(a: usize, b: usize) -> f64 {
    let n = a + b;
    if n == 0 {
        return 1.0;
    }
    // ln C(n, k) built up term by term, so no factorial or power overflows.
    let ln_half_n = n as f64 * 0.5f64.ln();
    let mut ln_choose = 0.0f64;
    let mut tail = 0.0f64;
    for k in 0..=a.min(b) {
        if k > 0 {
            ln_choose += ((n - k + 1) as f64).ln() - (k as f64).ln();
        }
        tail += (ln_choose + ln_half_n).exp();
    }
    (2.0 * tail).min(1.0)
}

/// One half × client (or all) × baseline: ctxopt against it, cut by cut.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedRow {
    /// The half.
    pub half: Half,
    /// The client; none: all clients.
    pub client: Option<SessionClient>,
    /// The baseline.
    pub baseline: Strategy,
    /// Labelled cuts where one names every labelled file and the other does not.
    pub all_files: Split,
    /// Cuts with a code label where one holds a line of it and the other does not.
    pub code: Split,
    /// Cuts with a code label where one holds more of its lines than the other.
    #[serde(default)]
    pub code_lines: Split,
    /// Cuts with a distinctive code line where one holds such a line and the other does not.
    #[serde(default)]
    pub distinctive: Split,
}

/// ctxopt against each baseline on `results`, per half × client (and all clients).
pub fn paired_rows(results: &[CutResult]) -> Vec<PairedRow> {
    let mut rows = Vec::new();
    for (half, client, mine) in groups(results) {
        for baseline in Strategy::ALL.into_iter().filter(|s| *s != Strategy::Ctxopt) {
            let mut row = PairedRow {
                half,
                client,
                baseline,
                all_files: Split::default(),
                code: Split::default(),
                code_lines: Split::default(),
                distinctive: Split::default(),
            };
            for r in &mine {
                let (Some(ours), Some(theirs)) = (r.score(Strategy::Ctxopt), r.score(baseline))
                else {
                    continue;
                };
                if r.files > 0 {
                    row.all_files
                        .add(ours.files_kept == r.files, theirs.files_kept == r.files);
                }
                if let (Some(kept), Some(theirs_kept)) = (ours.code_kept, theirs.code_kept) {
                    row.code.add(kept, theirs_kept);
                    let (mine, its) = (ours.code_lines_kept, theirs.code_lines_kept);
                    row.code_lines.add(mine > its, its > mine);
                }
                if let (Some(kept), Some(theirs_kept)) =
                    (ours.distinctive_kept, theirs.distinctive_kept)
                {
                    row.distinctive.add(kept, theirs_kept);
                }
            }
            rows.push(row);
        }
    }
    rows
}

/// The rows as a Markdown table: per metric, the cuts only ctxopt keeps, the cuts only the
/// baseline keeps, and the sign test's p-value; for the code's lines, the cuts where ctxopt
/// holds more of them and those where the baseline does; for the code's distinctive lines,
/// the cuts only ctxopt holds one of and those only the baseline does.
pub fn markdown_table(rows: &[PairedRow]) -> String {
    let mut out = String::from(
        "| half | client | against | all files: only ctxopt / only it | p | \
         code: only ctxopt / only it | p | code lines: more in ctxopt / more in it | p | \
         distinctive code: only ctxopt / only it | p |\n\
         | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.half.name(),
            r.client.map_or("all", SessionClient::name),
            r.baseline.name(),
            r.all_files.cells(),
            r.code.cells(),
            r.code_lines.cells(),
            r.distinctive.cells(),
        ));
    }
    out
}

/// A p-value to three places; below 0.001, `< 0.001`.
fn shown(p: f64) -> String {
    if p < 0.001 {
        "< 0.001".to_string()
    } else {
        format!("{p:.3}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::interactive::CutScore;

    #[test]
    fn the_sign_test_gives_the_binomial_tail_twice() {
        // 10 against 0: 2 × ½¹⁰.
        assert!((sign_test(10, 0) - 2.0 / 1024.0).abs() < 1e-12);
        assert!(
            (sign_test(0, 10) - 2.0 / 1024.0).abs() < 1e-12,
            "either side"
        );
        // 14 against 10: 2 × P(X ≤ 10), X ~ Bin(24, ½) = 0.5413…
        assert!(
            (sign_test(14, 10) - 0.541_256).abs() < 1e-6,
            "{}",
            sign_test(14, 10)
        );
        // The canary: an even split is no evidence either way.
        assert_eq!(sign_test(7, 7), 1.0);
        assert_eq!(sign_test(0, 0), 1.0);
        // Hundreds of cuts: no overflow, still a probability.
        let p = sign_test(600, 400);
        assert!(p > 0.0 && p < 1e-9, "{p}");
        assert_eq!(
            (shown(p), shown(0.0123)),
            ("< 0.001".to_string(), "0.012".to_string())
        );
    }

    /// A cut of a 3-line code label (when the scores have one), scored for ctxopt and the
    /// tail: per strategy, the files it names and the code lines it holds (none: no label).
    fn cut(
        half: Half,
        files: usize,
        ours: (usize, Option<usize>),
        tail: (usize, Option<usize>),
    ) -> CutResult {
        let score = |(files_kept, lines): (usize, Option<usize>)| CutScore {
            files_kept,
            code_kept: lines.map(|n| n > 0),
            code_lines_kept: lines.unwrap_or(0),
            // The label's first line is its one distinctive line, held with any line.
            distinctive_kept: lines.map(|n| n > 0),
            tokens: 10,
            millis: 0.0,
        };
        CutResult {
            session: "s".into(),
            client: SessionClient::ClaudeCode,
            half,
            share: 0.5,
            files,
            code_lines: if ours.1.is_some() { 3 } else { 0 },
            scores: vec![
                (Strategy::Ctxopt, score(ours)),
                (Strategy::Tail, score(tail)),
            ],
            before_millis: 0.0,
        }
    }

    #[test]
    fn only_the_cuts_where_ctxopt_and_a_baseline_disagree_count() {
        let results = [
            // ctxopt keeps both, the tail neither.
            cut(Half::Tuning, 2, (2, Some(2)), (1, Some(0))),
            // Both keep everything: no evidence.
            cut(Half::Tuning, 1, (1, Some(3)), (1, Some(3))),
            // The tail keeps the code ctxopt lost; no file label.
            cut(Half::Tuning, 0, (0, Some(0)), (0, Some(1))),
            // Both hold a line of the code, the tail more of them: no evidence by the bit,
            // one cut for the tail by the lines.
            cut(Half::Tuning, 0, (0, Some(1)), (0, Some(3))),
            // The other half is apart.
            cut(Half::HeldOut, 1, (0, None), (1, None)),
        ];
        let rows = paired_rows(&results);
        let tuning_tail = rows
            .iter()
            .find(|r| r.half == Half::Tuning && r.client.is_none() && r.baseline == Strategy::Tail)
            .unwrap();
        assert_eq!(
            tuning_tail.all_files,
            Split {
                ctxopt_only: 1,
                baseline_only: 0
            }
        );
        assert_eq!(
            tuning_tail.code,
            Split {
                ctxopt_only: 1,
                baseline_only: 1
            }
        );
        assert_eq!(
            tuning_tail.code_lines,
            Split {
                ctxopt_only: 1,
                baseline_only: 2
            }
        );
        assert_eq!(tuning_tail.distinctive, tuning_tail.code);
        let held_tail = rows
            .iter()
            .find(|r| r.half == Half::HeldOut && r.client.is_none() && r.baseline == Strategy::Tail)
            .unwrap();
        assert_eq!(
            held_tail.all_files,
            Split {
                ctxopt_only: 0,
                baseline_only: 1
            }
        );
        assert_eq!(
            (held_tail.code, held_tail.code_lines),
            (Split::default(), Split::default())
        );
        // A baseline the cuts were not scored with has no disagreement to count.
        let bm25 = rows.iter().find(|r| r.baseline == Strategy::Bm25).unwrap();
        assert_eq!(
            (bm25.all_files, bm25.code),
            (Split::default(), Split::default())
        );
        insta::assert_snapshot!(markdown_table(&rows[..3]));
    }
}
