//! Stage 5, select: mandatory fragments first, then the rest by score per token, until the
//! rendered context fills the budget. The budget counts the rendered text — section
//! headings, source tags and run headers included — and is checked on the final text.
//!
//! Tie-breaks are fixed: score per token (descending), then record order, then fragment
//! id. Mandatory content over budget is kept and reported as `BUDGET_CONFLICT`.

use std::collections::{BTreeMap, BTreeSet};

use crate::optimizer::fragment::{is_later, Fragment, Kind, Unit};
use crate::optimizer::render::{render, tag, Placed, Section};
use crate::tokenizer::Tokenizer;

/// The fewest tokens a fragment counts as in score per token: below this, size stops
/// mattering, so a swarm of one-liners cannot outrank one diff or file that matters.
pub const MIN_COST: usize = 96;

/// A fragment that may go into the context.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Its place in the context.
    pub placed: Placed,
    /// Whether it must go in.
    pub mandatory: bool,
    /// Its total score.
    pub score: f64,
    /// Whether it is relevant enough to fill the budget with.
    pub eligible: bool,
    /// Whether it is part of the session's current change (the latest live diff of its
    /// path): tried right after the mandatory fragments.
    pub current_change: bool,
}

/// Per unit: whether it is the latest live diff of its path — the session's current change
/// to that file. When the latest diff of a path reverted an earlier one (`reverted`), the
/// path has no current change.
pub fn current_diffs(units: &[Unit], live: &[bool], reverted: &[bool]) -> Vec<bool> {
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

/// How many of the best fragments left out for budget the swap pass tries (keeps it linear).
pub const SWAP_TRIES: usize = 32;

/// What selection decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    /// The rendered context.
    pub context: String,
    /// Its exact token count.
    pub tokens: usize,
    /// The kept fragments, in render order.
    pub kept: Vec<Placed>,
    /// Candidates left out, with the reason (`budget` or `low_relevance`), by fragment.
    pub left_out: BTreeMap<usize, &'static str>,
    /// Tokens the mandatory content needs when it exceeds the budget.
    pub conflict: Option<usize>,
    /// Per kept fragment: its tokens as rendered (tag, header share and body).
    pub rendered_tokens: BTreeMap<usize, usize>,
}

/// Token costs, counted once each and cached.
struct Costs<'a> {
    tokenizer: Tokenizer,
    units: &'a [Unit],
    fragments: &'a [Fragment],
    headers: &'a [Option<String>],
    header_tokens: BTreeMap<usize, usize>,
    section_tokens: BTreeMap<Section, usize>,
    fragment_tokens: BTreeMap<usize, usize>,
}

impl Costs<'_> {
    /// Tag and body of a fragment, with its newline.
    fn fragment(&mut self, fi: usize) -> usize {
        let (tokenizer, units, fragments) = (self.tokenizer, self.units, self.fragments);
        *self.fragment_tokens.entry(fi).or_insert_with(|| {
            let f = &fragments[fi];
            tokenizer.count(&tag(f, &units[f.unit])) + f.tokens + 1
        })
    }

    fn header(&mut self, unit: usize) -> usize {
        let (tokenizer, headers) = (self.tokenizer, self.headers);
        *self
            .header_tokens
            .entry(unit)
            .or_insert_with(|| headers[unit].as_deref().map_or(0, |h| tokenizer.count(h)))
    }

    fn section(&mut self, s: Section) -> usize {
        let tokenizer = self.tokenizer;
        *self
            .section_tokens
            .entry(s)
            .or_insert_with(|| tokenizer.count(&s.heading()) + 1)
    }
}

