//! The bridge between the wire and the optimizer: tool results flow into the store
//! ([`ingest`]), and the injected tools (`build_context` and friends) answer from it
//! ([`handlers`]). [`Bridge`] holds both behind an API that needs no transport: the proxy's
//! tap hands it frame pairs, the relay asks it to extend `tools/list` results and to answer
//! calls to injected tools, and `ctxopt serve` ([`server`]) uses it as a plain MCP server.
//! How the proxy wires it in (`src/relay/intercept.rs`, the tap) is in `docs/injected-tools.md`.

pub mod content;
pub mod file_reads;
pub mod handlers;
pub mod ingest;
pub mod inject;
pub mod replay;
pub mod server;
pub mod stored_text;
pub mod tools;

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard, PoisonError};

use serde_json::Value;

use crate::protocol;
use crate::store::{InsertOutcome, Scope, Store, StoreError};
use handlers::ToolError;
use ingest::{FramePair, IngestError};
use inject::Extended;
use tools::{InjectedTool, Selection, ToolNames};

/// Why a frame pair was not stored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BridgeError {
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

/// Store failures seen so far, for the log trailer.
#[derive(Debug, Default)]
struct Failures {
    count: u64,
    first: Option<String>,
}

/// The store, the scope and the injected tools' names, shared by the tap (ingestion) and
/// the relay (answers). Every method takes `&self`; the store sits behind a mutex.
#[derive(Debug)]
pub struct Bridge {
    store: Mutex<Result<Store, String>>,
    scope: Scope,
    selection: Selection,
    names: Mutex<ToolNames>,
    earlier_pages: Mutex<BTreeSet<String>>,
    failures: Mutex<Failures>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding a lock leaves plain data behind; carry on with it.
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

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

    fn with_store(store: Result<Store, String>, scope: Scope) -> Bridge {
        Bridge {
            store: Mutex::new(store),
            scope,
            selection: Selection::All,
            names: Mutex::new(ToolNames::plain(Selection::All)),
            earlier_pages: Mutex::new(BTreeSet::new()),
            failures: Mutex::new(Failures::default()),
        }
    }

    /// Offers only the `selection` of tools (`--inject`).
    pub fn with_selection(mut self, selection: Selection) -> Bridge {
        self.selection = selection;
        self.names = Mutex::new(ToolNames::plain(selection));
        self
    }

    /// Which injected tools this bridge offers.
    pub fn selection(&self) -> Selection {
        self.selection
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
    pub fn on_frame_pair(&self, pair: &FramePair<'_>) -> Result<InsertOutcome, BridgeError> {
        let names = self.names();
        let records = ingest::ingest(pair, &|name| names.is_injected(name))?;
        let mut store = lock(&self.store);
        let store = store.as_mut().map_err(|reason| {
            lock(&self.failures).count += 1;
            BridgeError::NoStore(reason.clone())
        })?;
        store.insert(&self.scope, &records).map_err(|error| {
            let mut failures = lock(&self.failures);
            failures.count += 1;
            let first = failures.first.is_none();
            if first {
                failures.first = Some(error.to_string());
            }
            BridgeError::Store { error, first }
        })
    }

    /// Extends a server's `tools/list` result (the `result` object's JSON text) with the
    /// injected tools, on the last page only, renaming ours where the server's names
    /// collide; the new names then route [`answer`](Bridge::answer). Call it for every
    /// page of a listing in order; `None` means relay the result unchanged.
    pub fn extend_tools_list(&self, raw_result: &str) -> Option<Extended> {
        let value: Value = serde_json::from_str(raw_result).ok()?;
        let mut earlier = lock(&self.earlier_pages);
        if inject::has_next_page(&value) {
            earlier.extend(inject::listed_names(&value));
            return None;
        }
        let extended = inject::extend_tools_list(raw_result, self.selection, &earlier);
        earlier.clear();
        if let Some(ext) = &extended {
            *lock(&self.names) = ext.names.clone();
        }
        extended
    }

    /// The `tools/list` result of the injected tools alone (for a server that has no tools,
    /// and for `ctxopt serve`).
    pub fn own_tools_list(&self) -> Value {
        serde_json::json!({"tools": self.names().definitions()})
    }

    /// The injected tool a client-side name refers to.
    pub fn lookup(&self, name: &str) -> Option<InjectedTool> {
        lock(&self.names).lookup(name)
    }

    /// Runs an injected tool: a `CallToolResult`, with `isError: true` when it failed.
    pub fn call(&self, tool: InjectedTool, arguments: &Value) -> Value {
        let mut store = lock(&self.store);
        let result = match store.as_mut() {
            Ok(store) => handlers::handle_call(tool, arguments, store, &self.scope),
            Err(reason) => Err(ToolError::NoStore(reason.clone())),
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
    pub fn failure_summary(&self) -> Option<String> {
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
