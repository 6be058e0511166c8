//! Stage 5, select: mandatory fragments first, then the rest by score per token, until the
//! rendered context fills the budget. The budget counts the rendered text — section
//! headings, source tags and run headers included — and is checked on the final text.
//!
//! Tie-breaks are fixed: score per token (descending), then record order, then fragment
//! id. Mandatory content over budget is kept and reported as `BUDGET_CONFLICT`.

use std::collections::{BTreeMap, BTreeSet};

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::excerpt;
use crate::optimizer::fragment::{is_later, Fragment, FragmentIx, Unit, UnitIx};
use crate::optimizer::output::DropReason;
use crate::optimizer::render::{render, tag, Placed, Section};
use crate::records::Kind;
use crate::tokenizer::Tokenizer;

/// The fewest tokens a fragment counts as in score per token: below this, size stops
/// mattering, so a swarm of one-liners cannot outrank one diff or file that matters.
pub(crate) const MIN_COST: usize = 96;

/// A fragment that may go into the context.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Candidate {
    /// Its place in the context.
    pub(crate) placed: Placed,
    /// Whether it must go in.
    pub(crate) mandatory: bool,
    /// Its total score.
    pub(crate) score: f64,
    /// Whether it is relevant enough to fill the budget with.
    pub(crate) eligible: bool,
    /// Whether it is part of the session's current change (the latest live diff of its
    /// path): tried right after the mandatory fragments.
    pub(crate) current_change: bool,
    /// Whether it is the best chunk of a file the session keeps coming back to (see
    /// [`crate::optimizer::working_set`]): tried right after the current change.
    pub(crate) working_set: bool,
    /// Whether, when not eligible, it still takes what budget is left once every eligible
    /// fragment was tried (a chunk of a file the session read).
    pub(crate) leftover: bool,
}

/// Per unit: whether it is the latest live diff of its path — the session's current change
/// to that file. When the latest diff of a path reverted an earlier one (`reverted`), the
/// path has no current change.
pub(crate) fn current_diffs(units: &[Unit], live: &[bool], reverted: &[bool]) -> Vec<bool> {
    let mut latest: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        let (Kind::Diff, true, Some(path)) = (u.kind, live[i] || reverted[i], u.path.as_deref())
        else {
            continue;
        };
        let newer = latest
            .get(path)
            .is_none_or(|&j| is_later(u, &units[j]).unwrap_or(true));
        if newer {
            latest.insert(path, i);
        }
    }
    let mut current = vec![false; units.len()];
    for i in latest.into_values().filter(|&i| live[i]) {
        current[i] = true;
    }
    current
}

/// How much of the budget the current changes' chunks may take as leads together; the rest of
/// a big change competes by its score like any fragment.
pub(crate) const CURRENT_CHANGE_SHARE: f64 = 0.3;

/// Per fragment: whether it leads as part of a current change — the chunks of the current
/// changes (`current`, per unit) in the order the session made them (the latest change
/// first, its hunks in order) while their tokens together fit in [`CURRENT_CHANGE_SHARE`] of
/// `budget`, and always the first chunk of the latest change.
pub(crate) fn current_change_leads(
    units: &[Unit],
    fragments: &[Fragment],
    current: &[bool],
    budget: usize,
) -> Vec<bool> {
    let mut changes: Vec<usize> = (0..units.len()).filter(|&i| current[i]).collect();
    changes.sort_by(|&a, &b| match is_later(&units[a], &units[b]) {
        Some(true) => std::cmp::Ordering::Less,
        Some(false) => std::cmp::Ordering::Greater,
        None => b.cmp(&a),
    });
    let cap = (CURRENT_CHANGE_SHARE * budget as f64) as usize;
    let mut used = 0usize;
    let mut leads = vec![false; fragments.len()];
    for fi in changes.iter().flat_map(|&i| units[i].fragments.clone()) {
        if used == 0 || used + fragments[fi].tokens <= cap {
            used += fragments[fi].tokens;
            leads[fi] = true;
        }
    }
    leads
}

/// How many of the best fragments left out for budget the swap pass tries (keeps it linear).
pub(crate) const SWAP_TRIES: usize = 32;

