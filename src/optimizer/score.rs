//! Stage 4, score: weighted, explainable signals per fragment. Every component (value,
//! weight, contribution) goes into the output; see `docs/scoring.md`.
//!
//! Recency is measured from the newest timestamp in the data, never the clock.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::optimizer::analysis::UnitAnalysis;
use crate::optimizer::condense;
use crate::optimizer::extract::{
    definitions, imports, outcomes, paths, signatures, terms, Features, Outcome,
};
use crate::optimizer::fragment::{Fragment, Unit, UnitIx};
use crate::optimizer::output::{ScoreComponent, Signal};
use crate::optimizer::workspace::WorkspaceRoot;
use crate::records::Kind;
use crate::records::{DecisionStatus, Role, TestStatus};

/// The weight of each signal, and the recency curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Weights {
    /// Share of the task's terms the fragment contains.
    pub(crate) lexical_overlap: f64,
    /// Identifiers (paths, symbols) shared with the task and the errors it is about.
    pub(crate) identifier_match: f64,
    /// The fragment shows an error, above all one the task is about.
    pub(crate) error_relevance: f64,
    /// A decision in force or an explicit requirement.
    pub(crate) constraint_decision: f64,
    /// Evidence of a failed attempt (a run that failed).
    pub(crate) failed_attempt: f64,
    /// Newer is better: halves every `half_life_days`.
    pub(crate) recency: f64,
    /// Who said it (user over system over assistant over tool).
    pub role: f64,
    /// Penalty for content that largely recurs in a later record (negative).
    pub(crate) redundancy: f64,
    /// The caller's priority.
    pub priority: f64,
    /// The files the session keeps coming back to (see [`crate::optimizer::working_set`]).
    #[serde(default = "default_working_set")]
    pub(crate) working_set: f64,
    /// The session's working state (see [`crate::optimizer::working_state`]).
    #[serde(default = "default_working_state")]
    pub(crate) working_state: f64,
    /// Recency half-life in days.
    pub(crate) half_life_days: f64,
    /// The lowest recency value of a constraint or decision.
    pub(crate) constraint_recency_floor: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            lexical_overlap: 3.0,
            identifier_match: 4.0,
            error_relevance: 3.0,
            constraint_decision: 5.0,
            failed_attempt: 2.0,
            recency: 1.5,
            role: 1.0,
            redundancy: -2.0,
            priority: 1.0,
            working_set: default_working_set(),
            working_state: default_working_state(),
            half_life_days: 7.0,
            constraint_recency_floor: 0.7,
        }
    }
}

/// The default weight of the `working_set` signal.
fn default_working_set() -> f64 {
    3.0
}

/// The default weight of the `working_state` signal.
fn default_working_state() -> f64 {
    4.0
}

/// What the task is about: its terms and identifiers, and the errors it concerns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Focus {
    /// The task's terms.
    pub(crate) terms: HashSet<String>,
    /// Identifiers of the task and of the errors it is about (lowercase, with basenames),
    /// without those that only name the workspace root.
    pub(crate) identifiers: HashSet<String>,
    /// Error signature keys and failing test names of the errors the task is about.
    pub errors: HashSet<String>,
    /// Units (errors and failing test results) the task is about.
    pub(crate) error_units: BTreeSet<UnitIx>,
    /// The session's workspace root: its names are left out of `identifiers`, and the
    /// places where a text names it are left out of `terms` and of lexical overlap.
    pub workspace: WorkspaceRoot,
}

/// A fragment's score.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// The sum of the contributions.
    pub total: f64,
    /// The contributions of the content signals (lexical, identifier, error, constraint,
    /// failed attempt): how much the fragment is *about* something that matters.
    pub(crate) relevance: f64,
    /// Every signal.
    pub(crate) components: Vec<ScoreComponent>,
    /// Whether the fragment is linked to the task: it names a file or symbol of the focus
    /// (or is such a file), or shows an error the task is about. While budget remains, such
    /// a fragment is never left out as low relevance.
    pub(crate) linked: bool,
}

/// Share of the task's terms in `text`.
pub(crate) fn lexical(focus: &Focus, text: &str) -> f64 {
    lexical_of(focus, &[text])
}

