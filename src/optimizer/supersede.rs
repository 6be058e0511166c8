//! Superseded information: an older snapshot of the same file, a rejected or superseded
//! decision, an earlier result of the same test, an error fixed by a later passing run, and
//! a log query that only shows an error record's trace again. Superseded units leave the
//! candidates so they never crowd out the current ones; each names what superseded it.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::LazyLock;

use regex::Regex;

use crate::optimizer::dedupe::{
    containment, shingles, Deduped, HashIndex, MIN_SHINGLES, NEAR_DUPLICATE, PARTLY_REDUNDANT,
    POSTING_CAP, SKETCH,
};
use crate::optimizer::extract::terms::term_set;
use crate::optimizer::extract::{failing_tests, paths, signatures, Outcome};
use crate::optimizer::fragment::{is_later, Dropped, Unit, UnitIx};
use crate::optimizer::output::DropReason;
use crate::records::Kind;
use crate::records::{DecisionStatus, Role};

/// Marks superseded units in `deduped.dropped` (units already dropped stay as they are),
/// reusing the word trigrams dedupe computed; a run partly shown again by an error record
/// gets that containment in `deduped.redundancy`.
pub(crate) fn supersede(units: &[Unit], outcomes: &[Outcome], deduped: &mut Deduped) {
    let dropped = &mut deduped.dropped;
    let live: Vec<usize> = (0..units.len()).filter(|&i| dropped[i].is_none()).collect();
    runs_showing_an_error(
        units,
        &deduped.shingles,
        &live,
        dropped,
        &mut deduped.redundancy,
    );
    older_versions(units, &live, dropped);
    decisions(units, &live, dropped);
    turned_down(units, &live, dropped);
    reverts(units, &live, dropped);
    fixed_errors(units, outcomes, &live, dropped);
}

fn later_of(units: &[Unit], a: usize, b: usize) -> usize {
    match is_later(&units[a], &units[b]) {
        Some(true) => a,
        Some(false) => b,
        None => a.max(b),
    }
}

/// A run that did not fail by its exit code (a log query, `kubectl logs … | grep`) whose
/// output recurs in an error record — at least [`NEAR_DUPLICATE`] of its word trigrams are
/// in the error's text — only shows that error again: the error, the structured record of
/// the same failure, supersedes it, whichever came first. A run [`PARTLY_REDUNDANT`] or more
/// contained stays and gets that containment as its `redundancy` (a score input). Errors are
/// indexed by every word trigram (each posting capped at [`POSTING_CAP`]) and each run looks
/// up its [`SKETCH`] smallest, so the pass stays linear. `shingled` holds dedupe's trigrams
/// (every live run's; empty when it has too few).
fn runs_showing_an_error(
    units: &[Unit],
    shingled: &[Vec<u64>],
    live: &[usize],
    dropped: &mut [Option<Dropped>],
    redundancy: &mut [f64],
) {
    let mut index: HashIndex<u64, Vec<usize>> = HashIndex::default();
    let mut sets: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for &i in live.iter().filter(|&&i| units[i].kind == Kind::Error) {
        let set = if shingled[i].is_empty() {
            shingles(&units[i].text)
        } else {
            shingled[i].clone()
        };
        for &h in &set {
            let posting = index.entry(h).or_default();
            if posting.len() < POSTING_CAP {
                posting.push(i);
            }
        }
        sets.insert(i, set);
    }
    if sets.is_empty() {
        return;
    }
    for &i in live {
        let u = &units[i];
        if u.kind != Kind::ToolOutput || !matches!(u.exit_code, None | Some(0)) {
            continue;
        }
        let set = &shingled[i];
        if set.len() < MIN_SHINGLES {
            continue;
        }
        let mut errors: Vec<usize> = set
            .iter()
            .take(SKETCH)
            .filter_map(|h| index.get(h))
            .flatten()
            .copied()
            .collect();
        errors.sort_unstable();
        errors.dedup();
        let best = errors
            .into_iter()
            .map(|e| (containment(set, &sets[&e]), e))
            .max_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        let Some((c, e)) = best else { continue };
        if c < NEAR_DUPLICATE {
            if c >= PARTLY_REDUNDANT && c > redundancy[i] {
                redundancy[i] = c;
            }
            continue;
        }
        dropped[i] = Some(Dropped {
            reason: DropReason::Superseded,
            by: Some(UnitIx(e)),
            detail: format!(
                "shows the error {} ({}) again: {:.0}% of its word trigrams are in it",
                units[e].id,
                units[e].place(),
                c * 100.0
            ),
        });
    }
}

