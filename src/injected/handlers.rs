//! What the injected tools do: each reads (or, for `ingest_records`, writes) the store for
//! the caller's workspace and returns a `CallToolResult`: text content plus
//! `structuredContent` matching the tool's output schema. The text is the structured result
//! as JSON, as the MCP specification recommends, except for `build_context` in its default
//! `text` format, whose text is the context itself.

use std::collections::{BTreeMap, BTreeSet};

use serde::Deserialize;
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

pub(crate) mod get_result;

use super::tools::InjectedTool;
use crate::compact::pages::PageCache;
use crate::compact::Limits;
use crate::optimizer::extract::terms::term_set;
use crate::optimizer::parse::{parse_records, RecordsError};
use crate::optimizer::{self, BuildConfig, OptimizerError, DEFAULT_BUDGET};
use crate::records::understand::understand;
use crate::records::{DecisionStatus, Kind, SessionRecord, TestStatus};
use crate::store::{
    self, Filter, NewRecord, Provenance, Scope, Store, StoreError, StoredRecord, DEFAULT_LOAD_LIMIT,
};

/// The default number of hits of `search_context` and `get_relevant_errors`.
pub(crate) const DEFAULT_LIMIT: usize = 10;

/// The longest snippet `search_context` returns, in characters.
const SNIPPET_CHARS: usize = 240;

/// Why a tool call failed. Reported to the client as a result with `isError: true`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ToolError {
    /// The arguments do not match the tool's input schema.
    #[error("invalid arguments for {tool}: {message}")]
    InvalidArguments {
        /// The tool.
        tool: &'static str,
        /// What is wrong.
        message: String,
    },
    /// `ingest_records` got records that do not follow the records format.
    #[error("invalid records: {0}")]
    Records(#[from] RecordsError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The optimizer rejected the stored records.
    #[error("the optimizer failed: {0}")]
    Optimizer(#[from] OptimizerError),
    /// There is no store to read or write.
    #[error("the session store is not available: {0}")]
    NoStore(String),
}

impl ToolError {
    /// The error as a `CallToolResult` with `isError: true`.
    pub(crate) fn to_call_result(&self) -> Value {
        json!({"content": [{"type": "text", "text": self.to_string()}], "isError": true})
    }
}

/// Runs an injected tool for `scope`'s workspace (`get_result` under the default
/// [`Limits`]; the proxy passes its own to [`get_result::get_result`]).
pub(crate) fn handle_call(
    tool: InjectedTool,
    arguments: &Value,
    store: &mut Store,
    scope: &Scope,
) -> Result<Value, ToolError> {
    match tool {
        InjectedTool::BuildContext => build_context(args(tool, arguments)?, store, scope),
        InjectedTool::SearchContext => search_context(args(tool, arguments)?, store, scope),
        InjectedTool::GetDecisions => get_decisions(args(tool, arguments)?, store, scope),
        InjectedTool::GetRelevantErrors => {
            get_relevant_errors(args(tool, arguments)?, store, scope)
        }
        InjectedTool::GetFileHistory => get_file_history(args(tool, arguments)?, store, scope),
        InjectedTool::IngestRecords => ingest_records(args(tool, arguments)?, store, scope),
        InjectedTool::GetResult => handle_get_result(
            arguments,
            store,
            scope,
            Limits::default(),
            &PageCache::default(),
        ),
    }
}

/// Runs `get_result` for `scope`'s workspace, each answer under `limits`.
pub(crate) fn handle_get_result(
    arguments: &Value,
    store: &Store,
    scope: &Scope,
    limits: Limits,
    pages: &PageCache,
) -> Result<Value, ToolError> {
    get_result::get_result(
        args(InjectedTool::GetResult, arguments)?,
        store,
        scope,
        limits,
        pages,
    )
}

fn args<T: for<'de> Deserialize<'de>>(
    tool: InjectedTool,
    arguments: &Value,
) -> Result<T, ToolError> {
    let arguments = if arguments.is_null() {
        &Value::Object(Map::new())
    } else {
        arguments
    };
    check_integers(tool, arguments)?;
    T::deserialize(arguments).map_err(|e| ToolError::InvalidArguments {
        tool: tool.name(),
        message: e.to_string(),
    })
}

/// Checks every integer argument against its range in the tool's input schema, so an error
/// names the argument and the range (`` `budget` must be an integer in 1..=200000, found -5 ``).
fn check_integers(tool: InjectedTool, arguments: &Value) -> Result<(), ToolError> {
    let properties = tool
        .definition()
        .pointer("/inputSchema/properties")
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        if schema.get("type").and_then(Value::as_str) != Some("integer") {
            continue;
        }
        let Some(value) = arguments.get(name).filter(|v| !v.is_null()) else {
            continue;
        };
        let min = schema.get("minimum").and_then(Value::as_i64);
        let max = schema.get("maximum").and_then(Value::as_i64);
        let fits = value
            .as_i64()
            .is_some_and(|n| min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m));
        if !fits {
            let range = match (min, max) {
                (Some(a), Some(b)) => format!("an integer in {a}..={b}"),
                (Some(a), None) => format!("an integer of at least {a}"),
                (None, Some(b)) => format!("an integer of at most {b}"),
                (None, None) => "an integer".to_string(),
            };
            return Err(invalid(
                tool,
                format!("`{name}` must be {range}, found {value}"),
            ));
        }
    }
    Ok(())
}