/// Share of the task's terms in all of `texts` together (a file's path and content).
fn lexical_of(focus: &Focus, texts: &[&str]) -> f64 {
    if focus.terms.is_empty() {
        return 0.0;
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for text in texts {
        focus.workspace.for_each_part_outside(text, |part| {
            terms::for_each_term(part, |t| {
                if let Some(k) = focus.terms.get(t) {
                    seen.insert(k.as_str());
                }
            });
        });
    }
    seen.len() as f64 / focus.terms.len() as f64
}

/// How many of `identifiers` the focus holds (by full name or basename).
/// How many of a fragment's identifiers the focus holds: by full name, by basename, or as
/// a path under a directory the focus names.
fn identifier_hits(identifiers: &HashSet<String>, features: &Features) -> usize {
    features
        .identifiers
        .iter()
        .filter(|id| path_in_focus(identifiers, id))
        .count()
}

/// Whether an identifier is in the focus by full name, by basename, as a relative import
/// (`../types/user` for `src/types/user.ts`), or as a path under a directory the focus names.
fn path_in_focus(identifiers: &HashSet<String>, id: &str) -> bool {
    let relative = without_dots(id);
    identifiers.contains(id)
        || (relative.len() < id.len() && relative.contains('/') && identifiers.contains(relative))
        || identifiers.contains(basename(id))
        || id
            .match_indices('/')
            .any(|(i, _)| i > 0 && identifiers.contains(&id[..i]))
}

fn basename(id: &str) -> &str {
    id.rsplit('/').next().unwrap_or(id)
}

fn add_identifiers(set: &mut HashSet<String>, ids: &[String]) {
    for id in ids {
        set.insert(id.clone());
        if id.contains('/') {
            set.insert(basename(id).to_string());
            // What an import names: `types/user` for `src/types/user.ts`.
            if let Some((stem, _)) = id.rsplit_once('.').filter(|(stem, _)| stem.contains('/')) {
                let parts: Vec<&str> = stem.rsplitn(3, '/').collect();
                if parts.len() >= 2 {
                    set.insert(format!("{}/{}", parts[1], parts[0]));
                }
            }
        }
    }
}

/// A relative import path without its leading `./` and `../` parts.
fn without_dots(id: &str) -> &str {
    let mut id = id;
    while let Some(rest) = id.strip_prefix("../").or_else(|| id.strip_prefix("./")) {
        id = rest;
    }
    id
}

/// The most errors, and the most failing test results, the task is taken to be about.
pub(crate) const MAX_TASK_ERRORS: usize = 3;

/// Share of an error's first-line words the task must contain for the task to name it.
pub(crate) const NAMES_ERROR: f64 = 0.8;

/// Lowercase alphanumeric words (all of them, no stemming): for matching error messages.
fn word_set(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// How the task refers to an error or failing test.
struct Naming {
    /// The task quotes the test's name, or holds at least [`NAMES_ERROR`] of the words of
    /// the error's first line.
    named: bool,
    /// Share of the first line's words in the task.
    share: f64,
    /// The error's exception type (`NullPointerException`), when the task mentions it.
    type_in_task: Option<String>,
}

/// Whether the task names this error or failing test: it quotes the test's name (or the
/// name's last part, `rejectsMissingName` of `com.acme.UserValidatorTest.rejectsMissingName`),
/// or it holds at least [`NAMES_ERROR`] of the words of the error's first line; or else
/// whether it mentions the error's exception type.
fn error_naming(unit: &Unit, task_text: &str, task_words: &HashSet<String>) -> Naming {
    let mut naming = Naming {
        named: false,
        share: 0.0,
        type_in_task: None,
    };
    if task_text.is_empty() {
        return naming;
    }
    if let Some(name) = &unit.test_name {
        let last = name
            .rsplit(['.', ':', '>', '/', ' '])
            .find(|p| !p.is_empty())
            .unwrap_or(name);
        naming.named =
            task_text.contains(name.as_str()) || (last.len() >= 6 && task_text.contains(last));
        return naming;
    }
    let first = unit.text.lines().next().unwrap_or("");
    let words = word_set(first);
    if !words.is_empty() {
        naming.share =
            words.iter().filter(|w| task_words.contains(*w)).count() as f64 / words.len() as f64;
    }
    naming.named = naming.share >= NAMES_ERROR;
    naming.type_in_task = exception_type(unit).filter(|k| task_text.contains(k.as_str()));
    naming
}

/// The exception type of an error's first line (`NullPointerException` of
/// `java.lang.NullPointerException: …`), when it has a typed one.
fn exception_type(unit: &Unit) -> Option<String> {
    let first = unit.text.lines().next().unwrap_or("");
    signatures::signature(first)
        .map(|s| s.kind.rsplit('.').next().unwrap_or("").to_string())
        .filter(|k| k.len() >= 6 && k.bytes().any(|b| b.is_ascii_lowercase()))
}

/// Works out the focus: the task's terms and identifiers, then the live errors and failing
/// test results the task names (see `error_naming`): named outright, or the closest match
/// among the errors of an exception type the task mentions. Of those, the latest with each signature (test name for
/// tests), at most [`MAX_TASK_ERRORS`] errors and as many tests, are the task's errors: their
/// identifiers, signatures and test names join the focus.
pub(crate) fn focus(units: &[Unit], features: &[Features], analyses: &[UnitAnalysis]) -> Focus {
    let live: Vec<bool> = analyses.iter().map(UnitAnalysis::is_live).collect();
    let live = live.as_slice();
    let mut f = Focus {
        workspace: workspace_root(units, features, live),
        ..Focus::default()
    };
    if let Some(task) = units.iter().position(|u| u.kind == Kind::Task) {
        let text = &units[task].text;
        f.workspace.for_each_part_outside(text, |part| {
            terms::for_each_term(part, |t| {
                f.terms.insert(t.to_string());
            });
        });
        for fi in units[task].fragments.clone() {
            add_identifiers(&mut f.identifiers, &features[fi].identifiers);
        }
    }
    let task_text = units
        .iter()
        .find(|u| u.kind == Kind::Task)
        .map_or("", |u| u.text.as_str());
    let error_like = |i: usize| {
        live[i]
            && (units[i].kind == Kind::Error
                || (units[i].kind == Kind::TestResult && analyses[i].outcome == Outcome::Failed))
    };
    let task_words: HashSet<String> = word_set(task_text);
    // Named outright, or the best match among the errors of a type the task names.
    let mut about: Vec<usize> = Vec::new();
    let mut by_type: BTreeMap<String, (f64, Option<i64>, usize)> = BTreeMap::new();
    for i in (0..units.len()).filter(|&i| error_like(i)) {
        let naming = error_naming(&units[i], task_text, &task_words);
        if naming.named {
            about.push(i);
        } else if let Some(kind) = naming.type_in_task {
            let candidate = (naming.share, units[i].time, i);
            let best = by_type.entry(kind).or_insert(candidate);
            if (candidate.0, candidate.1, candidate.2) > (best.0, best.1, best.2) {
                *best = candidate;
            }
        }
    }
    // A type counts only when no error of it was named outright.
    let named_types: HashSet<String> = about
        .iter()
        .filter_map(|&i| exception_type(&units[i]))
        .collect();
    about.extend(
        by_type
            .iter()
            .filter(|(k, _)| !named_types.contains(*k))
            .map(|(_, &(_, _, i))| i),
    );
    if about.is_empty() {
        // The task names nothing: the latest failing test, and the latest error unless
        // the task speaks of an exception type none of the errors has.
        let speaks_of_type = task_text
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| w.len() > 5 && (w.ends_with("Error") || w.ends_with("Exception")));
        for kind in [Kind::TestResult, Kind::Error] {
            if kind == Kind::Error && speaks_of_type {
                continue;
            }
            if let Some(i) = (0..units.len()).rfind(|&i| error_like(i) && units[i].kind == kind) {
                about.push(i);
            }
        }
    }
    about.sort_unstable();
    about.dedup();
    // The latest first; one unit per signature; at most MAX_TASK_ERRORS of each kind.
    about.sort_by_key(|&i| std::cmp::Reverse((units[i].time, units[i].order)));
    let mut seen: HashSet<(Kind, String)> = HashSet::new();
    let mut per_kind = [0usize; 8];
    for i in about {
        let u = &units[i];
        let first = u.fragments.start;
        let signature = u
            .test_name
            .clone()
            .or_else(|| {
                features
                    .get(first)
                    .and_then(|ft| ft.signatures.first().cloned())
            })
            .unwrap_or_else(|| u.text.lines().next().unwrap_or("").to_string());
        if per_kind[u.kind as usize] < MAX_TASK_ERRORS && seen.insert((u.kind, signature)) {
            per_kind[u.kind as usize] += 1;
            f.error_units.insert(UnitIx(i));
        }
    }
    // The files the session changes, and what the decisions in force name, are part of
    // what it is about.
    for (_, u) in units.iter().enumerate().filter(|&(i, _)| live[i]) {
        match (u.kind, &u.path, u.decision_status) {
            (Kind::Diff, Some(path), _) => {
                let path = paths::normalize_path(path).to_lowercase();
                add_identifiers(&mut f.identifiers, &[path]);
            }
            (Kind::Decision, _, Some(DecisionStatus::Accepted)) => {
                for fi in u.fragments.clone() {
                    add_identifiers(&mut f.identifiers, &features[fi].identifiers);
                }
            }
            _ => {}
        }
    }
    for &i in &f.error_units {
        for fi in units[i].fragments.clone() {
            add_identifiers(&mut f.identifiers, &features[fi].identifiers);
            f.errors.extend(features[fi].signatures.iter().cloned());
            f.errors.extend(features[fi].failing_tests.iter().cloned());
        }
        if let Some(n) = &units[i].test_name {
            f.errors.insert(n.clone());
        }
    }
    add_frames_showing_task_errors(&mut f, units, features, live);
    add_defining_files(&mut f, units, live);
    // A fragment shares these with the task's error because it lies in the same folder,
    // whatever it is about.
    let workspace = &f.workspace;
    f.identifiers.retain(|id| !workspace.names_the_root(id));
    f
}

/// The definition index: every live file (a file record, or a file-reading command's output
/// imported as one) that defines a symbol of the focus — a name the task, an error it is
/// about or a failing test names — joins the focus by its path, so the file the error
/// points at is scored as what the session is about. Then imports link files: a live file
/// that a file of the focus (one just added, or one the task, an error or a change names)
/// imports joins it too — one step, not the imports of those.
fn add_defining_files(f: &mut Focus, units: &[Unit], live: &[bool]) {
    let symbols: HashSet<&str> = f
        .identifiers
        .iter()
        .filter(|id| !id.contains(['/', '.', ':']))
        .map(String::as_str)
        .collect();
    let files: Vec<(String, &Unit)> = units
        .iter()
        .zip(live)
        .filter(|(u, &live)| live && u.kind == Kind::File)
        .filter_map(|(u, _)| Some((paths::normalize_path(u.path.as_deref()?).to_lowercase(), u)))
        .collect();
    let defining: Vec<String> = files
        .iter()
        .filter(|(_, u)| {
            definitions::definitions(&u.text)
                .iter()
                .any(|d| symbols.contains(d.as_str()))
        })
        .map(|(path, _)| path.clone())
        .collect();
    add_identifiers(&mut f.identifiers, &defining);
    let read: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
    let resolver = imports::Resolver::new(&read);
    let mut imported: Vec<String> = files
        .iter()
        .filter(|(path, _)| f.identifiers.contains(path))
        .flat_map(|(path, u)| imports::imports(path, &u.text))
        .flat_map(|suffix| resolver.files(&suffix))
        .filter(|path| !f.identifiers.contains(*path))
        .map(str::to_string)
        .collect();
    imported.sort_unstable();
    imported.dedup();
    add_identifiers(&mut f.identifiers, &imported);
}

/// The session's workspace root (see [`WorkspaceRoot`]), found from every live fragment's
/// paths and every live record's own path.
fn workspace_root(units: &[Unit], features: &[Features], live: &[bool]) -> WorkspaceRoot {
    let own_paths: Vec<String> = units
        .iter()
        .zip(live)
        .filter(|(_, &live)| live)
        .filter_map(|(u, _)| u.path.as_deref())
        .map(|p| paths::normalize_path(p).to_lowercase())
        .collect();
    WorkspaceRoot::of(
        features
            .iter()
            .flat_map(|ft| &ft.identifiers)
            .chain(&own_paths)
            .map(String::as_str),
    )
}

/// Adds to the focus the files named by the stack frames of every live fragment that shows
/// one of the task's errors (its signature or failing test name): a failing test's record
/// often has no trace, while the log or test-runner output that shows the same failure
/// does, and its frames point at the code at fault. Library frames are left out.
fn add_frames_showing_task_errors(
    focus: &mut Focus,
    units: &[Unit],
    features: &[Features],
    live: &[bool],
) {
    if focus.errors.is_empty() {
        return;
    }
    let mut files: BTreeSet<String> = BTreeSet::new();
    for (i, u) in units.iter().enumerate().filter(|&(i, _)| live[i]) {
        for ft in &features[u.fragments.clone()] {
            let shows = ft
                .signatures
                .iter()
                .chain(&ft.failing_tests)
                .any(|s| focus.errors.contains(s));
            if shows && !focus.error_units.contains(&UnitIx(i)) {
                files.extend(
                    ft.frames
                        .iter()
                        .filter_map(|fr| fr.file.as_deref())
                        .filter(|p| !condense::is_library(p))
                        .map(|p| paths::normalize_path(p).to_lowercase()),
                );
            }
        }
    }
    let files: Vec<String> = files.into_iter().collect();
    add_identifiers(&mut focus.identifiers, &files);
}

/// Whether a fragment states a constraint: a decision in force, or a requirement said by
/// the user or the system.
pub(crate) fn is_constraint(unit: &Unit, features: &Features) -> bool {
    match unit.kind {
        Kind::Decision => matches!(
            unit.decision_status,
            Some(DecisionStatus::Accepted | DecisionStatus::Proposed)
        ),
        Kind::Message => {
            features.requirements > 0 && matches!(unit.role, Some(Role::User | Role::System))
        }
        _ => false,
    }
}

/// Scores fragment `fi`.
#[allow(clippy::too_many_arguments)]
pub fn score(
    weights: &Weights,
    focus: &Focus,
    units: &[Unit],
    fragment: &Fragment,
    features: &Features,
    analysis: &UnitAnalysis,
    recency_clock: &Recency,
) -> Scored {
    let (outcome, redundancy) = (analysis.outcome, analysis.redundancy);
    let unit = &units[fragment.unit];
    let text = fragment.text(units);
    let lexical = match &unit.path {
        Some(path) if fragment.chunk == 0 => lexical_of(focus, &[path, text]),
        _ => lexical(focus, text),
    };
    // A file or diff whose own path is in the focus (the file a frame points at) counts as
    // two hits: it is what the focus is about.
    let own_path = unit.path.as_deref().is_some_and(|p| {
        let p = paths::normalize_path(p).to_lowercase();
        path_in_focus(&focus.identifiers, &p)
    });
    let hits = identifier_hits(&focus.identifiers, features) + if own_path { 2 } else { 0 };
    let identifier = (hits as f64 / 2.0).min(1.0);
    let failure = features.rare_signature
        || !features.frames.is_empty()
        || !features.failing_tests.is_empty()
        || unit.test_status == Some(TestStatus::Failed);
    let error = if focus.error_units.contains(&fragment.unit)
        || features
            .signatures
            .iter()
            .chain(&features.failing_tests)
            .any(|s| focus.errors.contains(s))
    {
        1.0
    } else if failure && (lexical > 0.0 || hits > 0) {
        0.3
    } else if failure || !features.signatures.is_empty() {
        // A failure that shares no term and no name with the focus (another service's
        // crash, a nightly job's timeout), or an error that repeats all through the record:
        // noise here.
        0.1
    } else {
        0.0
    };
    let constraint = match (unit.kind, unit.decision_status, unit.role) {
        (Kind::Decision, Some(DecisionStatus::Accepted), _) => 1.0,
        // A proposal not yet in force counts only when it is about the task.
        (Kind::Decision, Some(DecisionStatus::Proposed), _) if lexical > 0.0 || hits > 0 => 0.5,
        (Kind::Message, _, Some(Role::User)) if features.requirements > 0 => 1.0,
        (Kind::Message, _, Some(Role::System)) if features.requirements > 0 => 0.1,
        (Kind::Message, _, Some(Role::Assistant)) if features.requirements > 0 => 0.3,
        _ => 0.0,
    };
    let failed = match (unit.kind, outcome) {
        (Kind::ToolOutput, Outcome::Failed)
            if features.failure_lines > 0 || features.shows_error() =>
        {
            1.0
        }
        (Kind::ToolOutput, Outcome::Failed) => 0.5,
        (Kind::Message, _) if outcomes::reports_failure(text) => 1.0,
        (Kind::Message, _)
            if unit.role == Some(Role::Assistant)
                && lexical > 0.0
                && outcomes::states_cause(text) =>
        {
            1.0
        }
        _ => 0.0,
    };
    let mut recency = recency_clock.value(fragment.unit, unit, weights);
    if is_constraint(unit, features) {
        recency = recency.max(weights.constraint_recency_floor);
    }
    let role = match (unit.kind, unit.role) {
        (Kind::Task | Kind::Decision | Kind::Diff, _) => 1.0,
        (_, Some(Role::User)) => 1.0,
        (_, Some(Role::System)) => 0.8,
        (Kind::Error | Kind::TestResult, _) => 0.8,
        (Kind::File, _) => 0.6,
        (_, Some(Role::Assistant)) => 0.5,
        (Kind::ToolOutput, _) | (_, Some(Role::Tool)) => 0.3,
        _ => 0.5,
    };
    let signals = [
        (Signal::LexicalOverlap, lexical, weights.lexical_overlap),
        (
            Signal::IdentifierMatch,
            identifier,
            weights.identifier_match,
        ),
        (Signal::ErrorRelevance, error, weights.error_relevance),
        (
            Signal::ConstraintDecision,
            constraint,
            weights.constraint_decision,
        ),
        (Signal::FailedAttempt, failed, weights.failed_attempt),
        (Signal::Recency, recency, weights.recency),
        (Signal::Role, role, weights.role),
        (Signal::Redundancy, redundancy, weights.redundancy),
        (Signal::Priority, unit.priority, weights.priority),
    ];
    let components: Vec<ScoreComponent> = signals
        .iter()
        .map(|&(signal, value, weight)| ScoreComponent {
            signal,
            value: round4(value),
            weight,
            contribution: round4(value * weight),
            reason: None,
        })
        .collect();
    let relevance = components
        .iter()
        .filter(|c| c.signal.is_relevance())
        .map(|c| c.contribution)
        .sum::<f64>();
    let total = round4(components.iter().map(|c| c.contribution).sum::<f64>());
    Scored {
        total,
        relevance: round4(relevance),
        components,
        linked: hits > 0 || error == 1.0,
    }
}

/// Rounds to four decimals, so reports read well and sums are stable.
pub(crate) fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The recency reference: where each record sits in its session (how many later moments
/// it has), the newest timestamp in the data, and list lengths for records without a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Recency {
    newest: Option<i64>,
    list_len: [usize; 8],
    steps_after: Vec<Option<usize>>,
}

impl Recency {
    /// Reads the reference from the units and their positions in the session
    /// ([`crate::optimizer::working_state::WorkingState::steps_after`]).
    pub(crate) fn new(units: &[Unit], steps_after: &[Option<usize>]) -> Recency {
        let mut list_len = [0; 8];
        for u in units {
            list_len[u.kind as usize] = list_len[u.kind as usize].max(u.index + 1);
        }
        Recency {
            newest: units.iter().filter_map(|u| u.time).max(),
            list_len,
            steps_after: steps_after.to_vec(),
        }
    }

    /// For a record with a time: `0.5^(later moments / 20)` by its position in the session
    /// (tool calls, turns, messages after it), times `0.5^(age / half-life)` by the clock,
    /// which only tells sessions apart (within one, every record is minutes old);
    /// `(index + 1) / list length` for records without a time; 1 for the task.
    pub(crate) fn value(&self, ix: UnitIx, unit: &Unit, weights: &Weights) -> f64 {
        if unit.kind == Kind::Task {
            return 1.0;
        }
        match (unit.time, self.newest) {
            (Some(t), Some(newest)) => {
                let days = (newest - t) as f64 / 86_400_000.0;
                let steps = self.steps_after.get(ix.0).copied().flatten().unwrap_or(0) as f64;
                0.5f64.powf(steps / crate::optimizer::working_state::HALF_LIFE_STEPS)
                    * 0.5f64.powf(days / weights.half_life_days.max(f64::MIN_POSITIVE))
            }
            _ => (unit.index + 1) as f64 / self.list_len[unit.kind as usize].max(1) as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::extract::extract;
    use crate::optimizer::normalize::normalize;
    use crate::records::{
        Common, Decision, ErrorRecord, FileRecord, Message, Records, TestResult, ToolOutput,
    };

    fn scored(records: &Records) -> (Vec<Unit>, Vec<Scored>, Focus) {
        let (units, frags) = normalize(records, None).unwrap();
        let analyses = crate::optimizer::analysis::all_live(&units);
        let feats = extract(&units, &frags, &analyses, 1);
        let focus = focus(&units, &feats, &analyses);
        let state = crate::optimizer::working_state::working_state(&units, &analyses, false);
        let rec = Recency::new(&units, &state.steps_after);
        let w = Weights::default();
        let s = frags
            .iter()
            .zip(&feats)
            .map(|(f, ft)| score(&w, &focus, &units, f, ft, &analyses[f.unit], &rec))
            .collect();
        (units, s, focus)
    }

    fn get(s: &Scored, signal: Signal) -> f64 {
        s.components
            .iter()
            .find(|c| c.signal == signal)
            .unwrap()
            .value
    }

    #[test]
    fn components_sum_to_total_and_use_default_weights() {
        let records = Records {
            task: Some("Fix rounding in computeTotal".into()),
            messages: vec![Message {
                common: Common::default(),
                role: Role::Assistant,
                text: "computeTotal rounds wrong".into(),
            }],
            ..Records::default()
        };
        let (_, s, _) = scored(&records);
        let m = &s[1];
        assert_eq!(m.components.len(), 9);
        let sum: f64 = m.components.iter().map(|c| c.contribution).sum();
        assert!((sum - m.total).abs() < 1e-9);
        assert_eq!(get(m, Signal::IdentifierMatch), 0.5);
        assert!(get(m, Signal::LexicalOverlap) > 0.0);
        assert_eq!(m.components[1].weight, 4.0);
    }

    #[test]
    fn relative_imports_match_the_files_they_name() {
        let mut set = HashSet::new();
        add_identifiers(&mut set, &["src/types/user.ts".to_string()]);
        assert!(path_in_focus(&set, "../types/user"));
        assert!(path_in_focus(&set, "./types/user"));
        assert!(!path_in_focus(&set, "../types/order"));
    }

    #[test]
    fn errors_the_task_names_join_the_focus() {
        let records = Records {
            task: Some("Fix \"TypeError: total is undefined\" on the invoice page".into()),
            errors: vec![ErrorRecord {
                common: Common::default(),
                message: "TypeError: total is undefined".into(),
                stack: Some("    at renderInvoice (src/invoice.ts:3:1)".into()),
            }],
            ..Records::default()
        };
        let (_, s, focus) = scored(&records);
        assert!(focus.error_units.contains(&UnitIx(1)));
        assert!(focus.identifiers.contains("src/invoice.ts"));
        assert_eq!(get(&s[1], Signal::ErrorRelevance), 1.0);
    }

    #[test]
    fn a_failure_that_shares_nothing_with_the_focus_is_noise() {
        let error = |message: &str, frame: &str| ErrorRecord {
            common: Common::default(),
            message: message.into(),
            stack: Some(format!("    at {frame}")),
        };
        let records = Records {
            task: Some("Checkout returns 502 since the ledger deploy; find the cause.".into()),
            errors: vec![
                error(
                    "IOError: ledger write failed",
                    "LedgerWriter.apply (Ledger.java:88)",
                ),
                error(
                    "SocketTimeoutException: read timed out",
                    "NightlyJob.run (Nightly.java:64)",
                ),
                error("ValueError: bad checkout total", "cart.total (cart.py:9)"),
            ],
            ..Records::default()
        };
        let (_, s, focus) = scored(&records);
        // The latest error is the one the task is about when it names none.
        assert!(focus.error_units.contains(&UnitIx(3)));
        assert_eq!(get(&s[1], Signal::ErrorRelevance), 0.3, "shares `ledger`");
        assert_eq!(get(&s[2], Signal::ErrorRelevance), 0.1, "shares nothing");
    }

    #[test]
    fn frames_of_output_showing_the_tasks_failing_test_join_the_focus() {
        let test = "tests/test_parse.py::test_leap";
        let records = Records {
            task: Some("The monthly report fails for February. Fix it.".into()),
            tool_outputs: vec![ToolOutput {
                common: Common::default(),
                tool: "pytest tests -q".into(),
                args: None,
                output: format!("Traceback (most recent call last):\n  File \"/srv/app/app/parse.py\", line 12, in iter_days\n    yield day\n  File \"/usr/lib/python3.12/_strptime.py\", line 333, in _strptime\n    raise ValueError\nValueError: bad day\nFAILED {test} - ValueError: bad day"),
                exit_code: Some(1),
                cwd: None,
            }],
            files: vec![FileRecord {
                common: Common::default(),
                path: "app/parse.py".into(),
                content: "def iter_days(month):\n    pass\n".into(),
            }],
            test_results: vec![TestResult {
                common: Common::default(),
                name: test.into(),
                status: TestStatus::Failed,
                output: Some("E   ValueError: bad day".into()),
            }],
            ..Records::default()
        };
        let (_, s, focus) = scored(&records);
        assert!(focus.identifiers.contains("/srv/app/app/parse.py"));
        assert!(focus.identifiers.contains("parse.py"));
        assert!(
            !focus.identifiers.contains("_strptime.py"),
            "library frames stay out"
        );
        assert_eq!(
            get(&s[2], Signal::IdentifierMatch),
            1.0,
            "the file the frame points at"
        );
    }

    #[test]
    fn decisions_in_force_name_what_matters_and_proposals_need_the_task() {
        let decision = |text: &str, status| Decision {
            common: Common::default(),
            text: text.into(),
            status,
        };
        let records = Records {
            task: Some("Implement the expired-session cleanup job.".into()),
            files: vec![FileRecord {
                common: Common::default(),
                path: "auth/pg_store.py".into(),
                content: "UPDATE sessions SET last_seen_at = now() WHERE user_id = %s".into(),
            }],
            decisions: vec![
                decision(
                    "Expiry is 30 days from last_seen_at.",
                    DecisionStatus::Accepted,
                ),
                decision(
                    "Adopt tokio-console in development.",
                    DecisionStatus::Proposed,
                ),
                decision("Run the cleanup job hourly.", DecisionStatus::Proposed),
            ],
            ..Records::default()
        };
        let (_, s, focus) = scored(&records);
        assert!(focus.identifiers.contains("last_seen_at"));
        assert_eq!(get(&s[1], Signal::IdentifierMatch), 0.5);
        assert_eq!(
            get(&s[3], Signal::ConstraintDecision),
            0.0,
            "not about the task"
        );
        assert_eq!(get(&s[4], Signal::ConstraintDecision), 0.5);
    }

    #[test]
    fn within_a_session_recency_is_the_position_not_the_clock() {
        let tool = |ts: &str, out: &str| ToolOutput {
            common: Common {
                timestamp: Some(ts.into()),
                ..Common::default()
            },
            tool: format!("echo {out}"),
            args: None,
            output: out.into(),
            exit_code: Some(0),
            cwd: None,
        };
        // 41 tool calls one second apart: by the clock all are as new as the newest.
        let records = Records {
            tool_outputs: (0..41)
                .map(|i| tool(&format!("2026-02-03T05:00:{i:02}Z"), &format!("run {i}")))
                .collect(),
            ..Records::default()
        };
        let (_, s, _) = scored(&records);
        assert_eq!(get(&s[40], Signal::Recency), 1.0, "the latest call");
        assert_eq!(get(&s[20], Signal::Recency), 0.5, "20 calls before it");
        assert_eq!(get(&s[0], Signal::Recency), 0.25, "40 calls before it");
    }

    #[test]
    fn recency_uses_the_newest_timestamp_and_floors_constraints() {
        let d = |ts: &str| Decision {
            common: Common {
                timestamp: Some(ts.into()),
                ..Common::default()
            },
            text: "Use cents".into(),
            status: DecisionStatus::Accepted,
        };
        let records = Records {
            decisions: vec![d("2024-01-01T00:00:00Z"), d("2024-03-01T00:00:00Z")],
            messages: vec![Message {
                common: Common {
                    timestamp: Some("2024-02-23T00:00:00Z".into()),
                    ..Common::default()
                },
                role: Role::User,
                text: "hello".into(),
            }],
            ..Records::default()
        };
        let (_, s, _) = scored(&records);
        // One week old by the clock (0.5), one moment before the newest (0.5^(1/20)).
        assert_eq!(get(&s[0], Signal::Recency), 0.483, "one week old");
        assert_eq!(get(&s[2], Signal::Recency), 1.0);
        assert_eq!(
            get(&s[1], Signal::Recency),
            0.7,
            "a constraint never drops below the floor"
        );
    }
}