/// What selection decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Selection {
    /// The rendered context.
    pub(crate) context: String,
    /// Its exact token count.
    pub(crate) tokens: usize,
    /// The kept fragments, in render order.
    pub(crate) kept: Vec<Placed>,
    /// Candidates left out, with the reason (`budget`, `low_relevance`, or `covered` for an
    /// excerpt whose lines the kept chunks show), by fragment.
    pub(crate) left_out: BTreeMap<FragmentIx, DropReason>,
    /// Tokens the mandatory content needs when it exceeds the budget.
    pub(crate) conflict: Option<usize>,
    /// Per kept fragment: its tokens as rendered (tag, header share and body).
    pub(crate) rendered_tokens: BTreeMap<FragmentIx, usize>,
}

/// Token costs, counted once each and cached.
struct Costs<'a> {
    tokenizer: Tokenizer,
    units: &'a [Unit],
    fragments: &'a [Fragment],
    analyses: &'a [UnitAnalysis],
    header_tokens: BTreeMap<UnitIx, usize>,
    section_tokens: BTreeMap<Section, usize>,
    fragment_tokens: BTreeMap<FragmentIx, usize>,
    newline_tokens: BTreeMap<String, usize>,
}

impl Costs<'_> {
    /// Tag and body of a fragment, with its newline, counted as rendered: the body's last
    /// characters and the newline often make one token (`}\n`), so the newline is counted
    /// with the body's tail (the body itself was counted once already).
    fn fragment(&mut self, fi: FragmentIx) -> usize {
        let (tokenizer, units, fragments) = (self.tokenizer, self.units, self.fragments);
        if let Some(&n) = self.fragment_tokens.get(&fi) {
            return n;
        }
        let f = &fragments[fi];
        let newline = self.newline_after(tail(f.text(units)));
        let n = tokenizer.count(&tag(f, &units[f.unit])) + f.tokens + newline;
        self.fragment_tokens.insert(fi, n);
        n
    }

    /// The tokens a newline adds after `tail`, cached: tails repeat (`}`, `.`, a letter).
    fn newline_after(&mut self, tail: &str) -> usize {
        let tokenizer = self.tokenizer;
        *self
            .newline_tokens
            .entry(tail.to_string())
            .or_insert_with(|| {
                tokenizer
                    .count(&format!("{tail}\n"))
                    .saturating_sub(tokenizer.count(tail))
            })
    }

    fn header(&mut self, unit: UnitIx) -> usize {
        let (tokenizer, analyses) = (self.tokenizer, self.analyses);
        *self.header_tokens.entry(unit).or_insert_with(|| {
            analyses[unit]
                .header
                .as_deref()
                .map_or(0, |h| tokenizer.count(h))
        })
    }

    /// A section's heading, with the blank line before it.
    fn section(&mut self, s: Section) -> usize {
        let tokenizer = self.tokenizer;
        *self
            .section_tokens
            .entry(s)
            .or_insert_with(|| tokenizer.count(&s.heading()) + 1)
    }
}

/// The end of `text` that a newline after it may merge with: its last character when that
/// is a letter or digit (a newline never joins a word), else its trailing run of
/// punctuation with the space before it, at most 16 characters (`});`, ` */`).
fn tail(text: &str) -> &str {
    let Some(last) = text.chars().next_back() else {
        return text;
    };
    if last.is_alphanumeric() {
        return &text[text.len() - last.len_utf8()..];
    }
    let mut start = text.len();
    for (taken, (i, c)) in text.char_indices().rev().enumerate() {
        if c.is_alphanumeric() || (c.is_whitespace() && c != ' ') || taken == 16 {
            break;
        }
        start = i;
        if c == ' ' {
            break;
        }
    }
    &text[start..]
}

/// The sections and record headers the kept fragments open, so that what a fragment adds
/// to the rendered context, and what removing it gives back, is counted in full: its tag
/// and body, and its record's header line and section heading when it is the only one
/// under them.
#[derive(Debug, Clone, Default)]
struct Layout {
    units: BTreeMap<(Section, UnitIx), usize>,
    sections: BTreeMap<Section, usize>,
}

impl Layout {
    /// The tokens `p` adds.
    fn cost(&self, costs: &mut Costs, p: Placed) -> usize {
        let unit = costs.fragments[p.fragment].unit;
        let mut cost = costs.fragment(p.fragment);
        if !self.units.contains_key(&(p.section, unit)) {
            cost += costs.header(unit);
        }
        if !self.sections.contains_key(&p.section) {
            cost += costs.section(p.section);
        }
        cost
    }

