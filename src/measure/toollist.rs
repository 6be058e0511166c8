//! What a server listed: its tools (across `tools/list` pages), prompts and resources,
//! with the identity and protocol revision when they are known.

use std::path::Path;

use serde_json::Value;

use super::MeasureError;
use crate::framelog::exchanges::{Entry, Exchanges};
use crate::framelog::{Direction, FrameKind};
use crate::protocol;

/// The lists one server answered, in wire order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    /// The server's identity (`serverInfo` of `initialize` or `server/discover`), if known.
    pub(crate) server_info: Option<Value>,
    /// The protocol revision in effect, if known.
    pub protocol: Option<String>,
    /// How the listing was obtained (`capture`, `frame-log`, `initialize`, `server/discover`).
    pub source: String,
    /// The tool objects of every `tools/list` page, exactly as sent.
    pub tools: Vec<Value>,
    /// The prompt objects, when the server was asked.
    pub prompts: Option<Vec<Value>>,
    /// The resource objects, when the server was asked.
    pub resources: Option<Vec<Value>>,
    /// The tools taken out of the client's view, and by what; empty when none were.
    pub hidden: Hidden,
}

/// Tools of a listing the client did not see (`ctxopt-proxy --hide-tools`/`--only-tools`),
/// or would not see with those options.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hidden {
    /// The names, in wire order.
    pub names: Vec<String>,
    /// Where they come from: `frame-log` (the proxy hid them), `--hide-tools` or
    /// `--only-tools` (given to `audit`).
    pub source: String,
}

/// The `name` of every tool in a `tools/list` answer (a JSON-RPC response or its result).
fn tool_names(page: &Value) -> impl Iterator<Item = &str> {
    page.get("result")
        .unwrap_or(page)
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
}

/// Appends the tools of one `tools/list` response (a JSON-RPC response, or its bare
/// `result`) to `tools`. Returns the page's `nextCursor`, if any.
pub(crate) fn push_tools_page(
    page: &Value,
    tools: &mut Vec<Value>,
) -> Result<Option<String>, MeasureError> {
    let result = page.get("result").unwrap_or(page);
    let list = result
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| MeasureError::NotAToolList("no `result.tools` array".into()))?;
    tools.extend(list.iter().cloned());
    Ok(result
        .get("nextCursor")
        .and_then(Value::as_str)
        .map(str::to_owned))
}

/// Reads a captured `tools/list` response: one JSON document per line (pages in order),
/// each a JSON-RPC response or a bare result.
pub fn from_capture(text: &str) -> Result<Listing, MeasureError> {
    let mut listing = Listing {
        source: "capture".into(),
        ..Listing::default()
    };
    let mut pages = 0;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let page: Value = serde_json::from_str(line)
            .map_err(|e| MeasureError::NotAToolList(format!("line {}: {e}", i + 1)))?;
        push_tools_page(&page, &mut listing.tools)?;
        pages += 1;
    }
    if pages == 0 {
        return Err(MeasureError::NotAToolList("the capture is empty".into()));
    }
    Ok(listing)
}

/// Reads the last complete `tools/list` answer in a frame log (the server's own, `s2c`, as
/// the server sent it: without the tools the proxy injected), with the prompts and
/// resources lists and the identity from the same log. A listing
/// restarts whenever a `tools/list` request without a cursor is answered.
pub fn from_frame_log(path: &Path) -> Result<Listing, MeasureError> {
    let mut listing = Listing {
        source: "frame-log".into(),
        ..Listing::default()
    };
    let mut current: Option<Vec<Value>> = None;
    let mut hidden: Vec<String> = Vec::new();
    let mut prompts = ListAssembly::default();
    let mut resources = ListAssembly::default();
    let mut header_name = None;
    for entry in Exchanges::open(path)? {
        let (frame, messages) = match entry? {
            Entry::Frame { frame, messages } => (frame, messages),
            Entry::Header(h) => {
                header_name = Some(h.server_name);
                continue;
            }
            _ => continue,
        };
        let method = frame.method.as_deref().unwrap_or_default();
        if (frame.dir, frame.kind) == (Direction::S2c, FrameKind::Response) {
            // The server's own list: the tools a proxy injected are not its cost.
            let Some(message) = frame.server_json() else {
                continue;
            };
            // A page asked for with a cursor continues the list before it.
            let continued = messages
                .first()
                .and_then(|e| e.request.as_ref())
                .and_then(|r| r.frame.json())
                .is_some_and(|v| v.pointer("/params/cursor").is_some());
            match method {
                "tools/list" => {
                    let mut page = if continued {
                        current.take().unwrap_or_default()
                    } else {
                        hidden.clear();
                        Vec::new()
                    };
                    push_tools_page(&message, &mut page)?;
                    current = Some(page);
                    listing.tools = current.clone().unwrap_or_default();
                    // Where the proxy rewrote the answer, a server tool missing from what
                    // the client got was hidden (the injected tools are only in the latter).
                    if let (Some(_), Some(client)) = (&frame.server_raw, frame.json()) {
                        let seen: Vec<&str> = tool_names(&client).collect();
                        hidden.extend(
                            tool_names(&message)
                                .filter(|n| !seen.contains(n))
                                .map(str::to_owned),
                        );
                    }
                }
                "prompts/list" => prompts.push(&message, "prompts", continued),
                "resources/list" => resources.push(&message, "resources", continued),
                "initialize" | "server/discover" => {
                    let result = message.get("result");
                    listing.server_info = result.and_then(protocol::server_info).cloned();
                    listing.protocol = result
                        .and_then(|r| r.get("protocolVersion"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                        .or(frame.protocol.clone());
                }
                _ => {}
            }
        }
        if listing.protocol.is_none() {
            listing.protocol = frame.protocol.clone();
        }
    }
    if current.is_none() {
        return Err(MeasureError::NoListing(format!(
            "{}: no tools/list response from the server in this log",
            path.display()
        )));
    }
    if listing.server_info.is_none() {
        listing.server_info = header_name.map(|name| serde_json::json!({ "name": name }));
    }
    listing.prompts = prompts.done;
    listing.resources = resources.done;
    if !hidden.is_empty() {
        listing.hidden = Hidden {
            names: hidden,
            source: "frame-log".into(),
        };
    }
    Ok(listing)
}

/// Assembles the pages of a prompts or resources list.
#[derive(Default)]
struct ListAssembly {
    done: Option<Vec<Value>>,
}

impl ListAssembly {
    fn push(&mut self, message: &Value, member: &str, continued: bool) {
        let result = message.get("result").unwrap_or(message);
        let mut items = if continued {
            self.done.take().unwrap_or_default()
        } else {
            Vec::new()
        };
        if let Some(list) = result.get(member).and_then(Value::as_array) {
            items.extend(list.iter().cloned());
        }
        self.done = Some(items);
    }
}
