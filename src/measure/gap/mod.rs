//! `gap`: what a client says it called, beside what crossed the wire.
//!
//! For every tool the server advertised, the client's calls are kept in one column per
//! spelling (`mcp__<server>__<tool>` of Claude Code, `mcp_<server>_<tool>` of Gemini CLI,
//! `<server>__<tool>` of older Gemini CLI, and the bare name), never merged silently. The
//! qualified columns name this server unambiguously and are *attributed*; a bare name is
//! not (it is also the name of client built-ins such as Gemini CLI's `list_directory`), so
//! it stays in its own column and in `gap_with_bare`, an upper bound. Gap per tool =
//! attributed − wire calls when positive; the total gap sums those positive parts. Names
//! that match no advertised tool are strays, listed apart.

pub mod client;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;

use self::client::ClientCalls;
use super::report::text::{Style, Table};
use super::MeasureError;
use crate::framelog::exchanges::{Entry, Exchanges};
use crate::framelog::{Direction, FrameKind};

/// What the wire shows for one server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WireCalls {
    /// The server's short name from the log header.
    pub server_name: String,
    /// Advertised tool names, in the order first listed.
    pub(crate) advertised: Vec<String>,
    /// `tools/call` requests relayed to the server, per tool.
    pub calls: BTreeMap<String, u64>,
    /// The tools of `advertised` that ctxopt-proxy offered itself (`get_result`,
    /// `build_context`, …): in the listing the client got and not in the server's answer,
    /// or in a listing the proxy answered alone.
    pub injected: Vec<String>,
    /// `tools/call` requests the proxy answered itself (`c2p`), per tool.
    pub proxy_calls: BTreeMap<String, u64>,
}

/// The tool names of a `tools/list` answer.
fn listed_names(message: Option<&Value>) -> Vec<&str> {
    message
        .and_then(|m| m.pointer("/result/tools"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|t| t.get("name").and_then(Value::as_str))
        .collect()
}

/// The tool a logged `tools/call` request names.
fn called_tool(frame: &crate::framelog::Frame) -> String {
    frame
        .tool
        .clone()
        .or_else(|| {
            frame.json().and_then(|m| {
                m.pointer("/params/name")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
        })
        .unwrap_or_default()
}

fn push_new(list: &mut Vec<String>, name: &str) {
    if !list.iter().any(|a| a == name) {
        list.push(name.to_owned());
    }
}

/// Reads the advertised tools and the relayed calls of a frame log.
pub fn read_wire(path: &Path) -> Result<WireCalls, MeasureError> {
    let mut wire = WireCalls::default();
    let mut listed = false;
    for entry in Exchanges::open(path)? {
        let frame = match entry? {
            Entry::Header(h) => {
                wire.server_name = h.server_name;
                continue;
            }
            Entry::Frame { frame, .. } => frame,
            _ => continue,
        };
        match (frame.dir, frame.kind, frame.method.as_deref()) {
            (Direction::S2c | Direction::P2c, FrameKind::Response, Some("tools/list")) => {
                listed = true;
                // What the client got; where the proxy rewrote the server's answer (or
                // answered alone), the names the server did not list are the proxy's own.
                let client = frame.json();
                let server = match frame.dir {
                    Direction::S2c => frame.server_json(),
                    _ => None,
                };
                let server_names = listed_names(server.as_ref());
                for name in listed_names(client.as_ref()) {
                    push_new(&mut wire.advertised, name);
                    if !server_names.contains(&name) {
                        push_new(&mut wire.injected, name);
                    }
                }
            }
            (Direction::C2s, FrameKind::Request, Some("tools/call")) => {
                *wire.calls.entry(called_tool(&frame)).or_default() += 1;
            }
            (Direction::C2p, FrameKind::Request, Some("tools/call")) => {
                *wire.proxy_calls.entry(called_tool(&frame)).or_default() += 1;
            }
            _ => {}
        }
    }
    if !listed {
        return Err(MeasureError::NoListing(format!(
            "{}: no tools/list answer in this log, so nothing was advertised to compare with",
            path.display()
        )));
    }
    Ok(wire)
}

/// The comparison. Its JSON form is a public interface (see `docs/gap.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GapReport {
    /// The server name used in qualified spellings.
    pub server: String,
    /// The client output format read.
    pub client_format: String,
    /// The client's version, when its output says.
    pub(crate) client_version: Option<String>,
    /// Tools the server advertised (the proxy's own tools aside).
    pub advertised_tools: usize,
    /// `tools/call` requests relayed to the server (all tools).
    pub wire_calls: u64,
    /// `tools/call` requests of the proxy's own tools, answered by the proxy.
    pub proxy_calls: u64,
    /// Calls the client reports (all names).
    pub(crate) client_calls: u64,
    /// Client calls attributed to advertised tools by a qualified spelling.
    pub attributed_calls: u64,
    /// Σ over advertised tools of max(0, attributed − wire).
    pub gap: u64,
    /// The same counting bare-name calls as attributed: an upper bound.
    pub gap_with_bare: u64,
    /// The wire shows no `tools/call` at all.
    pub answered_without_tools: bool,
    /// No gap, no strays, no bare-name collisions, and some wire calls.
    pub clean: bool,
    /// One row per advertised tool, in advertised order.
    pub tools: Vec<ToolGap>,
    /// Client calls to names the server never advertised.
    pub strays: Vec<Stray>,
    /// Findings to read, one sentence each.
    pub warnings: Vec<String>,
}

/// One advertised tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolGap {
    /// The advertised name.
    pub tool: String,
    /// One of ctxopt-proxy's own tools (`get_result`, `build_context`, …), answered by the
    /// proxy: its `wire` counts the calls the proxy answered (`c2p`), which never reach the
    /// server.
    pub injected: bool,
    /// `tools/call` requests on the wire (to the server; to the proxy for an injected tool).
    pub wire: u64,
    /// Client calls spelled `mcp__<server>__<tool>` (Claude Code).
    pub(crate) claude_qualified: u64,
    /// Client calls spelled `mcp_<server>_<tool>` (Gemini CLI, current).
    pub gemini_qualified: u64,
    /// Client calls spelled `<server>__<tool>` (Gemini CLI, older versions).
    pub gemini_legacy_qualified: u64,
    /// Client calls spelled with the bare name (not attributed: ambiguous).
    pub bare: u64,
    /// The qualified columns added up.
    pub attributed: u64,
    /// max(0, attributed − wire).
    pub gap: u64,
    /// max(0, attributed + bare − wire).
    pub gap_with_bare: u64,
}

/// Client calls to a name the server never advertised.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stray {
    /// The name as the client spelled it.
    pub name: String,
    /// Calls.
    pub calls: u64,
    /// `qualified_unknown_tool` (this server's prefix, a tool it never listed),
    /// `other_server` (another server's qualified prefix) or `never_advertised`.
    pub reason: String,
    /// An advertised tool whose name this one ends with (a spelling we do not know?).
    pub resembles: Option<String>,
}