fn invalid(tool: InjectedTool, message: impl Into<String>) -> ToolError {
    ToolError::InvalidArguments {
        tool: tool.name(),
        message: message.into(),
    }
}

/// A result whose text is its structured content as JSON.
fn structured(value: Value) -> Value {
    json!({"content": [{"type": "text", "text": value.to_string()}], "structuredContent": value})
}

/// The provenance members of a record in a tool's output.
fn provenance(out: &mut Map<String, Value>, s: &StoredRecord) {
    out.insert("server".into(), json!(s.server));
    let p = &s.provenance;
    if let Some(tool) = &p.tool {
        out.insert("tool".into(), json!(tool));
    }
    if let Some(ts) = &s.record.common().timestamp {
        out.insert("timestamp".into(), json!(ts));
    }
    if let Some(log) = &p.log_path {
        out.insert("log".into(), json!(log));
    }
    if let Some(seq) = p.seq {
        out.insert("seq".into(), json!(seq));
    }
}

fn load(store: &Store, scope: &Scope, kind: Option<Kind>) -> Result<Vec<StoredRecord>, StoreError> {
    store.load(&Filter {
        kind,
        newest: Some(DEFAULT_LOAD_LIMIT),
        ..Filter::workspace(&scope.workspace)
    })
}

/// Whole-word overlap: the share of the query's terms found in `text`.
fn overlap(query: &BTreeSet<String>, text: &str) -> f64 {
    if query.is_empty() {
        return 0.0;
    }
    let terms = term_set(text);
    let hits = query.iter().filter(|t| terms.contains(*t)).count();
    (hits as f64 / query.len() as f64 * 10_000.0).round() / 10_000.0
}