/// Files by path (one file however its separators are written: `src\a.rs`, `./src/a.rs`
/// and `src/a.rs` are one) and test results by name: all but the latest are superseded.
fn older_versions(units: &[Unit], live: &[usize], dropped: &mut [Option<Dropped>]) {
    let mut groups: BTreeMap<(Kind, Cow<str>), Vec<usize>> = BTreeMap::new();
    for &i in live {
        let u = &units[i];
        let key = match u.kind {
            Kind::File => u.path.as_deref().map(paths::normalize_path),
            Kind::TestResult => u.test_name.as_deref().map(Cow::Borrowed),
            _ => None,
        };
        if let Some(key) = key {
            groups.entry((u.kind, key)).or_default().push(i);
        }
    }
    for ((kind, key), group) in groups {
        let keep = group
            .iter()
            .copied()
            .reduce(|a, b| later_of(units, a, b))
            .unwrap_or(0);
        for i in group.into_iter().filter(|&i| i != keep) {
            let what = if kind == Kind::File {
                format!("older snapshot of {key}")
            } else {
                format!("earlier result of test `{key}`")
            };
            dropped[i] = Some(Dropped {
                reason: DropReason::Superseded,
                by: Some(UnitIx(keep)),
                detail: format!(
                    "{what}; current: {} ({})",
                    units[keep].id,
                    units[keep].place()
                ),
            });
        }
    }
}

/// The lines a diff adds and removes (without the `+++`/`---` file headers), each sorted.
fn changed_lines(diff: &str) -> (Vec<&str>, Vec<&str>) {
    let (mut added, mut removed) = (Vec::new(), Vec::new());
    for line in diff.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        if let Some(l) = line.strip_prefix('+') {
            added.push(l);
        } else if let Some(l) = line.strip_prefix('-') {
            removed.push(l);
        }
    }
    added.sort_unstable();
    removed.sort_unstable();
    (added, removed)
}

/// A diff that exactly undoes an earlier diff of the same path (it adds what that one
/// removed and removes what it added) leaves as `superseded` by the diff it reverts: the
/// pair changes nothing, and the earlier diff shows what was tried.
fn reverts(units: &[Unit], live: &[usize], dropped: &mut [Option<Dropped>]) {
    let mut diffs: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&i| units[i].kind == Kind::Diff && units[i].path.is_some())
        .collect();
    diffs.sort_by(|&a, &b| match is_later(&units[a], &units[b]) {
        Some(true) => std::cmp::Ordering::Greater,
        Some(false) => std::cmp::Ordering::Less,
        None => a.cmp(&b),
    });
    let mut seen: BTreeMap<(&str, Vec<&str>, Vec<&str>), usize> = BTreeMap::new();
    for i in diffs {
        let path = units[i].path.as_deref().unwrap_or("");
        let (added, removed) = changed_lines(&units[i].text);
        if added.is_empty() && removed.is_empty() {
            continue;
        }
        let inverse = (path, removed.clone(), added.clone());
        if let Some(a) = seen.remove(&inverse) {
            dropped[i] = Some(Dropped {
                reason: DropReason::Superseded,
                by: Some(UnitIx(a)),
                detail: format!(
                    "reverts {} ({}): together they change nothing",
                    units[a].id,
                    units[a].place()
                ),
            });
        } else {
            seen.insert((path, added, removed), i);
        }
    }
}

