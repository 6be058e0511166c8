//! The session's working state: where in the session each record sits (its position, for
//! recency), and the records that say what the session is doing now — the user's latest
//! instruction, the agent's latest statement, the output of its latest command, the latest
//! plan, and the open problems (the latest failing run of a command not followed by its
//! success). General, not per client:
//! read from the records' kinds, times, commands, exit codes and text.
//!
//! Each role is a value of the `working_state` signal (with its reason in the report), the
//! render leads with it (sections *Now*, *Plan*, *Open problems*), and selection tries the
//! records right after the current change; see `docs/scoring.md`, "The working state".

use std::collections::{BTreeMap, BTreeSet};

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::extract::Outcome;
use crate::optimizer::fragment::{is_later, Fragment, Unit};
use crate::optimizer::output::{ScoreComponent, Signal};
use crate::optimizer::regions::Places;
use crate::optimizer::score::{round4, Scored};
use crate::optimizer::working_set::lead_while_fits;
use crate::records::{Kind, Role};

/// How many tool calls and turns halve a record's recency within a session.
pub(crate) const HALF_LIFE_STEPS: f64 = 20.0;

/// How many open problems lead at most (the latest ones).
const MAX_OPEN: usize = 3;

/// How many later moments (tool calls, turns) a failure may have and still be open — two
/// recency half-lives: a command the session ran once long ago and never again is behind it,
/// not in front of it (the error stays a fact of the session, scored like any other).
const OPEN_WITHIN_STEPS: usize = 2 * HALF_LIFE_STEPS as usize;

/// How many files are in play: the ones read or changed most recently.
pub(crate) const IN_PLAY: usize = 3;

/// What a record is in the session's working state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum StateRole {
    /// The user's latest message: the instruction in force.
    Instruction,
    /// The agent's latest message: what it is doing now.
    Now,
    /// In a restore, the output of the session's latest command (a plan aside): where the
    /// work stands now.
    LatestStep,
    /// The latest plan (a checklist of items with their status).
    Plan,
    /// The latest failing run of a command that no later run of it passed, or an error that
    /// run reported.
    OpenProblem,
    /// The current view of a file the session touched last: its latest read and its latest
    /// change, for the [`IN_PLAY`] files read or changed most recently.
    InPlay,
}

impl StateRole {
    /// The sentence the report gives as the signal's reason.
    pub(crate) fn reason(self) -> &'static str {
        match self {
            StateRole::Instruction => "the user's latest instruction",
            StateRole::Now => "the agent's latest message: what it is doing now",
            StateRole::Plan => "the session's latest plan",
            StateRole::OpenProblem => "an open problem: the latest run of its command failed",
            StateRole::LatestStep => "the output of the session's latest command",
            StateRole::InPlay => "a file in play: one of the files the session touched last",
        }
    }
}

/// The working state of a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct WorkingState {
    /// Per unit: its role, when it has one.
    pub(crate) roles: Vec<Option<StateRole>>,
    /// Per unit with a time: how many later moments (distinct times: tool calls, turns,
    /// messages) the session has.
    pub(crate) steps_after: Vec<Option<usize>>,
    /// The session's latest live read of a file: the region it was looking at last, whose
    /// every fragment is in play (not only its best), since the next change is most often
    /// made there.
    pub(crate) last_read: Option<usize>,
}

/// Reads the working state of `units` (live ones only take a role). In a `restore` (the
/// model has lost its window) the latest command's output takes a part too: a model that
/// still has its window has seen it last.
pub(crate) fn working_state(
    units: &[Unit],
    analyses: &[UnitAnalysis],
    restore: bool,
) -> WorkingState {
    let mut times: Vec<i64> = units
        .iter()
        .filter(|u| u.kind != Kind::Task)
        .filter_map(|u| u.time)
        .collect();
    times.sort_unstable();
    times.dedup();
    let steps_after: Vec<Option<usize>> = units
        .iter()
        .map(|u| {
            u.time
                .filter(|_| u.kind != Kind::Task)
                .map(|t| times.len() - times.partition_point(|&x| x <= t))
        })
        .collect();
    let mut roles = vec![None; units.len()];
    let live = |i: usize| analyses[i].is_live();
    let latest_of = |pick: &dyn Fn(&Unit) -> bool| {
        (0..units.len())
            .filter(|&i| live(i) && pick(&units[i]))
            .reduce(|a, b| later(units, a, b))
    };
    if let Some(i) = latest_of(&|u| u.role == Some(Role::User)) {
        roles[i] = Some(StateRole::Instruction);
    }
    if let Some(i) = latest_of(&|u| u.role == Some(Role::Assistant)) {
        roles[i] = Some(StateRole::Now);
    }
    if let Some(i) = latest_of(&|u| u.kind == Kind::ToolOutput && is_plan(&u.text)) {
        roles[i] = Some(StateRole::Plan);
    }
    let latest_step = latest_of(&|u| u.kind == Kind::ToolOutput && !is_plan(&u.text));
    if let Some(i) = latest_step.filter(|_| restore) {
        roles[i] = Some(StateRole::LatestStep);
    }
    for i in open_problems(units, analyses, &steps_after) {
        roles[i] = Some(StateRole::OpenProblem);
    }
    for i in in_play(units, analyses) {
        roles[i].get_or_insert(StateRole::InPlay);
    }
    let last_read = latest_of(&|u| u.kind == Kind::File);
    WorkingState {
        roles,
        steps_after,
        last_read,
    }
}

