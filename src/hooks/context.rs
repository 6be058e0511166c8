//! The context a hook injects: the optimizer's build over the workspace's stored records
//! (the transcript's, and whatever the proxies stored), for a task, under the hook's own
//! budget, leaving out what the model has just seen: the records of this transcript from
//! the start of the last turn on, and the records the previous run injected.

use std::collections::BTreeSet;

use super::ingest::id_line;
use super::HookError;
use crate::optimizer::{self, BuildConfig};
use crate::store::{self, Filter, Scope, Store};

/// How many of the workspace's newest records a hook builds from.
pub const HOOK_LOAD_LIMIT: usize = 3000;

/// What to leave out of a build.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Exclusions {
    /// The transcript whose latest records the model has seen.
    pub transcript: Option<String>,
    /// Records of that transcript from this line on are left out.
    pub from_line: Option<usize>,
    /// Records with these ids are left out (what the previous run injected).
    pub ids: BTreeSet<String>,
}

/// A built context and the ids of the records it cites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Built {
    /// The rendered context.
    pub context: String,
    /// The records it cites (the task left out).
    pub cited: Vec<String>,
}

/// Builds the context for `task`; `None` when no record besides the task made it in.
pub fn build(
    store: &Store,
    scope: &Scope,
    task: &str,
    budget: usize,
    exclusions: &Exclusions,
) -> Result<Option<Built>, HookError> {
    let mut stored = store.load(&Filter {
        newest: Some(HOOK_LOAD_LIMIT),
        ..Filter::workspace(&scope.workspace)
    })?;
    stored.retain(|s| {
        let id = s.record.common().id.as_deref().unwrap_or_default();
        if exclusions.ids.contains(id) {
            return false;
        }
        let same = exclusions.transcript.is_some()
            && s.provenance.log_path.as_deref() == exclusions.transcript.as_deref();
        match (same, exclusions.from_line, id_line(id)) {
            (true, Some(from), Some(line)) => line < from,
            _ => true,
        }
    });
    if stored.is_empty() {
        return Ok(None);
    }
    let (records, _) = store::to_records(Some(task.to_string()), stored);
    let config = BuildConfig {
        budget,
        ..BuildConfig::default()
    };
    let out = optimizer::build(&records, &config).map_err(|e| HookError::Build(e.to_string()))?;
    let cited: Vec<String> = out
        .sources
        .iter()
        .filter(|f| f.kind != "task")
        .map(|f| f.record.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if cited.is_empty() {
        return Ok(None);
    }
    Ok(Some(Built {
        context: out.context,
        cited,
    }))
}
