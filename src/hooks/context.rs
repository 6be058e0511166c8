//! The context a hook injects: the optimizer's build over the workspace's stored records
//! (the transcript's, and whatever the proxies stored), for a task, under the hook's own
//! budget, leaving out what the model has just seen: the records of this transcript from
//! the start of the last turn on, and the records the previous run injected.
//!
//! A `PreCompact` run also stores a **snapshot** of what the session knows: the task and the
//! records its build cited, copied under the transcript's snapshot log
//! (`<transcript>#precompact`). Only the `SessionStart` after a compaction builds from them
//! (with its task), so it restores what the model had even when the transcript was cut
//! meanwhile; every other build leaves them out.

use std::collections::{BTreeSet, HashSet};
use std::ops::ControlFlow;

use super::ingest::id_line;
use super::HookError;
use crate::optimizer::extract::terms::{term_set, try_for_each_term};
use crate::optimizer::{self, BuildConfig};
use crate::records::{Common, Message, Role, SessionRecord};
use crate::store::{self, Filter, NewRecord, Provenance, Scope, Store, StoredRecord};

/// How many of the workspace's newest records a hook builds from: the recent window a hook
/// can read and build over within its time budget (loading and building take time in
/// proportion to the records; 1,000 records of a long Claude Code session are about 1 MB).
pub(crate) const HOOK_LOAD_LIMIT: usize = 1000;

/// What the snapshot log of a transcript ends with.
pub(crate) const SNAPSHOT_SUFFIX: &str = "#precompact";

/// The id of a snapshot's task record.
const SNAPSHOT_TASK_ID: &str = "snapshot-task";

/// The snapshot log of the transcript at `path`.
pub(crate) fn snapshot_log(path: &str) -> String {
    format!("{path}{SNAPSHOT_SUFFIX}")
}

/// The part of a session the model still has in its window: the records of its transcript
/// from the last compaction boundary on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    /// The transcript's log.
    pub(crate) log: String,
    /// The first line in the window (the last compaction boundary; 0: the whole transcript).
    pub(crate) from_line: usize,
}

impl Window {
    /// Whether a stored record is in the window: a record of the transcript from the boundary
    /// on (one without a line counts as in it).
    pub(crate) fn holds(&self, s: &StoredRecord) -> bool {
        s.provenance.log_path.as_deref() == Some(self.log.as_str())
            && s.record
                .common()
                .id
                .as_deref()
                .and_then(id_line)
                .is_none_or(|line| line >= self.from_line)
    }
}

/// What to leave out of a build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Exclusions {
    /// A prompt-time build: what the model still has. Its records are left out, so is every
    /// other record whose lines are mostly in it, and every line of the answer that is in it;
    /// only records that bear on the task (share its terms) are built from.
    pub(crate) window: Option<Window>,
    /// Records with these ids are left out (what was injected since the last boundary).
    pub(crate) ids: BTreeSet<String>,
    /// The snapshot log whose records are built from (a restore); none leaves every
    /// snapshot out.
    pub(crate) snapshot: Option<String>,
    /// A restore: what the window holds is left out as at a prompt, but every other record
    /// is built from (not only those bearing on the task), the task is kept unless the window
    /// holds its lines, and the files in play the window's summary names come last
    /// ([`super::restore`]).
    pub(crate) restore: bool,
}

/// A built context, the ids of the records it cites and those records.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Built {
    /// The rendered context.
    pub(crate) context: String,
    /// The records it cites (the task left out).
    pub(crate) cited: Vec<String>,
    /// Those records, in the order loaded.
    pub(crate) records: Vec<SessionRecord>,
}

/// The workspace's newest records, the pool every build of a run draws from.
pub(crate) fn load(store: &Store, scope: &Scope) -> Result<Vec<StoredRecord>, HookError> {
    Ok(store.load(&Filter {
        newest: Some(HOOK_LOAD_LIMIT),
        ..Filter::workspace(&scope.workspace)
    })?)
}

fn is_snapshot_task(s: &StoredRecord) -> bool {
    s.record.common().id.as_deref() == Some(SNAPSHOT_TASK_ID)
}

/// The task of the newest snapshot in `stored` under the snapshot log `log`.
pub(crate) fn snapshot_task(stored: &[StoredRecord], log: &str) -> Option<String> {
    stored
        .iter()
        .rev()
        .filter(|s| s.provenance.log_path.as_deref() == Some(log) && is_snapshot_task(s))
        .find_map(|s| match &s.record {
            SessionRecord::Message(m) => Some(m.text.clone()),
            _ => None,
        })
}