/// The later of units `a` and `b` (by time, else by list position).
fn later(units: &[Unit], a: usize, b: usize) -> usize {
    match is_later(&units[b], &units[a]) {
        Some(true) => b,
        Some(false) => a,
        None => a.max(b),
    }
}

/// Whether a tool output is a plan: at least two of its lines are checklist items — `- [status]
/// text` (`pending`, `in_progress`, `completed`, …, as importers write a `TodoWrite` list) or a
/// Markdown task `- [ ] text` / `- [x] text` — and they are most of its non-blank lines (a
/// heading line such as `Plan (TodoWrite):` aside).
pub(crate) fn is_plan(text: &str) -> bool {
    let mut items = 0usize;
    let mut other = 0usize;
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if is_plan_item(line) {
            items += 1;
        } else if !line.ends_with(':') {
            other += 1;
        }
    }
    items >= 2 && items > other
}

fn is_plan_item(line: &str) -> bool {
    let Some(rest) = line
        .strip_prefix("- [")
        .or_else(|| line.strip_prefix("* ["))
    else {
        return false;
    };
    let Some((status, text)) = rest.split_once(']') else {
        return false;
    };
    let status = status.trim().to_ascii_lowercase();
    let known = status.is_empty()
        || status == "x"
        || status
            .split(['_', ' ', '-'])
            .all(|w| w.chars().all(|c| c.is_ascii_lowercase()) && !w.is_empty());
    known && status.len() <= 16 && !text.trim().is_empty()
}

/// The open problems: per command, its latest live run when that run failed (no later run of
/// the command — the same command line, options aside — passed) within the last
/// [`OPEN_WITHIN_STEPS`] moments, and the live errors recorded
/// at the same moment as such a run (the error a client records for a failed tool call); the
/// [`MAX_OPEN`] latest commands.
fn open_problems(
    units: &[Unit],
    analyses: &[UnitAnalysis],
    steps_after: &[Option<usize>],
) -> Vec<usize> {
    // The latest run of each command, options aside.
    let mut latest: BTreeMap<String, usize> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        let Some(key) = &u.tool_key else { continue };
        if analyses[i].outcome == Outcome::Unknown {
            continue;
        }
        let key = crate::optimizer::dedupe::without_options(key);
        match latest.get(&key) {
            Some(&j) if later(units, i, j) == j => {}
            _ => {
                latest.insert(key, i);
            }
        }
    }
    let mut failed: Vec<usize> = latest
        .into_values()
        .filter(|&i| analyses[i].is_live() && analyses[i].outcome == Outcome::Failed)
        .filter(|&i| steps_after[i].is_none_or(|n| n <= OPEN_WITHIN_STEPS))
        .collect();
    failed.sort_by_key(|&i| (units[i].time, units[i].order));
    let failed = &failed[failed.len().saturating_sub(MAX_OPEN)..];
    let mut out: Vec<usize> = failed.to_vec();
    for (i, u) in units.iter().enumerate() {
        if u.kind == Kind::Error
            && analyses[i].is_live()
            && u.time.is_some()
            && failed.iter().any(|&f| units[f].time == u.time)
        {
            out.push(i);
        }
    }
    out.sort_unstable();
    out
}