    /// The tokens removing the kept `p` gives back.
    fn refund(&self, costs: &mut Costs, p: Placed) -> usize {
        let unit = costs.fragments[p.fragment].unit;
        let mut refund = costs.fragment(p.fragment);
        if self.units.get(&(p.section, unit)) == Some(&1) {
            refund += costs.header(unit);
        }
        if self.sections.get(&p.section) == Some(&1) {
            refund += costs.section(p.section);
        }
        refund
    }

    /// Adds `p`; returns its cost.
    fn insert(&mut self, costs: &mut Costs, p: Placed) -> usize {
        let cost = self.cost(costs, p);
        let unit = costs.fragments[p.fragment].unit;
        *self.units.entry((p.section, unit)).or_default() += 1;
        *self.sections.entry(p.section).or_default() += 1;
        cost
    }

    /// Removes the kept `p`; returns its refund.
    fn remove(&mut self, costs: &mut Costs, p: Placed) -> usize {
        let refund = self.refund(costs, p);
        let unit = costs.fragments[p.fragment].unit;
        for n in [
            self.units.get_mut(&(p.section, unit)),
            self.sections.get_mut(&p.section),
        ]
        .into_iter()
        .flatten()
        {
            *n = n.saturating_sub(1);
        }
        self.units.retain(|_, n| *n > 0);
        self.sections.retain(|_, n| *n > 0);
        refund
    }
}

/// The kept fragments and the tokens they take.
#[derive(Debug, Clone, Default)]
struct Kept {
    layout: Layout,
    /// Candidate indices, in the order taken.
    order: Vec<usize>,
    used: usize,
}

impl Kept {
    fn insert(&mut self, costs: &mut Costs, candidates: &[Candidate], i: usize) {
        self.used += self.layout.insert(costs, candidates[i].placed);
        self.order.push(i);
    }

    fn remove(&mut self, costs: &mut Costs, candidates: &[Candidate], i: usize) {
        self.used -= self.layout.remove(costs, candidates[i].placed);
        self.order.retain(|&k| k != i);
    }
}

