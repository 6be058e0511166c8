//! The injected tools (`build_context` and friends) over the store: [`Bridge`] holds the
//! store, the scope and the tools offered behind an API that needs no transport. Tool results
//! flow into the store ([`Bridge::on_frame_pair`], converted by [`crate::import::mcp`]), and
//! the tools answer from it ([`handlers`]). The proxy plugs it into the relay through the
//! adapters in [`crate::proxy`]; `ctxopt serve` ([`server`]) uses it as a plain MCP server.
//! How the proxy wires it in is in `docs/injected-tools.md`.

pub(crate) mod handlers;
pub mod server;
pub mod tool_filter;
pub(crate) mod tools;
pub(crate) mod tools_list;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};

use serde_json::Value;

use crate::compact::pages::PageCache;
use crate::compact::{self, Call, Compacted, Limits, Outcome, Schema};
use crate::framelog::{LeftWhole, LeftWholeReason};
use crate::import::mcp::{self as ingest, FramePair, IngestError};
use crate::protocol;
use crate::store::results::{unix_now, DEFAULT_RETENTION, MAX_KEPT_BYTES};
use crate::store::{InsertOutcome, Scope, Store, StoreError, BUSY_TIMEOUT};
use crate::sync::lock;
use handlers::ToolError;
use tool_filter::ToolFilter;
use tools::{InjectedTool, Selection, ToolNames};
use tools_list::Extended;

/// Why a frame pair was not stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum BridgeError {
    /// The pair gives no records (not a tool call, a call to an injected tool, …): nothing
    /// to report.
    #[error("not ingested: {0}")]
    Skipped(#[from] IngestError),
    /// The store failed. `first` is true for the first failure of this bridge: report that
    /// one, count the rest.
    #[error("{error}")]
    Store {
        /// The failure.
        error: StoreError,
        /// Whether this is the bridge's first store failure.
        first: bool,
    },
    /// The bridge has no store (it could not be opened).
    #[error("no store: {0}")]
    NoStore(String),
}

/// Reports a store that could not be opened, once, as it fails.
fn report_open(opened: Result<Store, StoreError>) -> Result<Store, StoreError> {
    if let Err(err) = &opened {
        tracing::warn!("ctxopt-proxy: {err}; relaying continues without the store");
    }
    opened
}

/// Store failures seen so far, for the log trailer.
#[derive(Debug, Default)]
struct Failures {
    count: u64,
    first: Option<String>,
    /// The store file was found deleted or replaced (said once).
    gone: bool,
}

/// What becomes of a server's `tools/call` result with compaction on
/// ([`Bridge::compact_response`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ResultVerdict {
    /// Relay it as it is: compaction is off, or its text is not over the limit.
    Relay,
    /// Relay it as it is, although its text is over the limit, for this reason (logged).
    LeftWhole(LeftWhole),
    /// Send this instead: the original is kept under the handle its sentence names.
    Compacted(Compacted),
}

/// The store, the scope and the injected tools' names, shared by the tap (ingestion) and
/// the relay (answers). Every method takes `&self`; the store sits behind a mutex.
#[derive(Debug)]
pub struct Bridge {
    /// The store, or why there is none (while it is being opened: a placeholder reason).
    store: Mutex<Result<Store, String>>,
    /// The store still being opened, until someone has taken it in.
    opening: Mutex<Option<Opening>>,
    /// The store's opening waits for a lock another process holds (the relay then does
    /// not wait for it).
    open_blocked: std::sync::Arc<AtomicBool>,
    scope: Scope,
    selection: Selection,
    /// The tools offered: the selection's, and `get_result` with compaction.
    offered: Vec<InjectedTool>,
    names: Mutex<ToolNames>,
    earlier_pages: Mutex<BTreeSet<String>>,
    failures: Mutex<Failures>,
    /// `--compact-results`.
    compaction: Option<Limits>,
    /// The largest response frame kept for `get_result`, in bytes (a larger one is relayed
    /// whole).
    kept_cap: usize,
    /// `--hide-tools` / `--only-tools`.
    filter: ToolFilter,
    /// The `outputSchema` of each tool the server listed (`None`: it declares none).
    schemas: Mutex<HashMap<String, Option<Value>>>,
    /// Where the pages `get_result` served end.
    pages: PageCache,
}