/// Ranks by score (highest first), then by row (newest first).
fn rank<T>(items: &mut [(f64, i64, T)]) {
    items.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BuildArgs {
    task: String,
    budget: Option<usize>,
    format: Option<Format>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum Format {
    Text,
    Json,
}

fn build_context(a: BuildArgs, store: &Store, scope: &Scope) -> Result<Value, ToolError> {
    let tool = InjectedTool::BuildContext;
    if a.task.trim().is_empty() {
        return Err(invalid(tool, "`task` is empty"));
    }
    let budget = a.budget.unwrap_or(DEFAULT_BUDGET);
    let (task, task_note) = cap_task(a.task);
    let stored = load(store, scope, None)?;
    let count = stored.len();
    let (records, ids) = store::to_records(Some(task), stored);
    let by_id: BTreeMap<&str, &StoredRecord> = ids.iter().map(|(id, s)| (id.as_str(), s)).collect();
    let config = BuildConfig {
        budget,
        ..BuildConfig::default()
    };
    let out = optimizer::build(&records, &config)?;
    let sources: Vec<Value> = out
        .sources
        .iter()
        .map(|f| {
            let mut m = Map::new();
            m.insert("fragment".into(), json!(f.id));
            m.insert("record".into(), json!(f.record));
            m.insert("kind".into(), json!(f.kind));
            m.insert("section".into(), json!(f.section));
            m.insert("tokens".into(), json!(f.tokens));
            if let Some(path) = &f.path {
                m.insert("path".into(), json!(path));
            }
            if let Some(s) = by_id.get(f.record.as_str()) {
                provenance(&mut m, s);
            }
            Value::Object(m)
        })
        .collect();
    let value = json!({
        "context": out.context,
        "budget": budget,
        "records": count,
        "stats": {
            "inputTokens": out.stats.input_tokens,
            "outputTokens": out.stats.output_tokens,
            "reduction": out.stats.reduction,
        },
        "sources": sources,
        "omitted": out.omitted.len(),
        "warnings": task_note.into_iter().chain(out.report.warnings).collect::<Vec<_>>(),
    });
    if a.format == Some(Format::Json) {
        return Ok(structured(value));
    }
    Ok(json!({"content": [{"type": "text", "text": out.context}], "structuredContent": value}))
}

/// The most characters of a `build_context` task that are used (and so can appear in the
/// answer, twice: in the text and in `structuredContent.context`).
pub(crate) const MAX_TASK_CHARS: usize = 8_000;

/// The task cut to [`MAX_TASK_CHARS`], and a note saying so when it was cut.
fn cap_task(task: String) -> (String, Option<String>) {
    let total = task.chars().count();
    match task.char_indices().nth(MAX_TASK_CHARS) {
        None => (task, None),
        Some((cut, _)) => (
            format!("{} [… task cut here]", &task[..cut]),
            Some(format!(
                "the task has {total} characters; only its first {MAX_TASK_CHARS} were used"
            )),
        ),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SearchArgs {
    query: String,
    limit: Option<usize>,
}

fn search_context(a: SearchArgs, store: &Store, scope: &Scope) -> Result<Value, ToolError> {
    let query = term_set(&a.query);
    if query.is_empty() {
        return Err(invalid(
            InjectedTool::SearchContext,
            "the query has no searchable words (three letters or more, not common words)",
        ));
    }
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let stored = load(store, scope, None)?;
    let (_, ids) = store::to_records(None, stored);
    let mut hits: Vec<(f64, i64, Value)> = Vec::new();
    for (id, s) in &ids {
        let text = s.record.search_text();
        let score = overlap(&query, &text);
        if score == 0.0 {
            continue;
        }
        let mut m = Map::new();
        m.insert("record".into(), json!(id));
        m.insert("kind".into(), json!(s.record.kind().name()));
        m.insert("score".into(), json!(score));
        m.insert("snippet".into(), json!(snippet(&text, &query)));
        if let Some(path) = s.record.path() {
            m.insert("path".into(), json!(path));
        }
        provenance(&mut m, s);
        hits.push((score, s.row, Value::Object(m)));
    }
    rank(&mut hits);
    let hits: Vec<Value> = hits.into_iter().take(limit).map(|h| h.2).collect();
    Ok(structured(json!({"query": a.query, "hits": hits})))
}

/// The first line that holds a query term (else the first line), cut to a few hundred
/// characters.
fn snippet(text: &str, query: &BTreeSet<String>) -> String {
    let line = text
        .lines()
        .find(|l| term_set(l).iter().any(|t| query.contains(t)))
        .or_else(|| text.lines().next())
        .unwrap_or_default()
        .trim();
    match line.char_indices().nth(SNIPPET_CHARS) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionArgs {
    status: Option<DecisionStatus>,
}

fn get_decisions(a: DecisionArgs, store: &Store, scope: &Scope) -> Result<Value, ToolError> {
    let stored = load(store, scope, Some(Kind::Decision))?;
    let (_, ids) = store::to_records(None, stored);
    let decisions: Vec<Value> = ids
        .iter()
        .filter_map(|(id, s)| {
            let SessionRecord::Decision(d) = &s.record else {
                return None;
            };
            if a.status.is_some_and(|want| want != d.status) {
                return None;
            }
            let mut m = Map::new();
            m.insert("record".into(), json!(id));
            m.insert("text".into(), json!(d.text));
            m.insert("status".into(), json!(d.status));
            provenance(&mut m, s);
            Some(Value::Object(m))
        })
        .collect();
    Ok(structured(json!({"decisions": decisions})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ErrorArgs {
    query: Option<String>,
    limit: Option<usize>,
}

fn get_relevant_errors(a: ErrorArgs, store: &Store, scope: &Scope) -> Result<Value, ToolError> {
    let query = a.query.as_deref().map(term_set).unwrap_or_default();
    let limit = a.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let mut stored = load(store, scope, Some(Kind::Error))?;
    stored.extend(load(store, scope, Some(Kind::TestResult))?);
    stored.sort_by_key(|s| s.row);
    let (_, ids) = store::to_records(None, stored);
    let mut found: Vec<(f64, i64, Value)> = Vec::new();
    for (id, s) in &ids {
        let (kind, message, stack) = match &s.record {
            SessionRecord::Error(e) => ("error", e.message.clone(), e.stack.clone()),
            SessionRecord::TestResult(t) if t.status == TestStatus::Failed => (
                "testResult",
                format!("test {} failed", t.name),
                t.output.clone(),
            ),
            _ => continue,
        };
        let score = overlap(&query, &s.record.search_text());
        let mut m = Map::new();
        m.insert("record".into(), json!(id));
        m.insert("kind".into(), json!(kind));
        m.insert("message".into(), json!(message));
        if let Some(stack) = stack {
            m.insert("stack".into(), json!(stack));
        }
        m.insert("score".into(), json!(score));
        provenance(&mut m, s);
        found.push((score, s.row, Value::Object(m)));
    }
    rank(&mut found);
    let errors: Vec<Value> = found.into_iter().take(limit).map(|e| e.2).collect();
    Ok(structured(json!({"errors": errors})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryArgs {
    path: String,
}

/// Whether a stored path is the asked one: equal, or ending with it after a `/`.
fn path_matches(stored: &str, asked: &str) -> bool {
    let asked = asked.trim_start_matches("./");
    stored == asked
        || stored
            .strip_suffix(asked)
            .is_some_and(|head| head.ends_with('/') || asked.starts_with('/'))
}

fn get_file_history(a: HistoryArgs, store: &Store, scope: &Scope) -> Result<Value, ToolError> {
    if a.path.trim().is_empty() {
        return Err(invalid(InjectedTool::GetFileHistory, "`path` is empty"));
    }
    let mut stored = load(store, scope, Some(Kind::File))?;
    stored.extend(load(store, scope, Some(Kind::Diff))?);
    stored.retain(|s| s.record.path().is_some_and(|p| path_matches(p, &a.path)));
    stored.sort_by_key(|s| s.row);
    let (_, ids) = store::to_records(None, stored);
    let mut last: BTreeMap<String, String> = BTreeMap::new();
    let versions: Vec<Value> = ids
        .iter()
        .map(|(id, s)| {
            let (kind, path, content) = match &s.record {
                SessionRecord::File(f) => ("file", &f.path, &f.content),
                SessionRecord::Diff(d) => ("diff", &d.path, &d.diff),
                _ => unreachable!("only files and diffs were loaded"),
            };
            let sha = hex::encode(Sha256::digest(content.as_bytes()));
            let changed = kind == "diff"
                || last.insert(path.clone(), sha.clone()).as_deref() != Some(sha.as_str());
            let mut m = Map::new();
            m.insert("record".into(), json!(id));
            m.insert("kind".into(), json!(kind));
            m.insert("path".into(), json!(path));
            m.insert("content".into(), json!(content));
            m.insert("sha256".into(), json!(sha));
            m.insert("changed".into(), json!(changed));
            provenance(&mut m, s);
            Value::Object(m)
        })
        .collect();
    Ok(structured(json!({"path": a.path, "versions": versions})))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IngestArgs {
    records: Value,
}

fn ingest_records(a: IngestArgs, store: &mut Store, scope: &Scope) -> Result<Value, ToolError> {
    // Some clients pass the object as a JSON string: take its text as the records file.
    let text = match a.records {
        Value::String(text) => text,
        other => other.to_string(),
    };
    // A tool output whose command reads a file is stored as that file's content.
    let records = understand(parse_records(&text)?);
    let ignored = serde_json::from_str::<Value>(&text)
        .map(|v| ignored_fields(&v))
        .unwrap_or_default();
    let new: Vec<NewRecord> = SessionRecord::all_of(records)
        .into_iter()
        .map(|record| NewRecord {
            record,
            provenance: Provenance {
                tool: Some(InjectedTool::IngestRecords.name().to_string()),
                ..Provenance::default()
            },
        })
        .collect();
    let outcome = store.insert(scope, &new)?;
    let mut answer = json!({"inserted": outcome.inserted, "duplicates": outcome.duplicates});
    if !ignored.is_empty() {
        answer["ignored"] = json!(ignored);
        answer["note"] = json!(format!(
            "{} unknown field(s) were ignored: {}",
            ignored.len(),
            ignored.join(", ")
        ));
    }
    Ok(structured(answer))
}

/// The fields of a records document the format does not know, as paths
/// (`toolOutputs[0].cmd`, `extra`): the reader ignores them, the caller should know.
fn ignored_fields(doc: &Value) -> Vec<String> {
    const COMMON: [&str; 3] = ["id", "timestamp", "priority"];
    const LISTS: [(&str, &[&str]); 7] = [
        ("messages", &["role", "text"]),
        ("toolOutputs", &["tool", "args", "output", "exitCode"]),
        ("errors", &["message", "stack"]),
        ("files", &["path", "content"]),
        ("diffs", &["path", "diff"]),
        ("testResults", &["name", "status", "output"]),
        ("decisions", &["text", "status"]),
    ];
    let mut out = Vec::new();
    let Some(top) = doc.as_object() else {
        return out;
    };
    for (key, value) in top {
        let Some((_, fields)) = LISTS.iter().find(|(list, _)| list == key) else {
            if key != "task" {
                out.push(key.clone());
            }
            continue;
        };
        for (i, record) in value.as_array().into_iter().flatten().enumerate() {
            for field in record.as_object().into_iter().flat_map(|r| r.keys()) {
                if !COMMON.contains(&field.as_str()) && !fields.contains(&field.as_str()) {
                    out.push(format!("{key}[{i}].{field}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