/// Picks what goes into a context of `budget` tokens.
pub fn select(
    units: &[Unit],
    fragments: &[Fragment],
    headers: &[Option<String>],
    candidates: &[Candidate],
    budget: usize,
    tokenizer: Tokenizer,
) -> Selection {
    let mut costs = Costs {
        tokenizer,
        units,
        fragments,
        headers,
        header_tokens: BTreeMap::new(),
        section_tokens: BTreeMap::new(),
        fragment_tokens: BTreeMap::new(),
    };
    let mut opened_sections: BTreeSet<Section> = BTreeSet::new();
    let mut opened_units: BTreeSet<(Section, usize)> = BTreeSet::new();
    let mut used = 0usize;
    let mut rendered_tokens = BTreeMap::new();
    let mut add = |c: &Candidate, costs: &mut Costs, dry: bool| -> usize {
        let p = c.placed;
        let unit = fragments[p.fragment].unit;
        let mut cost = costs.fragment(p.fragment);
        if !opened_units.contains(&(p.section, unit)) {
            cost += costs.header(unit);
        }
        if !opened_sections.contains(&p.section) {
            cost += costs.section(p.section);
        }
        if !dry {
            opened_units.insert((p.section, unit));
            opened_sections.insert(p.section);
        }
        cost
    };
    let mut kept: Vec<usize> = Vec::new(); // candidate indices, in the order taken
    let mut left_out = BTreeMap::new();
    let mandatory: Vec<usize> = (0..candidates.len())
        .filter(|&i| candidates[i].mandatory)
        .collect();
    for &i in &mandatory {
        let cost = add(&candidates[i], &mut costs, false);
        rendered_tokens.insert(candidates[i].placed.fragment, cost);
        used += cost;
        kept.push(i);
    }
    let mut rest: Vec<(f64, usize)> = Vec::new();
    for (i, c) in candidates.iter().enumerate().filter(|(_, c)| !c.mandatory) {
        if !c.eligible || c.score <= 0.0 {
            left_out.insert(c.placed.fragment, "low_relevance");
        } else {
            let per_token = c.score / fragments[c.placed.fragment].tokens.max(MIN_COST) as f64;
            rest.push((per_token, i));
        }
    }
    rest.sort_by(|a, b| {
        let (ca, cb) = (&candidates[a.1], &candidates[b.1]);
        cb.current_change
            .cmp(&ca.current_change)
            .then(b.0.total_cmp(&a.0))
            .then(ca.placed.order.cmp(&cb.placed.order))
            .then(
                fragments[ca.placed.fragment]
                    .id
                    .cmp(&fragments[cb.placed.fragment].id),
            )
    });
    let mut min_tag: Option<usize> = None;
    for &(_, i) in &rest {
        let f = candidates[i].placed.fragment;
        // A cheap lower bound first: no fragment's tag is shorter than the shortest seen.
        if used + fragments[f].tokens + 1 + min_tag.unwrap_or(0) > budget {
            left_out.insert(f, "budget");
            continue;
        }
        let tag = costs.fragment(f) - fragments[f].tokens - 1;
        min_tag = Some(min_tag.map_or(tag, |m| m.min(tag)));
        let cost = add(&candidates[i], &mut costs, true);
        if used + cost <= budget {
            add(&candidates[i], &mut costs, false);
            rendered_tokens.insert(candidates[i].placed.fragment, cost);
            used += cost;
            kept.push(i);
        } else {
            left_out.insert(candidates[i].placed.fragment, "budget");
        }
    }
    // Swap pass: a fragment left out for budget goes in when dropping lower-value kept
    // fragments (least score per token first) frees its room, together with any other
    // left-out fragments that then fit, and the dropped ones score less in sum.
    let mut by_score: Vec<usize> = rest
        .iter()
        .map(|&(_, i)| i)
        .filter(|&i| left_out.get(&candidates[i].placed.fragment) == Some(&"budget"))
        .collect();
    by_score.sort_by(|&a, &b| {
        candidates[b]
            .score
            .total_cmp(&candidates[a].score)
            .then(a.cmp(&b))
    });
    by_score.truncate(SWAP_TRIES);
    let mut density: BTreeMap<usize, f64> = rest.iter().map(|&(d, i)| (i, d)).collect();
    let is_out = |left_out: &BTreeMap<usize, &'static str>, i: usize| {
        left_out.get(&candidates[i].placed.fragment) == Some(&"budget")
    };
    for &i in &by_score {
        if !is_out(&left_out, i) {
            continue;
        }
        let cost = add(&candidates[i], &mut costs, true);
        // The other left-out fragments could fill what the swap frees.
        let mut extras_score: f64 = by_score
            .iter()
            .filter(|&&j| j != i && is_out(&left_out, j))
            .map(|&j| candidates[j].score)
            .sum();
        extras_score += candidates[i].score;
        // Kept optional fragments, least score per token first (not the current change).
        let mut victims: Vec<usize> = kept
            .iter()
            .copied()
            .filter(|&k| !candidates[k].mandatory && !candidates[k].current_change)
            .collect();
        victims.sort_by(|&a, &b| {
            density[&a]
                .total_cmp(&density[&b])
                .then(candidates[b].placed.order.cmp(&candidates[a].placed.order))
        });
        let mut freed = budget.saturating_sub(used);
        let mut lost = 0.0;
        let mut drop = Vec::new();
        for &v in &victims {
            if freed >= cost {
                break;
            }
            if lost + candidates[v].score >= extras_score {
                continue; // worth more than all that could go in: never a victim
            }
            lost += candidates[v].score;
            freed += costs.fragment(candidates[v].placed.fragment);
            drop.push(v);
        }
        if freed < cost {
            continue;
        }
        // What goes in: the candidate, then the best left-out fragments that still fit.
        let mut take = vec![i];
        let mut gain = candidates[i].score;
        let mut room = freed - cost;
        for &j in &by_score {
            if j == i || !is_out(&left_out, j) || drop.contains(&j) {
                continue;
            }
            let c = add(&candidates[j], &mut costs, true);
            if c <= room {
                room -= c;
                gain += candidates[j].score;
                take.push(j);
            }
        }
        if lost >= gain {
            continue;
        }
        for &v in &drop {
            let f = candidates[v].placed.fragment;
            rendered_tokens.remove(&f);
            used -= costs.fragment(f);
            left_out.insert(f, "budget");
        }
        kept.retain(|k| !drop.contains(k));
        for j in take {
            let cost = add(&candidates[j], &mut costs, false);
            let f = candidates[j].placed.fragment;
            rendered_tokens.insert(f, cost);
            used += cost;
            left_out.remove(&f);
            kept.push(j);
            density.insert(j, f64::INFINITY);
        }
    }
    // Verify on the rendered text; drop the last-taken optional fragments while over.
    loop {
        let placed: Vec<Placed> = kept.iter().map(|&i| candidates[i].placed).collect();
        let (context, order) = render(units, fragments, headers, &placed);
        let tokens = tokenizer.count(&context);
        let optional = kept.len() - mandatory.len();
        if tokens <= budget || optional == 0 {
            let conflict = (tokens > budget).then_some(tokens);
            return Selection {
                context,
                tokens,
                kept: order,
                left_out,
                conflict,
                rendered_tokens,
            };
        }
        let mut over = tokens - budget;
        while over > 0 && kept.len() > mandatory.len() {
            let i = kept.pop().unwrap_or_default();
            let f = candidates[i].placed.fragment;
            over = over.saturating_sub(rendered_tokens.remove(&f).unwrap_or(1).max(1));
            left_out.insert(f, "budget");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::optimizer::records::{Common, Message, Records, Role};

    fn setup(n: usize) -> (Vec<Unit>, Vec<Fragment>, Vec<Option<String>>) {
        let records = Records {
            task: Some("Fix the parser".into()),
            messages: (0..n)
                .map(|i| Message {
                    common: Common::default(),
                    role: Role::Assistant,
                    text: format!("note {i} about the parser and its tokens"),
                })
                .collect(),
            ..Records::default()
        };
        let (units, mut frags) = normalize(&records, None).unwrap();
        for f in &mut frags {
            f.tokens = Tokenizer::O200kBase.count(f.text(&units));
        }
        let headers = units
            .iter()
            .map(|u| crate::optimizer::render::unit_header(u, None))
            .collect();
        (units, frags, headers)
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
                    fragment: i,
                },
                mandatory: i == 0,
                score: score(i),
                eligible: true,
                current_change: false,
            })
            .collect()
    }

    #[test]
    fn fills_by_score_within_budget() {
        let (units, frags, headers) = setup(20);
        let cands = candidates(&units, &frags, |i| i as f64);
        let s = select(&units, &frags, &headers, &cands, 120, Tokenizer::O200kBase);
        assert!(s.tokens <= 120, "{}", s.tokens);
        assert_eq!(Tokenizer::O200kBase.count(&s.context), s.tokens);
        assert!(s.kept.iter().any(|p| p.fragment == 0), "the task is kept");
        assert!(
            s.kept.iter().any(|p| p.fragment == 20),
            "the best note is kept"
        );
        assert_eq!(s.left_out.get(&1), Some(&"budget"));
        assert!(s.conflict.is_none());
    }

    #[test]
    fn mandatory_over_budget_is_a_conflict_not_a_drop() {
        let (units, frags, headers) = setup(3);
        let cands = candidates(&units, &frags, |_| 1.0);
        let s = select(&units, &frags, &headers, &cands, 5, Tokenizer::O200kBase);
        assert!(s.kept.iter().any(|p| p.fragment == 0));
        assert_eq!(s.conflict, Some(s.tokens));
        assert_eq!(s.kept.len(), 1);
    }

    #[test]
    fn swap_pass_trades_cheap_notes_for_a_big_valuable_fragment() {
        let (units, mut frags, headers) = setup(6);
        // Fragment 1 counts as 1,000 tokens: less score per token than the notes, but
        // more score than the three notes that make room for it.
        frags[1].tokens = 1000;
        let cands = candidates(&units, &frags, |i| if i == 1 { 8.0 } else { 1.0 });
        let s = select(&units, &frags, &headers, &cands, 1100, Tokenizer::O200kBase);
        let kept: Vec<usize> = s.kept.iter().map(|p| p.fragment).collect();
        assert!(kept.contains(&1), "{kept:?}");
        assert!(kept.len() < 7, "some notes made room: {kept:?}");
        assert!((2..7).any(|f| s.left_out.get(&f) == Some(&"budget")));
        // Without the room to gain, nothing is swapped.
        let cands = candidates(&units, &frags, |i| if i == 1 { 2.5 } else { 1.0 });
        let s = select(&units, &frags, &headers, &cands, 1100, Tokenizer::O200kBase);
        assert!(!s.kept.iter().any(|p| p.fragment == 1));
    }

    #[test]
    fn ties_break_by_record_order() {
        let (units, frags, headers) = setup(4);
        let cands = candidates(&units, &frags, |_| 1.0);
        let one = select(&units, &frags, &headers, &cands, 60, Tokenizer::O200kBase);
        let kept: Vec<usize> = one.kept.iter().map(|p| p.fragment).collect();
        assert!(kept.len() >= 2 && kept.len() < 5, "{kept:?}");
        assert_eq!(kept[..2], [0, 1]);
    }
}