/// A store being opened on a thread of its own ([`Bridge::opening`]).
type Opening = mpsc::Receiver<Result<Store, StoreError>>;

impl Bridge {
    /// A bridge over an open store, offering all six tools.
    pub fn new(store: Store, scope: Scope) -> Bridge {
        Bridge::with_store(Ok(store), scope)
    }

    /// A bridge whose store could not be opened: ingestion reports [`BridgeError::NoStore`]
    /// and the injected tools answer with the reason, as `isError` results.
    pub fn unavailable(error: &StoreError, scope: Scope) -> Bridge {
        let bridge = Bridge::with_store(Err(error.to_string()), scope);
        lock(&bridge.failures).first = Some(error.to_string());
        bridge
    }

    /// A bridge whose store `open` opens on a thread of its own, so that a store another
    /// process holds locked delays nothing but the first use of the store (ingestion on
    /// the tap thread, an injected tool's answer), which waits for it; a result to compact
    /// meanwhile does not wait for a lock (it is relayed whole, `store_busy`). `open` must
    /// not wait for a lock itself ([`Store::open_without_waiting`]): it is tried again every
    /// 10 ms, up to the busy timeout. A store that cannot be opened is reported once on
    /// stderr, as it fails, and the bridge is then [`unavailable`](Bridge::unavailable).
    pub fn opening(
        open: impl Fn() -> Result<Store, StoreError> + Send + 'static,
        scope: Scope,
    ) -> Bridge {
        let (tx, rx) = mpsc::channel();
        let blocked = std::sync::Arc::new(AtomicBool::new(false));
        let waiting = std::sync::Arc::clone(&blocked);
        let started = std::thread::Builder::new()
            .name("store-open".into())
            .spawn(move || {
                let since = std::time::Instant::now();
                let opened = loop {
                    match open() {
                        Err(StoreError::Locked { .. }) if since.elapsed() < BUSY_TIMEOUT => {
                            waiting.store(true, Ordering::Release);
                            std::thread::sleep(std::time::Duration::from_millis(10));
                        }
                        opened => break opened,
                    }
                };
                let _ = tx.send(report_open(opened));
            });
        let mut bridge = Bridge::with_store(Err("the store is being opened".into()), scope);
        match started {
            Ok(_) => {
                *lock(&bridge.opening) = Some(rx);
                bridge.open_blocked = blocked;
            }
            Err(_) => {
                bridge = Bridge::from_open(
                    report_open(Err(StoreError::Io {
                        location: "the store".into(),
                        source: std::io::Error::other("no thread to open it on"),
                    })),
                    bridge.scope,
                )
            }
        }
        bridge
    }

    fn from_open(opened: Result<Store, StoreError>, scope: Scope) -> Bridge {
        match opened {
            Ok(store) => Bridge::new(store, scope),
            Err(err) => Bridge::unavailable(&err, scope),
        }
    }

    fn with_store(store: Result<Store, String>, scope: Scope) -> Bridge {
        Bridge {
            store: Mutex::new(store),
            opening: Mutex::new(None),
            open_blocked: std::sync::Arc::new(AtomicBool::new(false)),
            scope,
            selection: Selection::All,
            offered: Selection::All.tools().to_vec(),
            names: Mutex::new(ToolNames::plain(Selection::All.tools())),
            earlier_pages: Mutex::new(BTreeSet::new()),
            failures: Mutex::new(Failures::default()),
            compaction: None,
            kept_cap: MAX_KEPT_BYTES,
            filter: ToolFilter::All,
            schemas: Mutex::new(HashMap::new()),
            pages: PageCache::default(),
        }
    }

    /// Takes in the opened store, or why it could not be opened.
    fn take_in(&self, opened: Result<Result<Store, StoreError>, mpsc::RecvError>) {
        let ready = match opened {
            Ok(Ok(store)) => Ok(store),
            Ok(Err(err)) => Err(err.to_string()),
            Err(_) => Err("the store could not be opened (its thread ended)".to_string()),
        };
        if let Err(reason) = &ready {
            lock(&self.failures).first = Some(reason.clone());
        }
        *lock(&self.store) = ready;
    }

    /// Waits for the store while it is being opened.
    fn wait_opened(&self) {
        let mut opening = lock(&self.opening);
        if let Some(rx) = opening.take() {
            self.take_in(rx.recv());
        }
    }