/// Rejected and superseded decisions leave; each names the accepted decision that shares
/// the most words with it (the latest on a tie), if there is one.
fn decisions(units: &[Unit], live: &[usize], dropped: &mut [Option<Dropped>]) {
    let accepted: Vec<(usize, _)> = live
        .iter()
        .filter(|&&i| units[i].decision_status == Some(DecisionStatus::Accepted))
        .map(|&i| (i, term_set(&units[i].text)))
        .collect();
    for &i in live {
        let status = units[i].decision_status;
        if !matches!(
            status,
            Some(DecisionStatus::Rejected | DecisionStatus::Superseded)
        ) {
            continue;
        }
        let terms = term_set(&units[i].text);
        let best = accepted
            .iter()
            .filter(|(a, _)| is_later(&units[i], &units[*a]) != Some(true))
            .map(|(a, t)| (t.intersection(&terms).count(), *a))
            .max();
        let state = if status == Some(DecisionStatus::Rejected) {
            "rejected"
        } else {
            "superseded"
        };
        let (by, detail) = match best {
            Some((_, a)) => (
                Some(UnitIx(a)),
                format!(
                    "decision was {state}; in force: {} ({})",
                    units[a].id,
                    units[a].place()
                ),
            ),
            None => (None, format!("decision was {state}")),
        };
        dropped[i] = Some(Dropped {
            reason: DropReason::Superseded,
            by,
            detail,
        });
    }
}

static NEGATED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:not|no|never|instead of|rather than)\s+(?:an?\s+|the\s+)?([a-z][\w-]{3,})",
    )
    .unwrap()
});

/// A proposed decision the user later turns down by name — a user message after it says
/// `not`, `no`, `never`, `instead of` or `rather than` right before one of the decision's
/// words (`…use apscheduler, not a CronJob`) — leaves as `superseded` by that message.
fn turned_down(units: &[Unit], live: &[usize], dropped: &mut [Option<Dropped>]) {
    // Nothing to turn down: the user's messages need no reading (nor `NEGATED` compiling).
    if !live
        .iter()
        .any(|&d| units[d].decision_status == Some(DecisionStatus::Proposed))
    {
        return;
    }
    let user_messages: Vec<(usize, Vec<(String, &str)>)> = live
        .iter()
        .filter(|&&i| units[i].role == Some(Role::User))
        .map(|&i| {
            let negated = NEGATED
                .captures_iter(&units[i].text)
                .filter_map(|c| Some((c.get(1)?.as_str().to_lowercase(), c.get(0)?.as_str())))
                .collect();
            (i, negated)
        })
        .filter(|(_, negated): &(usize, Vec<_>)| !negated.is_empty())
        .collect();
    for &d in live {
        if units[d].decision_status != Some(DecisionStatus::Proposed) {
            continue;
        }
        let words: BTreeSet<String> = units[d]
            .text
            .split(|c: char| !c.is_alphanumeric() && c != '-' && c != '_')
            .map(str::to_lowercase)
            .collect();
        let by = user_messages.iter().find_map(|(m, negated)| {
            let later = is_later(&units[*m], &units[d]) == Some(true);
            let phrase = negated.iter().find(|(w, _)| words.contains(w))?.1;
            later.then_some((*m, phrase))
        });
        if let Some((m, phrase)) = by {
            dropped[d] = Some(Dropped {
                reason: DropReason::Superseded,
                by: Some(UnitIx(m)),
                detail: format!(
                    "proposal turned down by the user (“{phrase}”) in {} ({})",
                    units[m].id,
                    units[m].place()
                ),
            });
        }
    }
}

