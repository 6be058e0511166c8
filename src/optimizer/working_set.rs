//! The working set: the files the session keeps coming back to.
//!
//! A coding agent reads a file, greps it, prints a range of it, edits near it and reads it
//! again; the file it keeps returning to is the one it is working on, whether or not the
//! task names it. A file's *attention* is the number of records that touch it: every read
//! of it (a file record, live or superseded) and every other live record whose text names
//! its path (a command line, a grep hit, a message). What counts is coming back: its share
//! is its attention beyond the first touch over the most any file of the session has beyond
//! its first, `(n − 1) / (max − 1)`, so a file read once and never named again gets none.
//!
//! The `working_set` signal goes to the chunks of the files read, the best chunk of a file
//! first: the file's live chunks are ranked by the score they have without this signal, and
//! the chunk of rank `r` gets `share × ½ʳ`. So the file the session works on is shown by
//! its best part before a long output that merely names it, and a second file it returns
//! to as often gets as much, while no file floods the budget with all of its chunks. The
//! best chunk of each file the session returns to at least ¾ as often as to its most
//! visited one *leads*: selection tries it right after the current change, before the
//! messages and outputs that talk about it, since what the agent works on is the file. The
//! best chunks of the other files it returned to lead as well, most visited first, as long
//! as all the leads fit in a quarter of the budget: short messages that talk about the
//! task outscore a file's chunk per token, and without this a file the agent keeps reading,
//! though less than its most visited one, loses its place to the agent's narration about it.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::extract::{paths, Features};
use crate::optimizer::fragment::{Fragment, Unit};
use crate::optimizer::output::{ScoreComponent, Signal};
use crate::optimizer::regions::{ends_on_segment, Places};
use crate::optimizer::score::{round4, Scored};
use crate::records::Kind;

/// The least share a file needs for its best chunk to *lead* in any case: be tried for the
/// budget right after the mandatory fragments and the current change (see [`apply`]).
pub(crate) const LEAD_SHARE: f64 = 0.75;

/// The share of the budget the leads may take: the best chunks of the other files the session
/// returned to lead too, most visited first, while all the leads' tokens fit in it.
pub(crate) const LEAD_BUDGET_SHARE: f64 = 0.25;

/// Adds to `leads` the fragments of `order` in turn, each while the leads' tokens (`used` of
/// them already taken) fit in `cap`: one that does not fit is skipped, and a smaller one after
/// it may still lead.
pub(crate) fn lead_while_fits(
    order: impl IntoIterator<Item = usize>,
    tokens: impl Fn(usize) -> usize,
    mut used: usize,
    cap: usize,
    leads: &mut BTreeSet<usize>,
) {
    for fi in order {
        if used + tokens(fi) <= cap {
            used += tokens(fi);
            leads.insert(fi);
        }
    }
}

/// Each file the session read, by its normalized lowercase path: how many records touch it.
pub(crate) fn attention(
    units: &[Unit],
    features: &[Features],
    analyses: &[UnitAnalysis],
) -> BTreeMap<String, usize> {
    let mut reads: BTreeMap<String, usize> = BTreeMap::new();
    for u in units.iter().filter(|u| u.kind == Kind::File) {
        if let Some(path) = &u.path {
            *reads
                .entry(paths::normalize_path(path).to_lowercase())
                .or_default() += 1;
        }
    }
    // A bare file name names a file read only when no other file read has that name.
    let mut by_name: HashMap<&str, Option<&str>> = HashMap::new();
    for path in reads.keys() {
        by_name
            .entry(file_name(path))
            .and_modify(|only| *only = None)
            .or_insert(Some(path.as_str()));
    }
    let mut named: BTreeMap<String, usize> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        if !analyses[i].is_live() || u.kind == Kind::File {
            continue;
        }
        // What it shows, and the command line that made it.
        let command: Vec<String> = u
            .tool_key
            .as_deref()
            .map(|k| {
                paths::paths(k)
                    .into_iter()
                    .map(|p| p.to_lowercase())
                    .collect()
            })
            .unwrap_or_default();
        let mut touched: Vec<&str> = u
            .fragments
            .clone()
            .flat_map(|fi| &features[fi].identifiers)
            .chain(&command)
            .filter_map(|id| file_named(id, &by_name))
            .collect();
        touched.sort_unstable();
        touched.dedup();
        for path in touched {
            *named.entry(path.to_string()).or_default() += 1;
        }
    }
    for (path, n) in named {
        *reads.entry(path).or_default() += n;
    }
    reads
}