enum Spelling {
    Claude,
    Gemini,
    GeminiLegacy,
    Bare,
}

/// Compares `client` with `wire`; `server` is the name the client knows the server by.
pub fn compare(wire: &WireCalls, client: &ClientCalls, server: &str) -> GapReport {
    let mut rows: Vec<ToolGap> = wire
        .advertised
        .iter()
        .map(|tool| ToolGap {
            tool: tool.clone(),
            injected: wire.injected.contains(tool),
            wire: if wire.injected.contains(tool) {
                wire.proxy_calls.get(tool)
            } else {
                wire.calls.get(tool)
            }
            .copied()
            .unwrap_or(0),
            claude_qualified: 0,
            gemini_qualified: 0,
            gemini_legacy_qualified: 0,
            bare: 0,
            attributed: 0,
            gap: 0,
            gap_with_bare: 0,
        })
        .collect();
    let prefixes = [
        (format!("mcp__{server}__"), Spelling::Claude),
        (format!("mcp_{server}_"), Spelling::Gemini),
        (format!("{server}__"), Spelling::GeminiLegacy),
    ];
    let mut strays = Vec::new();
    for (name, &calls) in &client.by_name {
        let matched = prefixes
            .iter()
            .find_map(|(prefix, spelling)| Some((name.strip_prefix(prefix.as_str())?, spelling)));
        let (tool, spelling) = matched.unwrap_or((name.as_str(), &Spelling::Bare));
        if let Some(row) = rows.iter_mut().find(|r| r.tool == tool) {
            match spelling {
                Spelling::Claude => row.claude_qualified += calls,
                Spelling::Gemini => row.gemini_qualified += calls,
                Spelling::GeminiLegacy => row.gemini_legacy_qualified += calls,
                Spelling::Bare => row.bare += calls,
            }
            continue;
        }
        let reason = if matched.is_some() {
            "qualified_unknown_tool"
        } else if name.starts_with("mcp_") {
            "other_server"
        } else {
            "never_advertised"
        };
        let resembles = wire
            .advertised
            .iter()
            .filter(|t| name.len() > t.len() && name.ends_with(t.as_str()))
            .max_by_key(|t| t.len())
            .cloned();
        strays.push(Stray {
            name: name.clone(),
            calls,
            reason: reason.to_owned(),
            resembles,
        });
    }
    for row in &mut rows {
        row.attributed = row.claude_qualified + row.gemini_qualified + row.gemini_legacy_qualified;
        row.gap = row.attributed.saturating_sub(row.wire);
        row.gap_with_bare = (row.attributed + row.bare).saturating_sub(row.wire);
    }

    let wire_calls: u64 = wire.calls.values().sum();
    let gap: u64 = rows.iter().map(|r| r.gap).sum();
    let bare_collisions: Vec<String> = rows
        .iter()
        .filter(|r| r.bare > 0)
        .map(|r| format!("{} ({}×)", r.tool, r.bare))
        .collect();
    let mut warnings = Vec::new();
    if wire_calls == 0 {
        warnings.push(
            "answered_without_tools: the wire shows no tools/call at all; whatever the client \
             answered, it did not come from this server's tools"
                .to_owned(),
        );
    }
    if !bare_collisions.is_empty() {
        warnings.push(format!(
            "bare names that collide with advertised tools, shown but not attributed: {}",
            bare_collisions.join(", ")
        ));
    }
    let unlisted: Vec<&str> = wire
        .calls
        .keys()
        .filter(|t| !wire.advertised.contains(t))
        .map(String::as_str)
        .collect();
    if !unlisted.is_empty() {
        warnings.push(format!(
            "wire calls to tools the server never advertised: {}",
            unlisted.join(", ")
        ));
    }
    let resembling: Vec<String> = strays
        .iter()
        .filter_map(|s| Some(format!("{} (~{})", s.name, s.resembles.as_deref()?)))
        .collect();
    if !resembling.is_empty() {
        warnings.push(format!(
            "strays ending with an advertised name, perhaps a spelling this tool does not \
             know (not attributed): {}",
            resembling.join(", ")
        ));
    }
    GapReport {
        server: server.to_owned(),
        client_format: client.format.name().to_owned(),
        client_version: client.version.clone(),
        advertised_tools: rows.iter().filter(|r| !r.injected).count(),
        wire_calls,
        proxy_calls: rows.iter().filter(|r| r.injected).map(|r| r.wire).sum(),
        client_calls: client.by_name.values().sum(),
        attributed_calls: rows.iter().map(|r| r.attributed).sum(),
        gap,
        gap_with_bare: rows.iter().map(|r| r.gap_with_bare).sum(),
        answered_without_tools: wire_calls == 0,
        clean: wire_calls > 0 && gap == 0 && strays.is_empty() && bare_collisions.is_empty(),
        tools: rows,
        strays,
        warnings,
    }
}