/// Picks what goes into a context of `budget` tokens. `index` (a rendered section and its
/// tokens: the files in play) is rendered with the fragments and its tokens are kept free.
pub(crate) fn select(
    units: &[Unit],
    fragments: &[Fragment],
    analyses: &[UnitAnalysis],
    candidates: &[Candidate],
    budget: usize,
    tokenizer: Tokenizer,
    index: Option<(&str, usize)>,
) -> Selection {
    let full_budget = budget;
    let budget = budget.saturating_sub(index.map_or(0, |(_, tokens)| tokens));
    let mut costs = Costs {
        tokenizer,
        units,
        fragments,
        analyses,
        header_tokens: BTreeMap::new(),
        section_tokens: BTreeMap::new(),
        fragment_tokens: BTreeMap::new(),
        newline_tokens: BTreeMap::new(),
    };
    let mut kept = Kept::default();
    let mut left_out = BTreeMap::new();
    let mandatory = candidates.iter().filter(|c| c.mandatory).count();
    for i in (0..candidates.len()).filter(|&i| candidates[i].mandatory) {
        kept.insert(&mut costs, candidates, i);
    }
    // Score per token, by candidate.
    let mut density: Vec<f64> = vec![0.0; candidates.len()];
    let mut rest: Vec<usize> = Vec::new();
    for (i, c) in candidates.iter().enumerate().filter(|(_, c)| !c.mandatory) {
        if !c.eligible || c.score <= 0.0 {
            left_out.insert(c.placed.fragment, DropReason::LowRelevance);
        } else {
            density[i] = c.score / fragments[c.placed.fragment].tokens.max(MIN_COST) as f64;
            rest.push(i);
        }
    }
    rest.sort_by(|&a, &b| {
        let (ca, cb) = (&candidates[a], &candidates[b]);
        cb.current_change
            .cmp(&ca.current_change)
            .then(cb.working_set.cmp(&ca.working_set))
            .then(density[b].total_cmp(&density[a]))
            .then(ca.placed.order.cmp(&cb.placed.order))
            .then(
                fragments[ca.placed.fragment]
                    .id
                    .cmp(&fragments[cb.placed.fragment].id),
            )
    });
    let mut min_tag: Option<usize> = None;
    for &i in &rest {
        let f = candidates[i].placed.fragment;
        // A cheap bound first: no fragment's tag and newline take fewer tokens than the
        // fewest seen.
        if kept.used + fragments[f].tokens + min_tag.unwrap_or(0) > budget {
            left_out.insert(f, DropReason::Budget);
            continue;
        }
        let tag = costs.fragment(f).saturating_sub(fragments[f].tokens);
        min_tag = Some(min_tag.map_or(tag, |m| m.min(tag)));
        if kept.used + kept.layout.cost(&mut costs, candidates[i].placed) <= budget {
            kept.insert(&mut costs, candidates, i);
        } else {
            left_out.insert(f, DropReason::Budget);
        }
    }
    let mut swap = Swap {
        candidates,
        density: &density,
        budget,
        swapped_in: BTreeSet::new(),
    };
    swap.run(&mut costs, &mut kept, &mut left_out, &rest);
    drop_covered_excerpts(&mut costs, candidates, &mut kept, &mut left_out);
    fill_leftover(&mut costs, candidates, &mut kept, &mut left_out, budget);
    // Verify on the rendered text; while over, drop the optional fragment worth least per
    // token (the current change last).
    loop {
        let placed: Vec<Placed> = kept.order.iter().map(|&i| candidates[i].placed).collect();
        let (context, order) = render(
            units,
            fragments,
            analyses,
            &placed,
            index.map(|(text, _)| text),
        );
        let tokens = tokenizer.count(&context);
        if tokens <= full_budget || kept.order.len() == mandatory {
            let mut layout = Layout::default();
            let rendered_tokens = order
                .iter()
                .map(|&p| (p.fragment, layout.insert(&mut costs, p)))
                .collect();
            return Selection {
                context,
                tokens,
                kept: order,
                left_out,
                conflict: (tokens > full_budget).then_some(tokens),
                rendered_tokens,
            };
        }
        let mut over = tokens - full_budget;
        while over > 0 {
            let least = kept
                .order
                .iter()
                .copied()
                .filter(|&k| !candidates[k].mandatory)
                .min_by(|&a, &b| {
                    let (ca, cb) = (&candidates[a], &candidates[b]);
                    ca.current_change
                        .cmp(&cb.current_change)
                        .then(ca.working_set.cmp(&cb.working_set))
                        .then(density[a].total_cmp(&density[b]))
                        .then(cb.placed.order.cmp(&ca.placed.order))
                        .then(cb.placed.chunk.cmp(&ca.placed.chunk))
                });
            let Some(k) = least else { break };
            let before = kept.used;
            kept.remove(&mut costs, candidates, k);
            over = over.saturating_sub((before - kept.used).max(1));
            left_out.insert(candidates[k].placed.fragment, DropReason::Budget);
        }
    }
}

/// The budget left after the eligible fragments goes to the `leftover` candidates left out
/// as `low_relevance` (with a positive score), by score per token, while they fit; they
/// never take the place of an eligible fragment.
fn fill_leftover(
    costs: &mut Costs,
    candidates: &[Candidate],
    kept: &mut Kept,
    left_out: &mut BTreeMap<FragmentIx, DropReason>,
    budget: usize,
) {
    let fragments = costs.fragments;
    let density = |i: usize| {
        let c = &candidates[i];
        c.score / fragments[c.placed.fragment].tokens.max(MIN_COST) as f64
    };
    let mut rest: Vec<usize> = (0..candidates.len())
        .filter(|&i| {
            let c = &candidates[i];
            c.leftover
                && c.score > 0.0
                && left_out.get(&c.placed.fragment) == Some(&DropReason::LowRelevance)
        })
        .collect();
    // What the session read of its files first, then what its tools printed.
    let not_file =
        |i: usize| costs.units[fragments[candidates[i].placed.fragment].unit].kind != Kind::File;
    rest.sort_by(|&a, &b| {
        not_file(a)
            .cmp(&not_file(b))
            .then(density(b).total_cmp(&density(a)))
            .then(candidates[a].placed.order.cmp(&candidates[b].placed.order))
            .then(candidates[a].placed.chunk.cmp(&candidates[b].placed.chunk))
    });
    for i in rest {
        if kept.used + kept.layout.cost(costs, candidates[i].placed) <= budget {
            kept.insert(costs, candidates, i);
            left_out.remove(&candidates[i].placed.fragment);
        }
    }
}