/// The file read that `id` names: by a path ending in its path (or its path ending in
/// `id`, on a `/`), or by its bare name when that is unique.
fn file_named<'a>(id: &str, by_name: &HashMap<&str, Option<&'a str>>) -> Option<&'a str> {
    let candidate = (*by_name.get(file_name(id))?)?;
    let same = candidate == id
        || (!id.contains('/'))
        || ends_on_segment(candidate, id)
        || ends_on_segment(id, candidate);
    same.then_some(candidate)
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Adds the `working_set` component (weight `weight`) to every scored fragment: the chunks
/// of files read get their file's share, halved per rank within the file — ranked by how
/// many of the lines the session's searches hit they show, then those showing no line the
/// file's latest change wrote first ([`Places::rank`]), then by score — (see the module
/// doc); everything else
/// gets 0. It counts as relevance. Returns the fragments that lead:
/// the best chunk of every file whose share is at least [`LEAD_SHARE`], then the best chunks
/// of the other files returned to, most visited first, while the leads' tokens fit in
/// [`LEAD_BUDGET_SHARE`] of `budget`.
pub(crate) fn apply(
    weight: f64,
    units: &[Unit],
    fragments: &[Fragment],
    attention: &BTreeMap<String, usize>,
    places: &Places,
    scores: &mut [Option<Scored>],
    budget: usize,
) -> BTreeSet<usize> {
    let most = attention.values().copied().max().unwrap_or(0);
    let keys: Vec<Option<String>> = units
        .iter()
        .map(|u| match (u.kind, &u.path) {
            (Kind::File, Some(path)) => Some(paths::normalize_path(path).to_lowercase()),
            _ => None,
        })
        .collect();
    let mut by_file: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (fi, f) in fragments.iter().enumerate() {
        if let (Some(path), Some(_)) = (&keys[f.unit.0], &scores[fi]) {
            by_file.entry(path).or_default().push(fi);
        }
    }
    let mut values = vec![0.0; scores.len()];
    let mut leads = BTreeSet::new();
    // The best chunks of the other files returned to: (share, fragment).
    let mut returned_to: Vec<(f64, usize)> = Vec::new();
    for (path, mut chunks) in by_file {
        let share = match attention.get(path) {
            Some(&n) if n > 1 => (n - 1) as f64 / (most - 1) as f64,
            _ => continue,
        };
        let total = |fi: usize| scores[fi].as_ref().map_or(0.0, |s| s.total);
        chunks.sort_by(|&a, &b| {
            places
                .rank(b)
                .cmp(&places.rank(a))
                .then(total(b).total_cmp(&total(a)))
                .then(a.cmp(&b))
        });
        if share >= LEAD_SHARE {
            leads.extend(chunks.first());
        } else {
            returned_to.extend(chunks.first().map(|&c| (share, c)));
        }
        let mut value = share;
        for fi in chunks {
            values[fi] = value;
            value /= 2.0;
        }
    }
    // Most visited first; each leads while the leads fit in their share of the budget.
    returned_to.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let used: usize = leads.iter().map(|&fi: &usize| fragments[fi].tokens).sum();
    lead_while_fits(
        returned_to.into_iter().map(|(_, fi)| fi),
        |fi| fragments[fi].tokens,
        used,
        (LEAD_BUDGET_SHARE * budget as f64) as usize,
        &mut leads,
    );
    for (fi, scored) in scores.iter_mut().enumerate() {
        let Some(s) = scored else { continue };
        let value = values[fi];
        let contribution = round4(value * weight);
        s.components.push(ScoreComponent {
            signal: Signal::WorkingSet,
            value: round4(value),
            weight,
            contribution,
            reason: None,
        });
        s.total = round4(s.total + contribution);
        s.relevance = round4(s.relevance + contribution);
    }
    leads
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::{build, BuildConfig};
    use crate::records::Records;

    fn records(json: &str) -> Records {
        serde_json::from_str(json).unwrap()
    }

    fn session() -> Records {
        // The task names neither file. `b.py` is read twice and grepped; `a.py` is read once.
        records(
            r#"{"task": "the totals come out wrong when a discount is applied",
                "files": [
                  {"path": "src/a.py", "content": "def helper():\n    return 1\n"},
                  {"path": "src/b.py", "content": "def total(items):\n    return sum(items)\n"},
                  {"path": "src/b.py", "content": "def total(items, discount):\n    return sum(items) - discount\n"}
                ],
                "toolOutputs": [
                  {"tool": "bash", "args": {"command": "grep -n total src/b.py"}, "output": "1:def total(items, discount):"}
                ]}"#,
        )
    }

    /// The build's stages up to the features, on one thread.
    fn analysed(records: &Records) -> (Vec<Unit>, Vec<Fragment>, Vec<UnitAnalysis>, Vec<Features>) {
        use crate::optimizer::{analysis, dedupe, extract, normalize, supersede, tokens};
        let (units, mut fragments) = normalize::normalize(records, None).unwrap();
        let mut deduped = dedupe::dedupe(&units, 1);
        let outcomes = extract::outcomes(&units, 1);
        supersede::supersede(&units, &outcomes, &mut deduped);
        let analyses = analysis::analyse(&units, deduped, &outcomes);
        tokens::count(
            &units,
            &mut fragments,
            crate::tokenizer::Tokenizer::O200kBase,
            1,
        );
        let features = extract::extract(&units, &fragments, &analyses, 1);
        (units, fragments, analyses, features)
    }

    #[test]
    fn attention_counts_reads_and_the_records_that_name_a_file() {
        let (units, _, analyses, features) = analysed(&session());
        assert!(
            !analyses[3].is_live(),
            "the older read of b.py is superseded"
        );
        let att = attention(&units, &features, &analyses);
        assert_eq!(att.get("src/a.py"), Some(&1));
        assert_eq!(att.get("src/b.py"), Some(&3));
        assert_eq!(
            att.len(),
            2,
            "only files read are in the working set: {att:?}"
        );
    }

    /// The leads of `records` under `budget`, as the paths of their files.
    fn leads(records: &Records, budget: usize) -> Vec<String> {
        use crate::optimizer::score;
        let (units, fragments, analyses, features) = analysed(records);
        let focus = score::focus(&units, &features, &analyses);
        let state = crate::optimizer::working_state::working_state(&units, &analyses, false);
        let recency = score::Recency::new(&units, &state.steps_after);
        let weights = crate::optimizer::Weights::default();
        let mut scores: Vec<Option<Scored>> = fragments
            .iter()
            .enumerate()
            .map(|(fi, f)| {
                let a = &analyses[f.unit];
                a.is_live()
                    .then(|| score::score(&weights, &focus, &units, f, &features[fi], a, &recency))
            })
            .collect();
        let att = attention(&units, &features, &analyses);
        let places = Places {
            searched: vec![0; fragments.len()],
            written: vec![0; fragments.len()],
        };
        let leads = apply(1.0, &units, &fragments, &att, &places, &mut scores, budget);
        let mut paths: Vec<String> = leads
            .into_iter()
            .map(|fi| units[fragments[fi].unit].path.clone().unwrap())
            .collect();
        paths.sort();
        paths
    }

    #[test]
    fn the_other_files_returned_to_lead_while_a_quarter_of_the_budget_holds_them() {
        // `a.py` is read four times, `b.py` twice (share ⅓), `c.py` once (no share).
        let read = |path: &str, n: usize| {
            format!(r#"{{"path": "{path}", "content": "def f{n}():\n    return {n}  # {path}\n"}}"#)
        };
        let files: Vec<String> = (0..4)
            .map(|n| read("src/a.py", n))
            .chain((0..2).map(|n| read("src/b.py", n)))
            .chain([read("src/c.py", 0)])
            .collect();
        let records = records(&format!(
            r#"{{"task": "the totals are wrong", "files": [{}]}}"#,
            files.join(",")
        ));
        assert_eq!(leads(&records, 4000), ["src/a.py", "src/b.py"]);
        // A quarter of 60 tokens holds `a.py`'s chunk (it leads in any case), not `b.py`'s.
        assert_eq!(leads(&records, 60), ["src/a.py"]);
    }

    #[test]
    fn a_bare_name_counts_only_when_one_file_read_has_it() {
        let mut by_name = HashMap::new();
        by_name.insert("util.py", Some("src/util.py"));
        by_name.insert("mod.rs", None);
        assert_eq!(file_named("util.py", &by_name), Some("src/util.py"));
        assert_eq!(
            file_named("/repo/src/util.py", &by_name),
            Some("src/util.py")
        );
        assert_eq!(file_named("other/util.py", &by_name), None);
        assert_eq!(file_named("mod.rs", &by_name), None);
        assert_eq!(file_named("src/x.py", &by_name), None);
    }

    #[test]
    fn the_file_returned_to_gets_the_signal_its_best_chunk_first() {
        let out = build(&session(), &BuildConfig::default()).unwrap();
        let value = |path: &str| {
            out.sources
                .iter()
                .filter(|s| s.path.as_deref() == Some(path))
                .map(|s| {
                    s.components
                        .iter()
                        .find(|c| c.signal == Signal::WorkingSet)
                        .map(|c| c.value)
                        .unwrap()
                })
                .fold(0.0, f64::max)
        };
        assert_eq!(value("src/b.py"), 1.0);
        assert_eq!(value("src/a.py"), 0.0, "read once, never named again");
        let task = out.sources.iter().find(|s| s.kind == "task").unwrap();
        let c = task
            .components
            .iter()
            .find(|c| c.signal == Signal::WorkingSet)
            .unwrap();
        assert_eq!(c.value, 0.0);
    }
}