/// Renders `report` as a plain-text table.
pub fn render_table(report: &GapReport) -> String {
    let s = &report.server;
    let head = [
        "tool".to_owned(),
        "wire".to_owned(),
        format!("mcp__{s}__*"),
        format!("mcp_{s}_*"),
        format!("{s}__*"),
        "bare (not attributed)".to_owned(),
        "attributed".to_owned(),
        "gap".to_owned(),
    ];
    let rows: Vec<Vec<String>> = report
        .tools
        .iter()
        .map(|r| {
            vec![
                if r.injected {
                    format!("{} (ctxopt-proxy's)", r.tool)
                } else {
                    r.tool.clone()
                },
                r.wire.to_string(),
                r.claude_qualified.to_string(),
                r.gemini_qualified.to_string(),
                r.gemini_legacy_qualified.to_string(),
                r.bare.to_string(),
                r.attributed.to_string(),
                r.gap.to_string(),
            ]
        })
        .collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "server {s}, client {}{}",
        report.client_format,
        report
            .client_version
            .as_deref()
            .map(|v| format!(" {v}"))
            .unwrap_or_default()
    );
    Table::new(head, rows).render(Style::Plain, &mut out);
    let _ = writeln!(
        out,
        "gap {} (with bare names: {}); wire calls {}, client calls {}, attributed {}; {}",
        report.gap,
        report.gap_with_bare,
        report.wire_calls,
        report.client_calls,
        report.attributed_calls,
        if report.answered_without_tools {
            "ANSWERED WITHOUT TOOLS"
        } else if report.clean {
            "clean"
        } else {
            "not clean"
        }
    );
    for stray in &report.strays {
        let _ = writeln!(
            out,
            "stray: {} ×{} ({}{})",
            stray.name,
            stray.calls,
            stray.reason,
            stray
                .resembles
                .as_deref()
                .map(|t| format!(", resembles {t}"))
                .unwrap_or_default()
        );
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}