/// The files in play: of the [`IN_PLAY`] paths read or changed most recently (by their latest
/// live file or diff, or a revert), the latest live file record (its last read) and the latest
/// live diff (its last change) unless a revert undid it — the current view of each.
fn in_play(units: &[Unit], analyses: &[UnitAnalysis]) -> Vec<usize> {
    // Per path: its latest file and its latest diff — a revert too (a diff superseded as
    // undoing an earlier one): the file then has no change in play, only its view.
    let mut latest: BTreeMap<&str, (Option<usize>, Option<usize>)> = BTreeMap::new();
    for (i, u) in units.iter().enumerate() {
        let counts = analyses[i].is_live() || (u.kind == Kind::Diff && analyses[i].is_revert());
        let (Some(path), true) = (&u.path, counts) else {
            continue;
        };
        let slot = latest.entry(path.as_str()).or_default();
        let slot = match u.kind {
            Kind::File => &mut slot.0,
            Kind::Diff => &mut slot.1,
            _ => continue,
        };
        *slot = Some(slot.map_or(i, |j| later(units, i, j)));
    }
    let mut paths: Vec<(usize, Vec<usize>)> = latest
        .into_values()
        .map(|(file, diff)| {
            let both: Vec<usize> = file.into_iter().chain(diff).collect();
            let newest = both.iter().copied().reduce(|a, b| later(units, a, b));
            (newest.unwrap_or(0), both)
        })
        .collect();
    // Newest first; ties by list position.
    paths.sort_by(|a, b| match later(units, a.0, b.0) {
        x if x == a.0 && a.0 != b.0 => std::cmp::Ordering::Less,
        x if x == b.0 && a.0 != b.0 => std::cmp::Ordering::Greater,
        _ => std::cmp::Ordering::Equal,
    });
    let mut out: Vec<usize> = paths
        .into_iter()
        .take(IN_PLAY)
        .flat_map(|(_, v)| v)
        .filter(|&i| analyses[i].is_live())
        .collect();
    out.sort_unstable();
    out
}

/// How much of the budget the working state's leads may take together.
pub(crate) const LEAD_BUDGET_SHARE: f64 = 0.25;

/// Adds the `working_state` component (weight `weight`, with its role as the reason) to
/// every scored fragment: 1 for the fragments of a record with a role (of a file in play,
/// only its best fragment — the one showing most of the lines the session's searches hit in
/// it, then one showing none of the lines its latest change wrote ([`Places::rank`]), then
/// the best-scoring —: it names the file and shows where the session was; of the latest
/// command's output, only its last fragment), else 0 (the agent's latest message loses its
/// role when none of its fragments has any relevance). It counts as relevance. Returns the
/// fragments that lead — tried right after the current change —: the fragments of the
/// session's latest read first (the region it was looking at last, where its next change is
/// most often made), then the roles' fragments by role (instruction, statement, latest
/// command, plan, open problems, files in play); within a record, best score first; while
/// their tokens together fit in [`LEAD_BUDGET_SHARE`] of `budget`.
pub(crate) fn apply(
    weight: f64,
    state: &mut WorkingState,
    fragments: &[Fragment],
    places: &Places,
    scores: &mut [Option<Scored>],
    budget: usize,
) -> BTreeSet<usize> {
    // The agent's latest message says what it is doing only when it is about something
    // (a term of the task, a name of the focus, a failure): "Lunch first, then tests." is not.
    let mut about = vec![false; state.roles.len()];
    for (f, s) in fragments.iter().zip(scores.iter()) {
        if let Some(s) = s {
            about[f.unit.0] |= s.relevance > 0.0;
        }
    }
    for (role, about) in state.roles.iter_mut().zip(about) {
        if matches!(*role, Some(StateRole::Now | StateRole::Instruction)) && !about {
            *role = None;
        }
    }
    // Of a file in play, its best fragment: the one showing most of the lines the session's
    // searches hit, then one showing no line its latest change wrote (the change shows that
    // region), then the best-scoring (ties: the first).
    let total = |fi: usize| scores[fi].as_ref().map_or(0.0, |s| s.total);
    let pick = |role: StateRole, order: &dyn Fn(usize, usize) -> std::cmp::Ordering| {
        let mut picked: BTreeMap<usize, usize> = BTreeMap::new();
        for (fi, f) in fragments.iter().enumerate() {
            if scores[fi].is_some() && state.roles[f.unit.0] == Some(role) {
                let entry = picked.entry(f.unit.0).or_insert(fi);
                if order(fi, *entry) == std::cmp::Ordering::Greater {
                    *entry = fi;
                }
            }
        }
        picked
    };
    let best = pick(StateRole::InPlay, &|a, b| {
        places
            .rank(a)
            .cmp(&places.rank(b))
            .then(total(a).total_cmp(&total(b)))
    });
    // Of the latest command's output, the fragment where it ends: what the transcript's tail
    // shows, and where a run's result (a summary, the last hit) usually is.
    let last_chunk = pick(StateRole::LatestStep, &|a, b| {
        fragments[a].chunk.cmp(&fragments[b].chunk)
    });
    let mut candidates: Vec<Candidate> = Vec::new();
    for (fi, (f, scored)) in fragments.iter().zip(scores.iter_mut()).enumerate() {
        let Some(s) = scored else { continue };
        let role = state.roles[f.unit.0].filter(|&r| match r {
            StateRole::InPlay => {
                best.get(&f.unit.0) == Some(&fi) || state.last_read == Some(f.unit.0)
            }
            StateRole::LatestStep => last_chunk.get(&f.unit.0) == Some(&fi),
            _ => true,
        });
        let value = if role.is_some() { 1.0 } else { 0.0 };
        let contribution = round4(value * weight);
        s.components.push(ScoreComponent {
            signal: Signal::WorkingState,
            value,
            weight,
            contribution,
            reason: role.map(|r| r.reason().to_string()),
        });
        s.total = round4(s.total + contribution);
        s.relevance = round4(s.relevance + contribution);
        if let Some(role) = role {
            candidates.push(Candidate {
                latest_read: state.last_read == Some(f.unit.0),
                role,
                score: s.total,
                fragment: fi,
            });
        }
    }
    leads(
        candidates,
        |fi| fragments[fi].tokens,
        (LEAD_BUDGET_SHARE * budget as f64) as usize,
    )
}