/// Drops every kept excerpt whose shown lines are all in the kept chunks of its record: it
/// would show them twice. It is left out as `covered`.
fn drop_covered_excerpts(
    costs: &mut Costs,
    candidates: &[Candidate],
    kept: &mut Kept,
    left_out: &mut BTreeMap<FragmentIx, DropReason>,
) {
    let (units, fragments) = (costs.units, costs.fragments);
    let fragment = |i: usize| &fragments[candidates[i].placed.fragment];
    let covered: Vec<usize> = kept
        .order
        .iter()
        .copied()
        .filter(|&i| fragment(i).excerpt && !candidates[i].mandatory)
        .filter(|&i| {
            let unit = fragment(i).unit;
            let chunks: Vec<&str> = kept
                .order
                .iter()
                .map(|&k| fragment(k))
                .filter(|g| g.unit == unit && !g.excerpt)
                .map(|g| g.text(units))
                .collect();
            !chunks.is_empty()
                && excerpt::shown_lines(fragment(i).text(units))
                    .all(|l| chunks.iter().any(|c| c.contains(l.trim())))
        })
        .collect();
    for i in covered {
        kept.remove(costs, candidates, i);
        left_out.insert(candidates[i].placed.fragment, DropReason::Covered);
    }
}

/// The swap pass: a fragment left out for budget goes in when dropping lower-value kept
/// fragments frees its room and the fragments that go in (it, and any other left-out ones
/// that then fit) score more in sum than the ones dropped.
struct Swap<'a> {
    candidates: &'a [Candidate],
    /// Score per token, by candidate.
    density: &'a [f64],
    budget: usize,
    /// Fragments a swap put in: never dropped by a later swap, so swaps cannot cycle.
    swapped_in: BTreeSet<usize>,
}