/// An error (or failing test result) is fixed when the signature or failing test it names
/// showed up in a failed run of some tool whose latest run passed, and that passing run is
/// not known to come before it.
fn fixed_errors(
    units: &[Unit],
    outcomes: &[Outcome],
    live: &[usize],
    dropped: &mut [Option<Dropped>],
) {
    // For each tool: its latest run.
    let mut latest_run: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, u) in units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == Kind::ToolOutput)
    {
        let key = u.tool_key.as_deref().unwrap_or("");
        let e = latest_run.entry(key).or_insert(i);
        *e = later_of(units, *e, i);
    }
    // Evidence seen in failed runs of tools whose latest run passed: evidence key → run.
    let mut fixed_by: BTreeMap<String, usize> = BTreeMap::new();
    for (i, u) in units
        .iter()
        .enumerate()
        .filter(|(_, u)| u.kind == Kind::ToolOutput)
    {
        let Some(&last) = latest_run.get(u.tool_key.as_deref().unwrap_or("")) else {
            continue;
        };
        if outcomes[i] != Outcome::Failed || outcomes[last] != Outcome::Passed || last == i {
            continue;
        }
        for key in evidence(&u.text) {
            fixed_by.entry(key).or_insert(last);
        }
    }
    if fixed_by.is_empty() {
        return;
    }
    for &i in live {
        let u = &units[i];
        let failing_test = u.kind == Kind::TestResult && outcomes[i] == Outcome::Failed;
        if u.kind != Kind::Error && !failing_test {
            continue;
        }
        let mut keys = evidence(&u.text);
        if let Some(name) = &u.test_name {
            keys.push(format!("test\0{name}"));
        }
        let by = keys
            .iter()
            .filter_map(|k| fixed_by.get(k))
            .copied()
            .find(|&run| is_later(&units[run], u) != Some(false));
        if let Some(run) = by {
            dropped[i] = Some(Dropped {
                reason: DropReason::Superseded,
                by: Some(UnitIx(run)),
                detail: format!(
                    "fixed: a later run of `{}` passed ({}, {})",
                    units[run].tool.as_deref().unwrap_or(""),
                    units[run].id,
                    units[run].place()
                ),
            });
        }
    }
}