/// A fragment with a working-state role, a candidate to lead.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    /// Whether it is of the session's latest read.
    latest_read: bool,
    /// Its part of the working state.
    role: StateRole,
    /// Its score, the working-state component included.
    score: f64,
    /// Its index among the fragments.
    fragment: usize,
}

/// The fragments that lead, out of `candidates`: those of the latest read first, then by
/// role, then best score first (ties: the first fragment), while their `tokens` fit in `cap`.
fn leads(
    mut candidates: Vec<Candidate>,
    tokens: impl Fn(usize) -> usize,
    cap: usize,
) -> BTreeSet<usize> {
    candidates.sort_by(|a, b| {
        (!a.latest_read, a.role)
            .cmp(&(!b.latest_read, b.role))
            .then(b.score.total_cmp(&a.score))
            .then(a.fragment.cmp(&b.fragment))
    });
    let mut leads = BTreeSet::new();
    lead_while_fits(
        candidates.iter().map(|c| c.fragment),
        tokens,
        0,
        cap,
        &mut leads,
    );
    leads
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checklist_is_a_plan_and_prose_is_not() {
        assert!(is_plan(
            "Plan (TodoWrite):\n- [in_progress] Read the parser\n- [pending] Fix the bug"
        ));
        assert!(is_plan("- [x] write tests\n- [ ] run them\n"));
        assert!(!is_plan("- [in_progress] only one item"));
        assert!(!is_plan("see [1] and [2]\n- a list\n- of things"));
        assert!(!is_plan(
            "- [pending] a\n- [pending] b\nline\nline\nline\nline"
        ));
    }

    #[test]
    fn the_files_touched_last_are_in_play_by_their_best_fragment() {
        use crate::optimizer::{build, BuildConfig};
        use crate::records::{Common, DiffRecord, FileRecord, Records};
        let at = |i: usize| Common {
            id: Some(format!("r{i}")),
            timestamp: Some(format!("2026-02-03T05:00:{:02}Z", i * 5)),
            ..Common::default()
        };
        // Five files read in turn, then the first one changed: the change and the three
        // files read last are in play; the two read first and not touched since are not.
        let mut files: Vec<FileRecord> = (0..5)
            .map(|i| FileRecord {
                common: at(i),
                path: format!("src/m{i}.rs"),
                content: format!("fn f{i}() {{}}\n"),
            })
            .collect();
        files[0].common.timestamp = Some("2026-02-03T04:59:00Z".into());
        let records = Records {
            task: Some("Tidy the modules.".into()),
            files,
            diffs: vec![DiffRecord {
                common: at(9),
                path: "src/m0.rs".into(),
                diff: "@@ -1 +1 @@\n-fn f0() {}\n+fn f0() { todo!() }\n".into(),
            }],
            ..Records::default()
        };
        let out = build(&records, &BuildConfig::default()).unwrap();
        let mut in_play: Vec<&str> = out
            .sources
            .iter()
            .filter(|s| {
                s.components.iter().any(|c| {
                    c.signal == Signal::WorkingState
                        && c.reason.as_deref() == Some(StateRole::InPlay.reason())
                })
            })
            .map(|s| s.record.as_str())
            .collect();
        in_play.sort_unstable();
        assert_eq!(in_play, ["r0", "r3", "r4", "r9"]);
    }

    #[test]
    fn a_file_in_play_is_shown_by_a_chunk_other_than_the_one_its_latest_change_wrote() {
        use crate::optimizer::regions::tests::gamma_changed;
        use crate::optimizer::{build, BuildConfig};
        use crate::records::{FileRecord, Records};
        // The task names a line of gamma's chunk, so that chunk scores best; but the session
        // has just changed it, and the change shows that.
        let (view, diff) = gamma_changed(5);
        let view = view.replace("gamma_part(15)", "zeta_part(15)");
        let records = Records {
            task: Some("Rename zeta_part.".into()),
            diffs: vec![diff],
            files: vec![
                FileRecord {
                    common: at("f1", 9),
                    path: "src/lib.rs".into(),
                    content: view,
                },
                FileRecord {
                    common: at("f2", 12),
                    path: "src/other.rs".into(),
                    content: "fn other() {}\n".into(),
                },
            ],
            ..Records::default()
        };
        let out = build(&records, &BuildConfig::default()).unwrap();
        let shown: Vec<&str> = out
            .sources
            .iter()
            .filter(|s| s.record == "f1")
            .filter(|s| {
                s.components.iter().any(|c| {
                    c.signal == Signal::WorkingState
                        && c.reason.as_deref() == Some(StateRole::InPlay.reason())
                })
            })
            .map(|s| {
                let tag = format!("[source: {} ", s.id);
                let start = out.context.find(&tag).expect("rendered");
                let text = &out.context[start + tag.len()..];
                let text = text.split_once('\n').map_or("", |(_, t)| t);
                text.split("[source:").next().unwrap_or("")
            })
            .collect();
        assert_eq!(shown.len(), 1, "{shown:?}");
        assert!(!shown[0].contains("gamma_part(8)"), "{}", shown[0]);
    }

    /// A record's common fields: its id, and a time `s` seconds into the session.
    fn at(id: &str, s: usize) -> crate::records::Common {
        crate::records::Common {
            id: Some(id.into()),
            timestamp: Some(format!("2026-02-03T05:{:02}:{:02}Z", s / 60, s % 60)),
            ..crate::records::Common::default()
        }
    }

    /// Whether a build of `records` gives a fragment of the record `id` the working-state
    /// `role`.
    fn has_role(records: &crate::records::Records, id: &str, role: StateRole) -> bool {
        let out =
            crate::optimizer::build(records, &crate::optimizer::BuildConfig::default()).unwrap();
        out.sources.iter().any(|s| {
            s.record == id
                && s.components
                    .iter()
                    .any(|c| c.reason.as_deref() == Some(role.reason()))
        })
    }

    #[test]
    fn the_latest_commands_output_leads_in_now_by_where_it_ends() {
        use crate::optimizer::{build, BuildConfig};
        use crate::records::{Records, ToolOutput};
        let run = |id: &str, s: usize, tool: &str, output: String| ToolOutput {
            common: at(id, s),
            tool: tool.into(),
            args: None,
            output,
            exit_code: Some(0),
            cwd: None,
        };
        // A long listing, then a search whose output ends with the line the agent edits next.
        // Names made of letters, so the lines are not folded as alike.
        let name = |i: usize| -> String {
            [i / 676, i / 26 % 26, i % 26]
                .iter()
                .map(|&d| char::from(b'a' + d as u8))
                .collect()
        };
        let mut hits: String = (0..400)
            .map(|i| format!("src/{}.rs: pub fn {}_entry() {{}}\n", name(i), name(i + 1)))
            .collect();
        hits.push_str("src/config.rs:88: let retry_budget = Duration::from_secs(30);\n");
        let records = Records {
            task: Some("Make the retry budget configurable.".into()),
            tool_outputs: vec![
                run("ls", 10, "ls -R", "a\nb\nc\n".into()),
                run("rg", 20, "rg -n pub", hits),
            ],
            ..Records::default()
        };
        let config = BuildConfig {
            budget: 600,
            files_in_play: true,
            ..BuildConfig::default()
        };
        let out = build(&records, &config).unwrap();
        let now = out.context.split("## Now\n").nth(1).unwrap_or_default();
        let now = now.split("\n## ").next().unwrap_or_default();
        assert!(
            now.contains("retry_budget = Duration::from_secs(30)"),
            "{}",
            out.context
        );
        assert!(now.contains("$ rg -n pub"), "{now}");
        // Only where it ends leads: the listing's start is not in Now.
        assert!(!now.contains("src/aaa.rs"), "{now}");
        let latest = |out: &crate::optimizer::BuildOutput, id: &str| {
            out.sources.iter().any(|s| {
                s.record == id
                    && s.components
                        .iter()
                        .any(|c| c.reason.as_deref() == Some(StateRole::LatestStep.reason()))
            })
        };
        assert!(latest(&out, "rg"));
        // The canaries: the earlier command has no part in the working state, and outside a
        // restore (the model still has its window) neither has the latest.
        assert!(!latest(&out, "ls"));
        let mid_session = build(
            &records,
            &BuildConfig {
                budget: 600,
                ..BuildConfig::default()
            },
        );
        assert!(!latest(&mid_session.unwrap(), "rg"));
    }

    #[test]
    fn the_latest_read_leads_before_the_roles_then_by_role_and_score() {
        let c = |latest_read, role, score, fragment| Candidate {
            latest_read,
            role,
            score,
            fragment,
        };
        let candidates = vec![
            c(false, StateRole::Instruction, 5.0, 0),
            c(false, StateRole::Now, 4.0, 1),
            c(true, StateRole::InPlay, 1.0, 2),
            c(true, StateRole::InPlay, 2.0, 3),
            c(false, StateRole::InPlay, 9.0, 4),
        ];
        // Room for three: the latest read's two, then the instruction.
        assert_eq!(
            leads(candidates.clone(), |_| 10, 30),
            BTreeSet::from([0, 2, 3])
        );
        // Room for one: the latest read's best-scoring fragment.
        assert_eq!(leads(candidates.clone(), |_| 10, 15), BTreeSet::from([3]));
        // Room for all.
        assert_eq!(leads(candidates, |_| 10, 50).len(), 5);
    }

    #[test]
    fn a_failure_the_session_left_two_half_lives_behind_is_not_open() {
        use crate::records::{Message, Records, ToolOutput};
        // A probe that failed once and was never run again, then `later` moments of work.
        let open_after = |later: usize| {
            let mut records = Records {
                task: Some("Make the probe pass.".into()),
                tool_outputs: vec![ToolOutput {
                    common: at("probe", 0),
                    tool: "./probe --once".into(),
                    args: None,
                    output: "probe: connection refused".into(),
                    exit_code: Some(1),
                    cwd: None,
                }],
                ..Records::default()
            };
            records.messages = (1..=later)
                .map(|i| Message {
                    common: at(&format!("m{i}"), i),
                    role: crate::records::Role::Assistant,
                    text: format!("Step {i} of the probe's repair."),
                })
                .collect();
            has_role(&records, "probe", StateRole::OpenProblem)
        };
        assert!(open_after(OPEN_WITHIN_STEPS));
        assert!(!open_after(OPEN_WITHIN_STEPS + 1));
    }

    #[test]
    fn a_change_a_later_diff_reverted_is_not_in_play() {
        use crate::records::{DiffRecord, FileRecord, Records};
        let diff = |id: &str, s: usize, from: &str, to: &str| DiffRecord {
            common: at(id, s),
            path: "src/lib.rs".into(),
            diff: format!("--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1 +1 @@\n-{from}\n+{to}\n"),
        };
        // The file read, a change tried, then undone: the file is as it was read.
        let in_play = |reverted: bool| {
            let mut diffs = vec![diff("tried", 2, "fn f() {}", "fn f() { sort(); }")];
            if reverted {
                diffs.push(diff("undone", 3, "fn f() { sort(); }", "fn f() {}"));
            }
            let records = Records {
                task: Some("Make f sort.".into()),
                files: vec![FileRecord {
                    common: at("view", 1),
                    path: "src/lib.rs".into(),
                    content: "fn f() {}\n".into(),
                }],
                diffs,
                ..Records::default()
            };
            has_role(&records, "tried", StateRole::InPlay)
        };
        assert!(in_play(false));
        assert!(!in_play(true));
    }
}
