//! The proxy's memory of each server's tool catalog across sessions: a [`FrameSink`] that,
//! on the tap's side (never on the relay's path), assembles every `tools/list` answer the
//! server sends (pages following `nextCursor`), takes its digest ([`super::catalog`]) and
//! compares it with the catalog the same server presented last time. A change is said on
//! stderr and in the log trailer's `errors`, tool by tool.
//!
//! "The same server" is the proxy's server name (`--name`, or derived from the command) and
//! the `serverInfo` name its handshake answer gives. The catalogs are kept in a `catalogs/`
//! directory beside the session store (mode 0700; one file per server, 0600): a proxy
//! without a store file (`--store :memory:`) remembers nothing across sessions.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::catalog;
use crate::framelog::{Direction, Frame, FrameKind, Header};
use crate::protocol;
use crate::relay::sink::LogPlace;
use crate::relay::FrameSink;
use crate::tokenizer::Tokenizer;

/// What is remembered of a server's last catalog.
#[derive(Debug, Serialize, Deserialize)]
struct Remembered {
    digest: String,
    tools: Vec<Value>,
}

/// Watches one session's catalogs (see the module docs).
#[derive(Debug)]
pub struct CatalogWatch {
    dir: PathBuf,
    tokenizer: Tokenizer,
    server_name: String,
    identity: Option<String>,
    pages: Vec<Value>,
    /// Lines for the trailer: each change seen, each failure to remember.
    lines: Vec<String>,
}

impl CatalogWatch {
    /// A watch keeping its catalogs in `catalogs/` beside `store_file`.
    pub fn beside(store_file: &Path, tokenizer: Tokenizer) -> CatalogWatch {
        CatalogWatch {
            dir: store_file
                .parent()
                .unwrap_or(Path::new(""))
                .join("catalogs"),
            tokenizer,
            server_name: String::new(),
            identity: None,
            pages: Vec::new(),
            lines: Vec::new(),
        }
    }

    /// The file of this server's catalog.
    fn file(&self) -> PathBuf {
        let clean = |s: &str| -> String {
            s.chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || "._-".contains(c) {
                        c
                    } else {
                        '_'
                    }
                })
                .collect()
        };
        let identity = self
            .identity
            .as_deref()
            .map_or(String::new(), |i| format!("--{}", clean(i)));
        self.dir
            .join(format!("{}{identity}.json", clean(&self.server_name)))
    }

    /// A complete catalog: compare with the last one, then remember it.
    fn complete(&mut self, tools: Vec<Value>) {
        let path = self.file();
        let digest = catalog::digest(&tools);
        let previous: Option<Remembered> = fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if let Some(previous) = previous.filter(|p| p.digest != digest) {
            let diff = catalog::diff(&previous.tools, &tools, self.tokenizer);
            let mut lines = diff.lines();
            if let Some(first) = lines.first_mut() {
                *first = format!("{} since its previous session: {first}", self.server_name);
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
        if let Err(e) = remember(&path, &Remembered { digest, tools }) {
            self.lines.push(format!(
                "catalog: could not remember the tool catalog in {}: {e}",
                path.display()
            ));
        }
    }
}

/// Writes `what` to `path` whole (a temporary file renamed over it), 0600, its directory 0700.
fn remember(path: &Path, what: &Remembered) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    file.write_all(&serde_json::to_vec(what).map_err(std::io::Error::other)?)?;
    file.sync_all()?;
    fs::rename(&tmp, path)
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