/// Error signature keys and failing test names in `text`, as evidence keys.
fn evidence(text: &str) -> Vec<String> {
    signatures::signatures(text)
        .iter()
        .map(|s| format!("sig\0{}", s.key()))
        .chain(
            failing_tests::failing_tests(text)
                .into_iter()
                .map(|t| format!("test\0{t}")),
        )
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::dedupe::dedupe;
    use crate::optimizer::extract::outcomes as compute_outcomes;
    use crate::optimizer::normalize::normalize;
    use crate::records::{Common, Decision, ErrorRecord, FileRecord, Records, ToolOutput};

    fn run_super(records: &Records) -> (Vec<Unit>, Vec<Option<Dropped>>) {
        let (units, _) = normalize(records, None).unwrap();
        let outcomes = compute_outcomes(&units, 1);
        let mut deduped = Deduped {
            dropped: vec![None; units.len()],
            redundancy: vec![0.0; units.len()],
            shingles: units.iter().map(|u| shingles(&u.text)).collect(),
            ..Deduped::default()
        };
        supersede(&units, &outcomes, &mut deduped);
        (units, deduped.dropped)
    }

    fn file(path: &str, content: &str) -> FileRecord {
        FileRecord {
            common: Common::default(),
            path: path.into(),
            content: content.into(),
        }
    }

    fn decision(text: &str, status: DecisionStatus) -> Decision {
        Decision {
            common: Common::default(),
            text: text.into(),
            status,
        }
    }

    fn run(out: &str, exit: i64) -> ToolOutput {
        ToolOutput {
            common: Common::default(),
            tool: "pytest".into(),
            args: None,
            output: out.into(),
            exit_code: Some(exit),
            cwd: None,
        }
    }

    #[test]
    fn older_file_snapshot_is_superseded_by_the_newer() {
        let records = Records {
            files: vec![
                file("src/a.ts", "v1"),
                file("src/b.ts", "b"),
                file("src/a.ts", "v2"),
            ],
            ..Records::default()
        };
        let (_, dropped) = run_super(&records);
        let d = dropped[0].as_ref().unwrap();
        assert_eq!((d.reason, d.by), (DropReason::Superseded, Some(UnitIx(2))));
        assert!(d.detail.starts_with("older snapshot of src/a.ts"));
        assert!(dropped[1].is_none() && dropped[2].is_none());
    }

    #[test]
    fn a_snapshot_of_one_file_written_with_other_separators_is_older_too() {
        // A Windows session: Claude Code's `Read` writes `src\a.ts`, a Git Bash read `src/a.ts`.
        let records = Records {
            files: vec![
                file("src\\a.ts", "v1"),
                file("./src/a.ts", "v2"),
                file("src/a.ts", "v3"),
                file("src/A.ts", "other"),
            ],
            ..Records::default()
        };
        let (_, dropped) = run_super(&records);
        let by: Vec<Option<UnitIx>> = dropped
            .iter()
            .map(|d| d.as_ref().and_then(|d| d.by))
            .collect();
        assert_eq!(by, [Some(UnitIx(2)), Some(UnitIx(2)), None, None]);
    }

    #[test]
    fn rejected_decision_names_the_accepted_one() {
        let records = Records {
            decisions: vec![
                decision("Store money as floats", DecisionStatus::Rejected),
                decision("Log every request", DecisionStatus::Accepted),
                decision("Store money as integer cents", DecisionStatus::Accepted),
            ],
            ..Records::default()
        };
        let (_, dropped) = run_super(&records);
        assert_eq!(dropped[0].as_ref().unwrap().by, Some(UnitIx(2)));
        assert!(dropped[1].is_none() && dropped[2].is_none());
    }

    #[test]
    fn a_proposal_the_user_turns_down_by_name_is_superseded() {
        let at = |ts: &str| Common {
            timestamp: Some(ts.into()),
            ..Common::default()
        };
        let user = |ts: &str, text: &str| crate::records::Message {
            common: at(ts),
            role: Role::User,
            text: text.into(),
        };
        let proposal = |ts: &str, text: &str| Decision {
            common: at(ts),
            text: text.into(),
            status: DecisionStatus::Proposed,
        };
        let records = Records {
            messages: vec![
                user(
                    "2024-05-01T09:00:00Z",
                    "No CronJob for the cache warmer either.",
                ),
                user(
                    "2024-05-01T11:00:00Z",
                    "Use the in-process scheduler, not a CronJob.",
                ),
            ],
            decisions: vec![
                proposal(
                    "2024-05-01T10:00:00Z",
                    "Run the cleanup from a Kubernetes CronJob.",
                ),
                proposal("2024-05-01T10:00:00Z", "Batch the deletes by 5,000 rows."),
                proposal("2024-05-01T11:30:00Z", "Trigger the report from a CronJob."),
            ],
            ..Records::default()
        };
        let (units, dropped) = run_super(&records);
        let d = dropped[2].as_ref().unwrap();
        assert_eq!((d.reason, d.by), (DropReason::Superseded, Some(UnitIx(1))));
        assert!(d.detail.contains("not a CronJob"), "{}", d.detail);
        assert!(dropped[3].is_none(), "the user did not name it");
        assert!(dropped[4].is_none(), "proposed after the user spoke");
        assert_eq!(units[2].decision_status, Some(DecisionStatus::Proposed));
    }

    #[test]
    fn error_fixed_by_a_later_passing_run() {
        let records = Records {
            tool_outputs: vec![
                run(
                    "E   ValueError: bad cents\nFAILED tests/test_a.py::test_x - ValueError",
                    1,
                ),
                run("1 passed", 0),
            ],
            errors: vec![
                ErrorRecord {
                    common: Common::default(),
                    message: "ValueError: bad cents".into(),
                    stack: None,
                },
                ErrorRecord {
                    common: Common::default(),
                    message: "KeyError: 'id'".into(),
                    stack: None,
                },
            ],
            ..Records::default()
        };
        let (_, dropped) = run_super(&records);
        let d = dropped[2].as_ref().unwrap();
        assert_eq!((d.reason, d.by), (DropReason::Superseded, Some(UnitIx(1))));
        assert!(dropped[3].is_none(), "an unrelated error stays");
    }

    #[test]
    fn a_log_query_showing_an_error_again_is_superseded_by_the_error() {
        let trace = "Traceback (most recent call last):\n  File \"/srv/app/api.py\", line 112, in create_order\n    entry = client.post_entry(order.id, order.total)\n  File \"/srv/app/client.py\", line 47, in post_entry\n    response.raise_for_status()\nHTTPError: 502 Server Error: Bad Gateway for url: http://ledger/v1/entries";
        let at = |tool: &str, out: String, exit: i64, ts: &str| ToolOutput {
            common: Common {
                timestamp: Some(ts.into()),
                ..Common::default()
            },
            tool: tool.into(),
            args: None,
            output: out,
            exit_code: Some(exit),
            cwd: None,
        };
        let records = Records {
            tool_outputs: vec![
                at(
                    "kubectl logs deploy/orders | grep -A9 Traceback",
                    trace.into(),
                    0,
                    "2024-05-01T10:00:00Z",
                ),
                // A failed run is an attempt: it stays even when it shows the same trace.
                at(
                    "python api.py",
                    format!(
                        "{trace}\nprocess exited with status one after printing the error above"
                    ),
                    1,
                    "2024-05-01T09:58:00Z",
                ),
                // Mostly the trace, with more of the log: stays, marked partly redundant.
                at(
                    "kubectl logs deploy/orders --since=1h",
                    format!(
                        "{trace}\n10:00:01 INFO retrying order 88231 in five seconds with backoff"
                    ),
                    0,
                    "2024-05-01T09:59:00Z",
                ),
            ],
            errors: vec![ErrorRecord {
                common: Common::default(),
                message:
                    "HTTPError: 502 Server Error: Bad Gateway for url: http://ledger/v1/entries"
                        .into(),
                stack: Some(trace.into()),
            }],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let outcomes = compute_outcomes(&units, 1);
        let mut deduped = dedupe(&units, 1);
        assert!(
            deduped.dropped.iter().all(Option::is_none),
            "not a near-duplicate"
        );
        supersede(&units, &outcomes, &mut deduped);
        let d = deduped.dropped[0].as_ref().unwrap();
        assert_eq!((d.reason, d.by), (DropReason::Superseded, Some(UnitIx(3))));
        assert!(
            d.detail
                .starts_with(&format!("shows the error {} (", units[3].id)),
            "{}",
            d.detail
        );
        assert!(
            d.detail.ends_with("100% of its word trigrams are in it"),
            "{}",
            d.detail
        );
        assert!(deduped.dropped[1..].iter().all(Option::is_none));
        assert!(deduped.merges.is_empty(), "superseding is not a merge");
        let r = deduped.redundancy[2];
        assert!((PARTLY_REDUNDANT..NEAR_DUPLICATE).contains(&r), "{r}");
    }

    #[test]
    fn error_stays_when_the_latest_run_still_fails() {
        let records = Records {
            tool_outputs: vec![
                run("ValueError: bad cents", 1),
                run("ValueError: bad cents", 1),
            ],
            errors: vec![ErrorRecord {
                common: Common::default(),
                message: "ValueError: bad cents".into(),
                stack: None,
            }],
            ..Records::default()
        };
        let (_, dropped) = run_super(&records);
        assert!(dropped.iter().all(Option::is_none));
    }
}

#[cfg(test)]
mod revert_tests {
    use super::*;
    use crate::optimizer::normalize::normalize;
    use crate::records::{Common, DiffRecord, Records};

    fn diff(path: &str, text: &str) -> DiffRecord {
        DiffRecord {
            common: Common::default(),
            path: path.into(),
            diff: text.into(),
        }
    }

    #[test]
    fn a_revert_is_superseded_by_the_diff_it_undoes() {
        let records = Records {
            diffs: vec![
                diff("a.go", "--- a/a.go\n+++ b/a.go\n-\tsort(x)\n+\tsort(y)\n"),
                diff("b.go", "--- a/b.go\n+++ b/b.go\n+\tsort(x)\n-\tsort(y)\n"),
                diff("a.go", "--- a/a.go\n+++ b/a.go\n+\tsort(x)\n-\tsort(y)\n"),
            ],
            ..Records::default()
        };
        let (units, _) = normalize(&records, None).unwrap();
        let live: Vec<usize> = (0..units.len()).collect();
        let mut dropped = vec![None; units.len()];
        reverts(&units, &live, &mut dropped);
        let by_path = |i: usize| units[i].path.clone();
        let gone: Vec<usize> = (0..units.len()).filter(|&i| dropped[i].is_some()).collect();
        assert_eq!(gone.len(), 1, "only the same-path inverse is a revert");
        let d = dropped[gone[0]].as_ref().unwrap();
        assert_eq!(d.reason, DropReason::Superseded);
        assert_eq!(by_path(gone[0]), Some("a.go".into()));
        assert_eq!(by_path(d.by.unwrap().0), Some("a.go".into()));
        assert!(d.detail.starts_with("reverts "), "{}", d.detail);
    }
}