/// Stores a snapshot under the snapshot log `log`: `task`, and the records `built` cited.
pub(crate) fn save_snapshot(
    store: &mut Store,
    scope: &Scope,
    log: &str,
    task: &str,
    built: &Built,
) -> Result<(), HookError> {
    // The time makes each snapshot's task a record of its own (records of a snapshot log are
    // keyed by content), so the newest snapshot is always the last one stored.
    let task = SessionRecord::Message(Message {
        common: Common {
            id: Some(SNAPSHOT_TASK_ID.to_string()),
            timestamp: Some(chrono::Utc::now().to_rfc3339()),
            priority: None,
        },
        role: Role::User,
        text: task.to_string(),
    });
    let new: Vec<NewRecord> = std::iter::once(task)
        .chain(built.records.iter().cloned())
        .map(|record| NewRecord {
            record,
            provenance: Provenance {
                log_path: Some(log.to_string()),
                ..Provenance::default()
            },
        })
        .collect();
    store.insert(scope, &new)?;
    Ok(())
}

/// The shape of a build: its token budget, the most characters its text may take, and
/// whether it indexes the files in play.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The token budget.
    pub(crate) budget: usize,
    /// The most characters of the context (none: no limit; see
    /// [`BuildConfig::max_chars`]).
    pub(crate) max_chars: Option<usize>,
    /// Whether the context names the files in play.
    pub(crate) files_in_play: bool,
}

#[cfg(test)]
impl Shape {
    /// `budget` tokens, no character limit, no index of the files in play.
    pub(crate) fn budget(budget: usize) -> Shape {
        Shape {
            budget,
            max_chars: None,
            files_in_play: false,
        }
    }
}

/// Builds the context for `task` from `stored` in `shape`; `None` when no record besides the
/// task made it in.
pub(crate) fn build(
    mut stored: Vec<StoredRecord>,
    task: &str,
    exclusions: &Exclusions,
    shape: Shape,
) -> Result<Option<Built>, HookError> {
    let window_lines = exclusions
        .window
        .as_ref()
        .map(|w| window_lines(stored.iter().filter(|s| w.holds(s))));
    let task_terms = exclusions
        .window
        .as_ref()
        .filter(|_| !exclusions.restore)
        .map(|_| term_set(task));
    let in_window = exclusions
        .window
        .as_ref()
        .filter(|_| exclusions.restore)
        .and_then(|w| super::restore::summaries(stored.iter().filter(|s| w.holds(s))));
    let mut seen = BTreeSet::new();
    // Newest first, so that of a snapshot's copy and its original the newer one is kept.
    stored.reverse();
    stored.retain(|s| {
        let log = s.provenance.log_path.as_deref();
        if is_snapshot_task(s) {
            return false;
        }
        let snapshot = log.is_some_and(|l| l.ends_with(SNAPSHOT_SUFFIX));
        if snapshot && log != exclusions.snapshot.as_deref() {
            return false;
        }
        let id = s.record.common().id.as_deref().unwrap_or_default();
        if exclusions.ids.contains(id) {
            return false;
        }
        // A restore meets snapshot copies of records it also has: keep one of each.
        if exclusions.snapshot.is_some() && !id.is_empty() && !seen.insert(id.to_string()) {
            return false;
        }
        match (&exclusions.window, &window_lines) {
            (Some(window), Some(lines)) => {
                !window.holds(s)
                    && task_terms
                        .as_ref()
                        .is_none_or(|terms| bears_on(terms, &s.record))
                    && !mostly_in(lines, &s.record.search_text())
            }
            _ => true,
        }
    });
    stored.reverse();
    if stored.is_empty() {
        return Ok(None);
    }
    let (records, ids) = store::to_records(Some(task.to_string()), stored);
    let config = BuildConfig {
        budget: shape.budget,
        files_in_play: shape.files_in_play,
        in_window,
        max_chars: shape.max_chars,
        ..BuildConfig::default()
    };
    let out = optimizer::build(&records, &config).map_err(|e| HookError::Build(e.to_string()))?;
    let context = match &window_lines {
        Some(lines) => without_window_lines(&out.context, lines, !exclusions.restore),
        None => out.context,
    };
    // The records of the fragments the context still shows (the task left out).
    let cited: BTreeSet<String> = out
        .sources
        .iter()
        .filter(|f| f.kind != "task" && context.contains(&format!("[source: {} ", f.id)))
        .map(|f| f.record.clone())
        .collect();
    if cited.is_empty() {
        return Ok(None);
    }
    let records = ids
        .into_iter()
        .filter(|(id, _)| cited.contains(id))
        .map(|(_, s)| s.record)
        .collect();
    Ok(Some(Built {
        context,
        cited: cited.into_iter().collect(),
        records,
    }))
}

/// The least length of a line (trimmed) that counts as a fact of its own when lines are
/// compared with the model's window: shorter ones (`}`, `user:`, `---`) recur everywhere.
pub(crate) const FACT_LINE_CHARS: usize = 12;

