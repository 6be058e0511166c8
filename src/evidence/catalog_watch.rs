//! The proxy's memory of each server's tool catalog across sessions: a [`FrameSink`] that,
//! on the tap's side (never on the relay's path), assembles every `tools/list` answer the
//! server sends (pages following `nextCursor`), takes its digest ([`super::catalog`]) and
//! compares it with the catalog the same server presented last time. A change is said on
//! stderr and in the log trailer's `errors`, tool by tool.
//!
//! "The same server" is the proxy's server name (`--name`, or derived from the command) and
//! the `serverInfo` name its handshake answer gives. The catalogs are kept in a `catalogs/`
//! directory beside the session store ([`super::trusted`]): a proxy without a store file
//! (`--store :memory:`) remembers nothing across sessions. Under `--hold-changed-tools` a
//! changed catalog is kept as pending instead of replacing the trusted one
//! ([`super::hold_back`] holds it back on the wire).

use std::path::Path;

use serde_json::Value;

use super::catalog;
use super::trusted::{self, Catalog, CatalogDir, Remembered};
use crate::framelog::{Direction, Frame, FrameKind, Header};
use crate::protocol;
use crate::relay::sink::LogPlace;
use crate::relay::FrameSink;
use crate::tokenizer::Tokenizer;

/// Watches one session's catalogs (see the module docs).
#[derive(Debug)]
pub struct CatalogWatch {
    catalogs: CatalogDir,
    tokenizer: Tokenizer,
    /// Whether a changed catalog is held back (kept pending) rather than trusted.
    hold: bool,
    server_name: String,
    identity: Option<String>,
    pages: Vec<Value>,
    /// Lines for the trailer: each change seen, each failure to remember.
    lines: Vec<String>,
}

impl CatalogWatch {
    /// A watch keeping its catalogs in `catalogs/` beside `store_file`; with `hold`, a
    /// changed catalog is kept as pending (`ctxopt trust` accepts it) instead of replacing
    /// the trusted one.
    pub fn beside(store_file: &Path, tokenizer: Tokenizer, hold: bool) -> CatalogWatch {
        CatalogWatch {
            catalogs: CatalogDir::beside(store_file),
            tokenizer,
            hold,
            server_name: String::new(),
            identity: None,
            pages: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// A complete catalog: compare with the trusted one, then remember it (trusted, or
    /// pending when held back).
    fn complete(&mut self, tools: Vec<Value>) {
        let path = self
            .catalogs
            .file(&self.server_name, self.identity.as_deref());
        let now = Catalog::of(tools);
        let update = match CatalogDir::read(&path) {
            None => Some(Remembered {
                trusted: now,
                pending: None,
            }),
            // Still (or again) the trusted catalog: a change waiting no longer applies.
            Some(previous) if previous.trusted.digest == now.digest => {
                previous.pending.is_some().then_some(Remembered {
                    trusted: previous.trusted,
                    pending: None,
                })
            }
            Some(previous) => {
                self.report(&previous.trusted, &now);
                if !self.hold {
                    Some(Remembered {
                        trusted: now,
                        pending: None,
                    })
                } else if previous.pending.as_ref().map(|p| &p.digest) == Some(&now.digest) {
                    None
                } else {
                    Some(Remembered {
                        trusted: previous.trusted,
                        pending: Some(now),
                    })
                }
            }
        };
        if let Some(Err(e)) = update.map(|u| trusted::write(&path, &u)) {
            self.lines.push(format!(
                "catalog: could not remember the tool catalog in {}: {e}",
                path.display()
            ));
        }
    }

    /// Says what changed from `then` to `now`, on stderr and in the trailer's lines.
    fn report(&mut self, then: &Catalog, now: &Catalog) {
        let diff = catalog::diff(&then.tools, &now.tools, self.tokenizer);
        let mut lines = diff.lines();
        if let Some(first) = lines.first_mut() {
            *first = if self.hold {
                format!(
                    "{} since its trusted catalog: {first}; held back until `ctxopt trust {}`",
                    self.server_name, self.server_name
                )
            } else {
                format!("{} since its previous session: {first}", self.server_name)
            };
        }
        for line in &lines {
            tracing::warn!("ctxopt-proxy: {line}");
        }
        self.lines.push(format!(
            "catalog: {}",
            lines
                .join(" | ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
}

impl FrameSink for CatalogWatch {
    fn session_started(&mut self, header: &Header) {
        self.server_name = header.server_name.clone();
    }

    fn frame(&mut self, frame: &Frame, _logged: Option<LogPlace<'_>>) {
        if (frame.dir, frame.kind) != (Direction::S2c, FrameKind::Response) {
            return;
        }
        match frame.method.as_deref() {
            Some("initialize" | "server/discover") => {
                self.identity = frame.server_json().and_then(|v| {
                    v.get("result")
                        .and_then(protocol::server_info)
                        .and_then(|i| i.get("name"))
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                });
            }
            Some("tools/list") => {
                let Some(answer) = frame.server_json() else {
                    return;
                };
                let result = answer.get("result");
                if let Some(tools) = result
                    .and_then(|r| r.get("tools"))
                    .and_then(Value::as_array)
                {
                    self.pages.extend(tools.iter().cloned());
                }
                if result
                    .and_then(|r| r.get("nextCursor"))
                    .and_then(Value::as_str)
                    .is_none()
                {
                    let tools = std::mem::take(&mut self.pages);
                    self.complete(tools);
                }
            }
            _ => {}
        }
    }

    fn trailer_errors(&self) -> Vec<String> {
        self.lines.clone()
    }
}
