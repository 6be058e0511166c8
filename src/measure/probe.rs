//! Starts an MCP server over stdio and asks it what it offers.
//!
//! It speaks the stateless revision ([`MODERN_VERSION`]) first (`server/discover`, every request
//! carrying `params._meta`); when the server answers that with a JSON-RPC error (an
//! initialize-era server says [`METHOD_NOT_FOUND`]) it falls back to `initialize` →
//! `notifications/initialized`. Then it pages through `tools/list` (following
//! `nextCursor`), and `prompts/list` / `resources/list` when the capabilities offer them.
//! Requests the server sends meanwhile (`roots/list`, …) are answered with [`METHOD_NOT_FOUND`].

use std::time::Duration;

use serde_json::{json, Value};

use super::live_server::LiveServer;
use super::toollist::{push_tools_page, Listing};
use super::MeasureError;
use crate::protocol::{self, INITIALIZE_VERSION, METHOD_NOT_FOUND, MODERN_VERSION};

/// The name the probe gives itself.
const CLIENT_NAME: &str = "ctxopt-audit";
/// Pages followed per list before giving up (a server that loops its cursor).
const MAX_PAGES: usize = 1000;

/// Starts `argv` and returns everything it lists. `timeout` bounds each answer.
pub fn probe(argv: &[String], timeout: Duration) -> Result<Listing, MeasureError> {
    let server = LiveServer::start(argv)?;
    let mut session = Session {
        server,
        timeout,
        next_id: 0,
        stateless: false,
    };
    let result = session.list_everything();
    session.server.stop();
    result
}

struct Session {
    server: LiveServer,
    timeout: Duration,
    next_id: u64,
    stateless: bool,
}

impl Session {
    fn send(&mut self, message: &Value) -> Result<(), MeasureError> {
        self.server.send(message.to_string().as_bytes())
    }

    /// Sends a request and returns its response (result or error), answering the
    /// server's own requests meanwhile.
    fn request(&mut self, method: &str, mut params: Value) -> Result<Value, MeasureError> {
        if self.stateless {
            params["_meta"] = protocol::client_meta(CLIENT_NAME, env!("CARGO_PKG_VERSION"));
        }
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        loop {
            let line = self.server.recv(self.timeout).map_err(|_| {
                MeasureError::Server(format!(
                    "the server closed stdout before answering {method}"
                ))
            })?;
            let Some(line) = line else {
                return Err(MeasureError::Server(format!(
                    "no answer to {method} within {:?}",
                    self.timeout
                )));
            };
            let Ok(message) = serde_json::from_slice::<Value>(&line) else {
                continue;
            };
            if message.get("method").is_some() {
                if let Some(their_id) = message.get("id") {
                    let reply = json!({"jsonrpc": "2.0", "id": their_id,
                        "error": {"code": METHOD_NOT_FOUND, "message": "not supported by ctxopt audit"}});
                    self.send(&reply)?;
                }
                continue;
            }
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(message);
            }
        }
    }

    fn handshake(&mut self, listing: &mut Listing) -> Result<Value, MeasureError> {
        self.stateless = true;
        let discovered = self.request("server/discover", json!({}))?;
        if let Some(result) = discovered.get("result") {
            listing.source = "server/discover".into();
            listing.protocol = Some(MODERN_VERSION.into());
            listing.server_info = protocol::server_info(result).cloned();
            return Ok(result.get("capabilities").cloned().unwrap_or(Value::Null));
        }
        self.stateless = false;
        let init = self.request(
            "initialize",
            json!({
                "protocolVersion": INITIALIZE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": CLIENT_NAME, "version": env!("CARGO_PKG_VERSION")}
            }),
        )?;
        let result = init.get("result").ok_or_else(|| {
            MeasureError::Server(format!(
                "initialize failed: {}",
                init.get("error").unwrap_or(&Value::Null)
            ))
        })?;
        listing.source = "initialize".into();
        listing.protocol = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .map(str::to_owned);
        listing.server_info = result.get("serverInfo").cloned();
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok(result.get("capabilities").cloned().unwrap_or(Value::Null))
    }

    /// Pages through a list method; `on_page` takes each result and returns its cursor.
    fn paginate(
        &mut self,
        method: &str,
        mut on_page: impl FnMut(&Value) -> Result<Option<String>, MeasureError>,
    ) -> Result<(), MeasureError> {
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let response = self.request(method, params)?;
            if let Some(error) = response.get("error") {
                return Err(MeasureError::Server(format!("{method} failed: {error}")));
            }
            let next = on_page(&response)?;
            if next.is_none() || next == cursor {
                return Ok(());
            }
            cursor = next;
        }
        Err(MeasureError::Server(format!(
            "{method} still paging after {MAX_PAGES} pages"
        )))
    }

    /// Every item of a paged list method (`prompts/list` → `prompts`, …).
    fn list_items(&mut self, method: &str, member: &str) -> Result<Vec<Value>, MeasureError> {
        let mut items = Vec::new();
        self.paginate(method, |page| {
            let result = page.get("result").unwrap_or(page);
            if let Some(list) = result.get(member).and_then(Value::as_array) {
                items.extend(list.iter().cloned());
            }
            Ok(result
                .get("nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned))
        })?;
        Ok(items)
    }

    fn list_everything(&mut self) -> Result<Listing, MeasureError> {
        let mut listing = Listing::default();
        let capabilities = self.handshake(&mut listing)?;
        let mut tools = Vec::new();
        self.paginate("tools/list", |page| push_tools_page(page, &mut tools))?;
        listing.tools = tools;
        if capabilities.get("prompts").is_some() {
            listing.prompts = Some(self.list_items("prompts/list", "prompts")?);
        }
        if capabilities.get("resources").is_some() {
            listing.resources = Some(self.list_items("resources/list", "resources")?);
        }
        Ok(listing)
    }
}