impl Swap<'_> {
    fn is_out(&self, left_out: &BTreeMap<FragmentIx, DropReason>, i: usize) -> bool {
        left_out.get(&self.candidates[i].placed.fragment) == Some(&DropReason::Budget)
    }

    fn run(
        &mut self,
        costs: &mut Costs,
        kept: &mut Kept,
        left_out: &mut BTreeMap<FragmentIx, DropReason>,
        rest: &[usize],
    ) {
        let candidates = self.candidates;
        let mut by_score: Vec<usize> = rest
            .iter()
            .copied()
            .filter(|&i| self.is_out(left_out, i))
            .collect();
        by_score.sort_by(|&a, &b| {
            candidates[b]
                .score
                .total_cmp(&candidates[a].score)
                .then(a.cmp(&b))
        });
        by_score.truncate(SWAP_TRIES);
        for &i in &by_score {
            if !self.is_out(left_out, i) {
                continue;
            }
            // All that could go in: what the dropped fragments must score less than.
            let could_gain: f64 = by_score
                .iter()
                .filter(|&&j| self.is_out(left_out, j))
                .map(|&j| candidates[j].score)
                .sum();
            let need = (kept.used + kept.layout.cost(costs, candidates[i].placed))
                .saturating_sub(self.budget);
            let Some(drop) = self.victims(costs, kept, need, could_gain) else {
                continue;
            };
            let mut trial = kept.clone();
            for &v in &drop {
                trial.remove(costs, candidates, v);
            }
            let mut take = Vec::new();
            for &j in std::iter::once(&i).chain(&by_score) {
                if take.contains(&j) || !self.is_out(left_out, j) {
                    continue;
                }
                if trial.used + trial.layout.cost(costs, candidates[j].placed) <= self.budget {
                    trial.insert(costs, candidates, j);
                    take.push(j);
                } else if j == i {
                    break;
                }
            }
            let lost: f64 = drop.iter().map(|&v| candidates[v].score).sum();
            let gain: f64 = take.iter().map(|&j| candidates[j].score).sum();
            if take.first() != Some(&i) || lost >= gain {
                continue;
            }
            *kept = trial;
            for &v in &drop {
                left_out.insert(candidates[v].placed.fragment, DropReason::Budget);
            }
            for j in take {
                left_out.remove(&candidates[j].placed.fragment);
                self.swapped_in.insert(j);
            }
        }
    }

    /// The kept optional fragments to drop to free `need` tokens, losing as little score as
    /// possible: the least score per token first (skipping any worth `could_gain` or more),
    /// then without those the rest can spare; or the single fragment of least score that
    /// frees enough alone, when that loses less.
    fn victims(
        &self,
        costs: &mut Costs,
        kept: &Kept,
        need: usize,
        could_gain: f64,
    ) -> Option<Vec<usize>> {
        let candidates = self.candidates;
        if need == 0 {
            return Some(Vec::new());
        }
        let mut pool: Vec<usize> = kept
            .order
            .iter()
            .copied()
            .filter(|&k| {
                let c = &candidates[k];
                !c.mandatory && !c.current_change && !c.working_set && !self.swapped_in.contains(&k)
            })
            .collect();
        pool.sort_by(|&a, &b| {
            self.density[a]
                .total_cmp(&self.density[b])
                .then(candidates[b].placed.order.cmp(&candidates[a].placed.order))
                .then(a.cmp(&b))
        });
        let freed = |costs: &mut Costs, drop: &[usize]| {
            let mut layout = kept.layout.clone();
            drop.iter()
                .map(|&v| layout.remove(costs, candidates[v].placed))
                .sum::<usize>()
        };
        let mut greedy: Vec<usize> = Vec::new();
        let (mut lost, mut room) = (0.0, 0);
        let mut trial = kept.layout.clone();
        for &v in &pool {
            if room >= need {
                break;
            }
            if lost + candidates[v].score >= could_gain {
                continue;
            }
            lost += candidates[v].score;
            room += trial.remove(costs, candidates[v].placed);
            greedy.push(v);
        }
        let greedy = (room >= need).then(|| {
            // Keep back, most valuable first, any victim the others can spare.
            let mut by_value = greedy.clone();
            by_value.sort_by(|&a, &b| candidates[b].score.total_cmp(&candidates[a].score));
            for v in by_value {
                let without: Vec<usize> = greedy.iter().copied().filter(|&g| g != v).collect();
                if freed(costs, &without) >= need {
                    greedy = without;
                }
            }
            greedy
        });
        let single = pool
            .iter()
            .copied()
            .filter(|&v| {
                candidates[v].score < could_gain
                    && kept.layout.refund(costs, candidates[v].placed) >= need
            })
            .min_by(|&a, &b| {
                candidates[a]
                    .score
                    .total_cmp(&candidates[b].score)
                    .then(a.cmp(&b))
            });
        let score_of = |drop: &[usize]| drop.iter().map(|&v| candidates[v].score).sum::<f64>();
        match (greedy, single) {
            (Some(g), Some(s)) if candidates[s].score < score_of(&g) => Some(vec![s]),
            (Some(g), _) => Some(g),
            (None, s) => s.map(|s| vec![s]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::records::{Common, Message, Records, Role};

    fn setup(n: usize) -> (Vec<Unit>, Vec<Fragment>, Vec<UnitAnalysis>) {
        setup_with(n, |i| format!("note {i} about the parser and its tokens"))
    }

    /// A task and `n` assistant messages with the given texts, one fragment each.
    fn setup_with(
        n: usize,
        text: impl Fn(usize) -> String,
    ) -> (Vec<Unit>, Vec<Fragment>, Vec<UnitAnalysis>) {
        let records = Records {
            task: Some("Fix the parser".into()),
            messages: (0..n)
                .map(|i| Message {
                    common: Common::default(),
                    role: Role::Assistant,
                    text: text(i),
                })
                .collect(),
            ..Records::default()
        };
        let (units, mut frags) = normalize(&records, None).unwrap();
        for f in &mut frags {
            f.tokens = Tokenizer::O200kBase.count(f.text(&units));
        }
        let analyses = crate::optimizer::analysis::all_live(&units);
        (units, frags, analyses)
    }

    fn candidates(
        units: &[Unit],
        frags: &[Fragment],
        score: impl Fn(usize) -> f64,
    ) -> Vec<Candidate> {
        frags
            .iter()
            .enumerate()
            .map(|(i, f)| Candidate {
                placed: Placed {
                    section: if i == 0 {
                        Section::Task
                    } else {
                        Section::Notes
                    },
                    order: units[f.unit].order,
                    chunk: f.chunk,
                    fragment: FragmentIx(i),
                },
                mandatory: i == 0,
                score: score(i),
                eligible: true,
                current_change: false,
                working_set: false,
                leftover: false,
            })
            .collect()
    }

    #[test]
    fn fills_by_score_within_budget() {
        let (units, frags, analyses) = setup(20);
        let cands = candidates(&units, &frags, |i| i as f64);
        let s = select(
            &units,
            &frags,
            &analyses,
            &cands,
            120,
            Tokenizer::O200kBase,
            None,
        );
        assert!(s.tokens <= 120, "{}", s.tokens);
        assert_eq!(Tokenizer::O200kBase.count(&s.context), s.tokens);
        assert!(
            s.kept.iter().any(|p| p.fragment == FragmentIx(0)),
            "the task is kept"
        );
        assert!(
            s.kept.iter().any(|p| p.fragment == FragmentIx(20)),
            "the best note is kept"
        );
        assert_eq!(s.left_out.get(&FragmentIx(1)), Some(&DropReason::Budget));
        assert!(s.conflict.is_none());
    }

    #[test]
    fn mandatory_over_budget_is_a_conflict_not_a_drop() {
        let (units, frags, analyses) = setup(3);
        let cands = candidates(&units, &frags, |_| 1.0);
        let s = select(
            &units,
            &frags,
            &analyses,
            &cands,
            5,
            Tokenizer::O200kBase,
            None,
        );
        assert!(s.kept.iter().any(|p| p.fragment == FragmentIx(0)));
        assert_eq!(s.conflict, Some(s.tokens));
        assert_eq!(s.kept.len(), 1);
    }

    /// Words enough for about `tokens` o200k tokens.
    fn words(tokens: usize) -> String {
        "parser ".repeat(tokens)
    }

    #[test]
    fn swap_pass_trades_cheap_notes_for_a_big_valuable_fragment() {
        // Fragment 1 is about 250 tokens: less score per token than the notes, but more
        // score than the notes that make room for it.
        let (units, frags, analyses) = setup_with(6, |i| {
            if i == 0 {
                words(250)
            } else {
                format!("note {i}")
            }
        });
        let big =
            |score: f64| candidates(&units, &frags, move |i| if i == 1 { score } else { 1.0 });
        let all = select(
            &units,
            &frags,
            &analyses,
            &big(8.0),
            100_000,
            Tokenizer::O200kBase,
            None,
        );
        assert_eq!(all.kept.len(), 7);
        let budget = all.tokens - 40;
        let s = select(
            &units,
            &frags,
            &analyses,
            &big(8.0),
            budget,
            Tokenizer::O200kBase,
            None,
        );
        let kept: Vec<usize> = s.kept.iter().map(|p| p.fragment.0).collect();
        assert!(kept.contains(&1), "{kept:?}");
        assert!(kept.len() < 7, "some notes made room: {kept:?}");
        assert!((2..7).any(|f| s.left_out.get(&FragmentIx(f)) == Some(&DropReason::Budget)));
        assert!(s.tokens <= budget);
        // Without the room to gain, nothing is swapped.
        let s = select(
            &units,
            &frags,
            &analyses,
            &big(1.5),
            budget,
            Tokenizer::O200kBase,
            None,
        );
        assert!(!s.kept.iter().any(|p| p.fragment == FragmentIx(1)));
    }

    #[test]
    fn swap_drops_the_one_fragment_that_loses_least() {
        // A (250 tokens, 4.5) is left out by a few tokens. Dropping the two short notes
        // C and D (1.8 each, least score per token) would free the room but lose 3.6;
        // dropping B alone (100 tokens, 3.0) loses less.
        let texts = [words(250), words(100), "note c".into(), "note d".into()];
        let (units, frags, analyses) = setup_with(4, |i| texts[i].clone());
        assert_eq!(frags.len(), 5, "one fragment per message");
        let scores = [1.0, 4.5, 3.0, 1.8, 1.8];
        let cands = candidates(&units, &frags, |i| scores[i]);
        let all = select(
            &units,
            &frags,
            &analyses,
            &cands,
            100_000,
            Tokenizer::O200kBase,
            None,
        );
        assert_eq!(all.kept.len(), 5);
        let budget = all.tokens - 40;
        let s = select(
            &units,
            &frags,
            &analyses,
            &cands,
            budget,
            Tokenizer::O200kBase,
            None,
        );
        let kept: Vec<usize> = s.kept.iter().map(|p| p.fragment.0).collect();
        assert_eq!(kept, [0, 1, 3, 4], "B made room for A");
        assert_eq!(s.left_out.get(&FragmentIx(2)), Some(&DropReason::Budget));
        assert!(s.tokens <= budget);
    }

    #[test]
    fn rendered_costs_add_up_to_the_context() {
        let (units, frags, analyses) = setup(20);
        let cands = candidates(&units, &frags, |i| i as f64);
        let s = select(
            &units,
            &frags,
            &analyses,
            &cands,
            300,
            Tokenizer::O200kBase,
            None,
        );
        let sum: usize = s.rendered_tokens.values().sum();
        // Pieces are counted as rendered; only a blank line before a heading may merge
        // with the newline before it.
        assert!(
            sum >= s.tokens && sum <= s.tokens + 2,
            "{sum} vs {}",
            s.tokens
        );
        assert_eq!(s.rendered_tokens.len(), s.kept.len());
    }

    #[test]
    fn the_tail_a_newline_may_merge_with() {
        assert_eq!(tail("let x = f(a, b);"), ");");
        assert_eq!(tail("x = [a, b] });"), " });");
        assert_eq!(tail("return x\n}"), "}");
        assert_eq!(tail("it works"), "s");
        assert_eq!(tail("ends in é"), "é");
        assert_eq!(tail(""), "");
        assert_eq!(tail(&"-".repeat(40)).len(), 16);
    }

    #[test]
    fn ties_break_by_record_order() {
        let (units, frags, analyses) = setup(4);
        let cands = candidates(&units, &frags, |_| 1.0);
        let one = select(
            &units,
            &frags,
            &analyses,
            &cands,
            60,
            Tokenizer::O200kBase,
            None,
        );
        let kept: Vec<usize> = one.kept.iter().map(|p| p.fragment.0).collect();
        assert!(kept.len() >= 2 && kept.len() < 5, "{kept:?}");
        assert_eq!(kept[..2], [0, 1]);
    }
}

#[cfg(test)]
mod current_change_tests {
    use crate::optimizer::{build, BuildConfig};
    use crate::records::{Common, DiffRecord, Records};

    /// A change bigger than the whole budget: before diffs were cut at hunks it could not be
    /// shown at all; now its first hunks lead, within their share of the budget.
    #[test]
    fn a_change_bigger_than_the_budget_shows_its_first_hunks_within_their_share() {
        let hunk = |h: usize| {
            let mut text = format!("@@ -{0},20 +{0},20 @@\n", h * 100);
            for l in 0..20 {
                text.push_str(&format!("-let old_{h}_{l} = compute_total({l});\n"));
                text.push_str(&format!(
                    "+let new_{h}_{l} = compute_total_checked({l})?;\n"
                ));
            }
            text
        };
        let diff: String = std::iter::once("--- a/src/ledger.rs\n+++ b/src/ledger.rs\n".into())
            .chain((0..30).map(hunk))
            .collect();
        let records = Records {
            task: Some("Make the ledger totals checked.".into()),
            diffs: vec![DiffRecord {
                common: Common {
                    id: Some("d1".into()),
                    timestamp: Some("2026-02-03T05:00:00Z".into()),
                    ..Common::default()
                },
                path: "src/ledger.rs".into(),
                diff,
            }],
            ..Records::default()
        };
        let budget = 1000;
        let config = BuildConfig {
            budget,
            ..BuildConfig::default()
        };
        let tokens = crate::tokenizer::Tokenizer::O200kBase.count(&records.diffs[0].diff);
        assert!(tokens > 3 * budget, "the change is {tokens} tokens");
        let out = build(&records, &config).unwrap();
        assert!(
            out.context
                .contains("+let new_0_0 = compute_total_checked(0)?;"),
            "{}",
            out.context
        );
        assert!(out.stats.output_tokens <= budget);
        let shown = out.sources.iter().filter(|s| s.kind == "diff").count();
        assert!((1..30).contains(&shown), "{shown} of the change's chunks");
    }
}