    /// Whether the store is open (or known to be unavailable), waiting for its opening
    /// only while that is work, not a wait for a lock another process holds.
    fn opened_soon(&self) -> bool {
        let mut opening = match self.opening.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return false,
        };
        let Some(rx) = opening.as_ref() else {
            return true;
        };
        let opened = loop {
            match rx.recv_timeout(std::time::Duration::from_millis(5)) {
                Ok(opened) => break Ok(opened),
                Err(mpsc::RecvTimeoutError::Disconnected) => break Err(mpsc::RecvError),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if self.open_blocked.load(Ordering::Acquire) {
                        return false;
                    }
                }
            }
        };
        opening.take();
        self.take_in(opened);
        true
    }

    /// Runs `f` on the store (waiting for it while it is being opened), or on why there is
    /// none.
    fn using_store<R>(&self, f: impl FnOnce(Result<&mut Store, &str>) -> R) -> R {
        self.wait_opened();
        let mut store = lock(&self.store);
        f(store.as_mut().map_err(|reason| reason.as_str()))
    }

    /// Keeps a compacted result's original for the relay, which must not wait for the
    /// store's lock: `Ok(false)` when another process holds the store locked or it is still
    /// being opened. The proxy's own threads hold the store only while they work, never
    /// while they wait for its lock, so waiting for them is waiting for that work.
    fn keep_without_waiting(&self, handle: &str, tool: &str, frame: &str) -> Result<bool, String> {
        if !self.opened_soon() {
            return Ok(false);
        }
        let mut store = lock(&self.store);
        let store = store.as_mut().map_err(|reason| reason.clone())?;
        // The exact copy, never redacted: get_result must return what the server sent.
        let kept = store.without_waiting(|store| {
            store.keep_result(
                &self.scope,
                handle,
                Some(tool),
                frame,
                unix_now(),
                DEFAULT_RETENTION,
            )
        });
        match kept {
            Ok(()) => Ok(true),
            Err(StoreError::Locked { .. }) => Ok(false),
            Err(err) => Err(err.to_string()),
        }
    }

    /// Offers only the `selection` of tools (`--inject`).
    pub(crate) fn with_selection(mut self, selection: Selection) -> Bridge {
        self.selection = selection;
        self.offer();
        self
    }

    /// Compacts oversized tool results under `limits` (`--compact-results`), and offers
    /// `get_result`.
    pub(crate) fn with_compaction(mut self, limits: Limits) -> Bridge {
        self.compaction = Some(limits);
        self.offer();
        self
    }

    /// Keeps results of at most `bytes` for `get_result` (default [`MAX_KEPT_BYTES`]); a
    /// larger result is relayed whole.
    pub(crate) fn with_kept_cap(mut self, bytes: usize) -> Bridge {
        self.kept_cap = bytes;
        self
    }

    /// Takes the server's tools `filter` hides out of the client's view.
    pub(crate) fn with_tool_filter(mut self, filter: ToolFilter) -> Bridge {
        self.filter = filter;
        self
    }

    fn offer(&mut self) {
        self.offered = self.selection.tools().to_vec();
        if self.compaction.is_some() {
            self.offered.push(InjectedTool::GetResult);
        }
        self.names = Mutex::new(ToolNames::plain(&self.offered));
    }

    /// Whether the proxy takes part in the conversation at all: it offers tools, compacts
    /// results or hides tools. Without, it is a plain relay.
    pub(crate) fn takes_part(&self) -> bool {
        !self.offered.is_empty() || self.compaction.is_some() || self.filter.is_active()
    }

    /// Whether every `tools/call` must be looked at: results are compacted or tools hidden.
    pub(crate) fn sees_calls(&self) -> bool {
        self.compaction.is_some() || self.filter.is_active()
    }

    /// The compaction limits, when results are compacted.
    pub fn compaction(&self) -> Option<Limits> {
        self.compaction
    }

    /// Whether a call to the server's tool `name` must be refused (the tool is hidden).
    pub fn hides(&self, name: &str) -> bool {
        !self.filter.shows(name) && lock(&self.names).lookup(name).is_none()
    }

    /// Compacts a server's response frame (its text without the line ending) to a
    /// `tools/call` of `tool` with `arguments`, keeping the original in the store first.
    /// A result over the limit that cannot be cut down is relayed whole, and the log says
    /// why ([`ResultVerdict::LeftWhole`]; a diagnostic line says it too).
    pub(crate) fn compact_response(
        &self,
        frame: &str,
        tool: &str,
        arguments: &Value,
    ) -> ResultVerdict {
        let Some(limits) = self.compaction else {
            return ResultVerdict::Relay;
        };
        let known = lock(&self.schemas).get(tool).cloned();
        let schema = match &known {
            Some(Some(schema)) => Schema::Declared(schema),
            Some(None) => Schema::None,
            None => Schema::Unknown,
        };
        let call = Call { arguments, schema };
        let handle = compact::handle_for(&self.scope.workspace, frame);
        let get_result = self
            .names()
            .offered_name(InjectedTool::GetResult)
            .unwrap_or("get_result")
            .to_string();
        let left_whole = |reason, structured_tokens: Option<usize>, kept_cap: Option<usize>| {
            ResultVerdict::LeftWhole(LeftWhole {
                reason,
                limit: limits.tokens as u64,
                structured_tokens: structured_tokens.map(|t| t as u64),
                kept_cap: kept_cap.map(|c| c as u64),
            })
        };
        let compacted = match compact::compact(frame, &call, limits, &handle, &get_result) {
            Outcome::Compacted(c) => c,
            Outcome::Pass(pass) => {
                let (reason, structured_tokens) = match pass {
                    compact::Pass::StructuredOverLimit { tokens } => {
                        (LeftWholeReason::StructuredContent, Some(tokens))
                    }
                    compact::Pass::NoText => (LeftWholeReason::NoText, None),
                    _ => return ResultVerdict::Relay,
                };
                tracing::warn!("ctxopt-proxy: {tool} result left whole: {pass}");
                return left_whole(reason, structured_tokens, None);
            }
        };
        if frame.len() > self.kept_cap {
            tracing::warn!(
                "ctxopt-proxy: {tool} result of {} bytes relayed whole: the store keeps results of at most {} bytes (--max-kept-bytes)",
                frame.len(),
                self.kept_cap
            );
            return left_whole(LeftWholeReason::OverKeptCap, None, Some(self.kept_cap));
        }
        match self.keep_without_waiting(&handle, tool, frame) {
            Ok(true) => ResultVerdict::Compacted(compacted),
            Ok(false) => {
                tracing::warn!(
                    "ctxopt-proxy: {tool} result relayed whole: the store is busy (locked by another process, or still being opened), and the relay does not wait for it"
                );
                left_whole(LeftWholeReason::StoreBusy, None, None)
            }
            Err(reason) => {
                tracing::warn!(
                    "ctxopt-proxy: {tool} result relayed whole: it could not be kept: {reason}"
                );
                left_whole(LeftWholeReason::NotKept, None, None)
            }
        }
    }

    /// Whose records this bridge writes and reads.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The names the injected tools are currently offered under.
    pub fn names(&self) -> ToolNames {
        lock(&self.names).clone()
    }

    /// Ingests one `tools/call` request and its response (call it on the tap thread, off
    /// the relay path). Calls to the injected tools are skipped.
    pub(crate) fn on_frame_pair(&self, pair: &FramePair<'_>) -> Result<InsertOutcome, BridgeError> {
        let names = self.names();
        let records = ingest::ingest(pair, &|name| names.is_injected(name))?;
        self.wait_opened();
        // A locked store is waited for up to its busy timeout, but never while holding it:
        // the relay may need it in between, to keep a result it compacts.
        let started = std::time::Instant::now();
        let inserted = loop {
            let mut guard = lock(&self.store);
            let store = guard.as_mut().map_err(|reason| {
                lock(&self.failures).count += 1;
                BridgeError::NoStore(reason.clone())
            })?;
            match store.without_waiting(|store| store.insert(&self.scope, &records)) {
                Err(StoreError::Locked { .. }) if started.elapsed() < BUSY_TIMEOUT => {}
                done => {
                    self.note_gone(store);
                    break done;
                }
            }
            drop(guard);
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        inserted.map_err(|error| {
            let mut failures = lock(&self.failures);
            failures.count += 1;
            let first = failures.first.is_none();
            if first {
                failures.first = Some(error.to_string());
            }
            BridgeError::Store { error, first }
        })
    }

    /// Says once (stderr, and the log trailer's store line) that the store file was deleted
    /// or replaced while the proxy ran.
    fn note_gone(&self, store: &Store) {
        let Some(reason) = store.file_gone() else {
            return;
        };
        let mut failures = lock(&self.failures);
        failures.count += 1;
        if failures.gone {
            return;
        }
        failures.gone = true;
        tracing::warn!("ctxopt-proxy: store: {reason}");
        failures.first.get_or_insert(reason);
    }

    /// Extends a server's `tools/list` result (the `result` object's JSON text) with the
    /// injected tools, on the last page only, renaming ours where the server's names
    /// collide; the new names then route [`answer`](Bridge::answer). Call it for every
    /// page of a listing in order; `None` means relay the result unchanged.
    pub(crate) fn extend_tools_list(&self, raw_result: &str) -> Option<Extended> {
        let value: Value = serde_json::from_str(raw_result).ok()?;
        let mut schemas = lock(&self.schemas);
        for tool in value
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                schemas.insert(name.to_string(), tool.get("outputSchema").cloned());
            }
        }
        drop(schemas);
        let mut earlier = lock(&self.earlier_pages);
        let extended =
            tools_list::extend_tools_list(raw_result, &self.offered, &earlier, &self.filter);
        if tools_list::has_next_page(&value) {
            earlier.extend(tools_list::listed_names(&value));
        } else {
            earlier.clear();
            if let Some(names) = extended.as_ref().and_then(|e| e.names.clone()) {
                *lock(&self.names) = names;
            }
        }
        extended
    }

    /// The `tools/list` result of the injected tools alone (for a server that has no tools,
    /// and for `ctxopt serve`).
    pub(crate) fn own_tools_list(&self) -> Value {
        serde_json::json!({"tools": self.names().definitions()})
    }

    /// The injected tool a client-side name refers to.
    pub(crate) fn lookup(&self, name: &str) -> Option<InjectedTool> {
        lock(&self.names).lookup(name)
    }

    /// Runs an injected tool: a `CallToolResult`, with `isError: true` when it failed.
    pub fn call(&self, tool: InjectedTool, arguments: &Value) -> Value {
        // A locked store is waited for up to its busy timeout, but never while holding it
        // (the relay may need it meanwhile): each try fails at once, the next comes later.
        let started = std::time::Instant::now();
        let result = loop {
            let result = self.using_store(|store| match (store, tool, self.compaction) {
                (Ok(store), InjectedTool::GetResult, Some(limits)) => {
                    store.without_waiting(|store| {
                        Ok(handlers::handle_get_result(
                            arguments,
                            store,
                            &self.scope,
                            limits,
                            &self.pages,
                        ))
                    })
                }
                (Ok(store), _, _) => store.without_waiting(|store| {
                    Ok(handlers::handle_call(tool, arguments, store, &self.scope))
                }),
                (Err(reason), _, _) => Ok(Err(ToolError::NoStore(reason.to_string()))),
            });
            match result {
                Ok(Err(ToolError::Store(StoreError::Locked { .. })))
                    if started.elapsed() < BUSY_TIMEOUT =>
                {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Ok(answer) => break answer,
                Err(err) => break Err(ToolError::Store(err)),
            }
        };
        result.unwrap_or_else(|e| e.to_call_result())
    }

    /// Answers a request frame if it calls an injected tool: the response frame (without
    /// line ending) to send to the client instead of relaying the request. `None` for any
    /// other frame.
    pub fn answer(&self, request_raw: &str) -> Option<String> {
        let request: Value = serde_json::from_str(request_raw).ok()?;
        if request.get("method")?.as_str()? != "tools/call" {
            return None;
        }
        let id = request.get("id")?;
        let params = request.get("params")?;
        let tool = self.lookup(params.get("name")?.as_str()?)?;
        let mut result = self.call(tool, params.get("arguments").unwrap_or(&Value::Null));
        if protocol::is_modern(&request) {
            protocol::stamp_modern(&mut result);
        }
        Some(protocol::result_frame(id, result))
    }

    /// A line for the log trailer when the store failed: how many writes failed and the
    /// first reason.
    pub(crate) fn failure_summary(&self) -> Option<String> {
        let f = lock(&self.failures);
        let first = f.first.as_ref()?;
        Some(format!(
            "store: {} write(s) failed; first: {first}",
            f.count
        ))
    }
}

#[cfg(test)]
mod tests;