/// A line that counts as a fact: trimmed, at least [`FACT_LINE_CHARS`] long.
fn fact_line(line: &str) -> Option<&str> {
    let line = line.trim();
    (line.chars().count() >= FACT_LINE_CHARS).then_some(line)
}

/// The lines (facts) of the records in the model's window.
pub(crate) fn window_lines<'a>(records: impl Iterator<Item = &'a StoredRecord>) -> HashSet<String> {
    let mut lines = HashSet::new();
    for s in records {
        for line in s.record.search_text().lines().filter_map(fact_line) {
            lines.insert(line.to_string());
        }
    }
    lines
}

/// Whether most of the lines (facts) of `text` are in the window.
fn mostly_in(window: &HashSet<String>, text: &str) -> bool {
    let (mut all, mut inside) = (0usize, 0usize);
    for line in text.lines().filter_map(fact_line) {
        all += 1;
        inside += usize::from(window.contains(line));
    }
    all > 0 && inside * 2 >= all
}

/// How many terms of the task a record must share to bear on it: one of a task of up to
/// three terms, else two.
fn terms_needed(task_terms: usize) -> usize {
    if task_terms <= 3 {
        1
    } else {
        2
    }
}

/// Whether `record` bears on a task with the terms `task_terms`: it shares enough of them.
fn bears_on(task_terms: &BTreeSet<String>, record: &SessionRecord) -> bool {
    if task_terms.is_empty() {
        return false;
    }
    let needed = terms_needed(task_terms.len());
    let mut shared = BTreeSet::new();
    // Enough shared terms end the scan.
    let _ = try_for_each_term(&record.search_text(), |t| {
        if task_terms.contains(t) {
            shared.insert(t.to_string());
        }
        if shared.len() >= needed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    shared.len() >= needed
}

/// How many lines (facts) of an injected `context` the model still has in its window: the
/// measure of a prompt-time answer's repeats (0 is the bar).
#[cfg(test)]
pub(crate) fn repeated_lines(context: &str, window: &HashSet<String>) -> usize {
    context
        .lines()
        .filter(|l| !is_tag(l))
        .filter_map(fact_line)
        .filter(|l| window.contains(*l))
        .count()
}

#[cfg(test)]
fn is_tag(line: &str) -> bool {
    line.starts_with("[source: ") || line.starts_with("## ")
}

/// Whether line `i` of a rendered context is a section heading: `## …` at the start or after
/// a blank line, and followed by a source tag (a `## ` line of a fragment's text is not).
fn is_heading(lines: &[&str], i: usize) -> bool {
    lines[i].starts_with("## ")
        && (i == 0 || lines[i - 1].trim().is_empty())
        && lines.get(i + 1).is_some_and(|l| l.starts_with("[source: "))
}

/// `context` without the lines the window holds, without the task when `drop_task` (at a
/// prompt, the prompt is in the window too), and without the source blocks and sections left
/// empty.
fn without_window_lines(context: &str, window: &HashSet<String>, drop_task: bool) -> String {
    // A block is a source tag and its lines up to the next tag or section.
    let mut out = String::new();
    let mut section: Option<&str> = None;
    let mut block: Vec<&str> = Vec::new();
    let lines: Vec<&str> = context.lines().collect();
    for (i, line) in lines.iter().copied().enumerate() {
        if is_heading(&lines, i) {
            flush_block(&mut section, &mut block, &mut out, drop_task);
            section = Some(line);
        } else if line.starts_with("[source: ") {
            flush_block(&mut section, &mut block, &mut out, drop_task);
            block.push(line);
        } else if !block.is_empty() {
            if !fact_line(line).is_some_and(|l| window.contains(l)) {
                block.push(line);
            }
        } else if section.is_none() && !line.trim().is_empty() {
            // Text before the first section (a preamble): kept as it is.
            out.push_str(line);
            out.push('\n');
        }
    }
    flush_block(&mut section, &mut block, &mut out, drop_task);
    out.trim_end().to_string()
}

/// Writes `block` to `out` (after its section's header, the first time) unless it is the
/// task's (and `drop_task`) or holds nothing but its tag; empties it.
fn flush_block<'a>(
    section: &mut Option<&'a str>,
    block: &mut Vec<&'a str>,
    out: &mut String,
    drop_task: bool,
) {
    while block.len() > 1 && block.last().is_some_and(|l| l.trim().is_empty()) {
        block.pop();
    }
    let is_task = drop_task && block.first().is_some_and(|t| t.contains("| record task"));
    let has_fact = block.iter().skip(1).any(|l| !l.trim().is_empty());
    if !is_task && has_fact {
        if let Some(header) = section.take() {
            out.push_str(header);
            out.push('\n');
        }
        for line in block.iter() {
            out.push_str(line);
            out.push('\n');
        }
        out.push('\n');
    }
    block.clear();
}
