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

use std::collections::BTreeSet;

use super::ingest::id_line;
use super::HookError;
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

/// What to leave out of a build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Exclusions {
    /// The log of the transcript whose latest records the model has seen.
    pub(crate) transcript: Option<String>,
    /// Records of that transcript from this line on are left out.
    pub(crate) from_line: Option<usize>,
    /// Records with these ids are left out (what the previous run injected).
    pub(crate) ids: BTreeSet<String>,
    /// The snapshot log whose records are built from (a restore); none leaves every
    /// snapshot out.
    pub(crate) snapshot: Option<String>,
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

/// Builds the context for `task` from `stored`; `None` when no record besides the task made
/// it in.
pub(crate) fn build(
    mut stored: Vec<StoredRecord>,
    task: &str,
    budget: usize,
    exclusions: &Exclusions,
) -> Result<Option<Built>, HookError> {
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
        let same = exclusions.transcript.is_some() && log == exclusions.transcript.as_deref();
        match (same, exclusions.from_line, id_line(id)) {
            (true, Some(from), Some(line)) => line < from,
            _ => true,
        }
    });
    stored.reverse();
    if stored.is_empty() {
        return Ok(None);
    }
    let (records, ids) = store::to_records(Some(task.to_string()), stored);
    let config = BuildConfig {
        budget,
        ..BuildConfig::default()
    };
    let out = optimizer::build(&records, &config).map_err(|e| HookError::Build(e.to_string()))?;
    let cited: BTreeSet<String> = out
        .sources
        .iter()
        .filter(|f| f.kind != "task")
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
        context: out.context,
        cited: cited.into_iter().collect(),
        records,
    }))
}
