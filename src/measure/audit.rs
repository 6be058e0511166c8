//! `audit`: what a server's tool list costs a context window before the agent does
//! anything, counted on the canonical serialization (see [`super::canonical`]).

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::canonical::{resolve_tool_refs, restrict_tool, to_compact};
use super::claude_estimate::{self, ClaudeEstimate};
use super::report::text::{Align, Style, Table};
use super::toollist::Listing;
use crate::tokenizer::Tokenizer;

/// The footprint of one server's tool list. Its JSON form is a public interface
/// (documented in `docs/audit.md`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// Who answered, when known.
    pub server: ServerIdentity,
    /// The protocol revision in effect, when known (`null` for a bare capture).
    pub protocol: Option<String>,
    /// The tokenizer of every `tokens` figure.
    pub tokenizer: String,
    /// Tools listed.
    pub tool_count: usize,
    /// Tokens of the canonical serialization of the whole `tools` array (wire form).
    pub total_tokens: usize,
    /// The same with same-document `$ref`s inlined and `$defs` dropped.
    pub ref_resolved_total_tokens: usize,
    /// Bytes of the canonical serialization.
    pub(crate) canonical_bytes: usize,
    /// SHA-256 (hex) of the canonical serialization.
    pub canonical_sha256: String,
    /// SHA-256 (hex) of the serialization with `$ref`s inlined.
    pub ref_resolved_sha256: String,
    /// One entry per tool, in wire order.
    pub tools: Vec<ToolFootprint>,
    /// The prompt list, when the server was asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<ListFootprint>,
    /// The resource list, when the server was asked for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ListFootprint>,
    /// What the listing costs without the hidden tools, when some are hidden (by the proxy,
    /// in the log read, or by `--hide-tools`/`--only-tools` given to `audit`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface: Option<Surface>,
    /// What the tools cost in Claude's context: an estimate, never a count (see
    /// [`super::claude_estimate`] and `docs/audit.md`).
    pub claude_estimate: ClaudeEstimates,
    /// Findings a reader should act on, one sentence each.
    pub warnings: Vec<String>,
}

/// The tool list in Claude's context, estimated two ways.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaudeEstimates {
    /// The tools as a client passes them to the model: the API's native `tools` parameter.
    pub native_tools: ClaudeEstimate,
    /// The list as JSON text (`$ref`s inlined, as the paired counts were taken).
    pub json_text: ClaudeEstimate,
}

/// The listing with and without the hidden tools.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Surface {
    /// `frame-log`, `--hide-tools` or `--only-tools`.
    pub source: String,
    /// The hidden tools, in wire order.
    pub hidden: Vec<String>,
    /// Tools left.
    pub shown_count: usize,
    /// Tokens of the canonical serialization of the tools left (as `total_tokens`).
    pub shown_tokens: usize,
    /// `total_tokens - shown_tokens`: what hiding them saves on every listing.
    pub saved_tokens: usize,
}

/// Who answered the listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerIdentity {
    /// `serverInfo.name`.
    pub name: Option<String>,
    /// `serverInfo.version`.
    pub version: Option<String>,
    /// How the listing was obtained.
    pub source: String,
}

/// The footprint of one tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolFootprint {
    /// The tool's `name`.
    pub name: String,
    /// Tokens of the tool's canonical serialization.
    pub tokens: usize,
    /// The same after `$ref` inlining.
    pub ref_resolved_tokens: usize,
    /// The dialect `inputSchema` declares: `2020-12`, `2019-09`, `draft-07`, `draft-06`,
    /// `draft-04`, `other` or `none`.
    pub schema_dialect: String,
    /// The dialect `outputSchema` declares, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) output_schema_dialect: Option<String>,
    /// Compact bytes of `inputSchema` plus `outputSchema`.
    pub schema_bytes: usize,
    /// Compact bytes of the tool's `_meta` member (0 when absent).
    pub meta_bytes: usize,
    /// Compact bytes of the tool's `icons` member (0 when absent).
    pub icons_bytes: usize,
    /// Tokens the tool's `_meta` and `icons` members add (tool tokens minus the tokens of
    /// the tool without them).
    pub envelope_tokens: usize,
    /// `true` when a `$ref` could not be inlined (recursive or dangling).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) unresolved_refs: bool,
}

/// The footprint of a prompt or resource list.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ListFootprint {
    /// Entries listed.
    pub count: usize,
    /// Tokens of the compact serialization of the array.
    pub tokens: usize,
    /// Entry names (`name`, else `uri`), in wire order.
    pub names: Vec<String>,
}

/// Measures `listing` with `tokenizer`.
pub fn audit(listing: &Listing, tokenizer: Tokenizer) -> AuditReport {
    let restricted: Vec<Value> = listing.tools.iter().map(restrict_tool).collect();
    let resolved: Vec<(Value, bool)> = restricted.iter().map(resolve_tool_refs).collect();

    let canonical = to_compact(&Value::Array(restricted.clone()));
    let resolved_text = to_compact(&Value::Array(
        resolved.iter().map(|(v, _)| v.clone()).collect(),
    ));

    let tools: Vec<ToolFootprint> = restricted
        .iter()
        .zip(&resolved)
        .map(|(tool, (resolved_tool, unresolved))| {
            footprint(tool, resolved_tool, *unresolved, tokenizer)
        })
        .collect();

    let mut warnings = Vec::new();
    let newer: Vec<&str> = tools
        .iter()
        .filter(|t| {
            t.schema_dialect == "2020-12" || t.output_schema_dialect.as_deref() == Some("2020-12")
        })
        .map(|t| t.name.as_str())
        .collect();
    if !newer.is_empty() {
        warnings.push(format!(
            "{} tool(s) declare JSON Schema 2020-12 ({}): a client whose validator only knows \
             draft-07 fails these calls inside itself, and the wire shows nothing",
            newer.len(),
            newer.join(", ")
        ));
    }
    let unresolved: Vec<&str> = tools
        .iter()
        .filter(|t| t.unresolved_refs)
        .map(|t| t.name.as_str())
        .collect();
    if !unresolved.is_empty() {
        warnings.push(format!(
            "$ref left unresolved (recursive or dangling) in: {}",
            unresolved.join(", ")
        ));
    }

    let total_tokens = tokenizer.count(&canonical);
    let surface = (!listing.hidden.names.is_empty()).then(|| {
        let shown: Vec<Value> = restricted
            .iter()
            .filter(|t| {
                let name = t.get("name").and_then(Value::as_str).unwrap_or_default();
                !listing.hidden.names.iter().any(|h| h == name)
            })
            .cloned()
            .collect();
        let shown_count = shown.len();
        let shown_tokens = tokenizer.count(&to_compact(&Value::Array(shown)));
        Surface {
            source: listing.hidden.source.clone(),
            hidden: listing.hidden.names.clone(),
            shown_count,
            shown_tokens,
            saved_tokens: total_tokens.saturating_sub(shown_tokens),
        }
    });

    let info = listing.server_info.as_ref();
    let text = |key: &str| {
        info.and_then(|i| i.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    AuditReport {
        server: ServerIdentity {
            name: text("name"),
            version: text("version"),
            source: listing.source.clone(),
        },
        protocol: listing.protocol.clone(),
        tokenizer: tokenizer.name().to_owned(),
        tool_count: tools.len(),
        total_tokens,
        ref_resolved_total_tokens: tokenizer.count(&resolved_text),
        canonical_bytes: canonical.len(),
        canonical_sha256: hex::encode(Sha256::digest(canonical.as_bytes())),
        ref_resolved_sha256: hex::encode(Sha256::digest(resolved_text.as_bytes())),
        tools,
        prompts: listing
            .prompts
            .as_deref()
            .map(|p| list_footprint(p, tokenizer)),
        resources: listing
            .resources
            .as_deref()
            .map(|r| list_footprint(r, tokenizer)),
        surface,
        claude_estimate: ClaudeEstimates {
            native_tools: claude_estimate::tool_definitions(&listing.tools),
            json_text: claude_estimate::json_text(Tokenizer::O200kBase.count(&resolved_text) as u64),
        },
        warnings,
    }
}

/// Tokens of one tool object as it is counted in a listing: restricted to the members a
/// client is handed (see [`super::canonical`]), compact, in wire order.
pub fn tool_tokens(tool: &Value, tokenizer: Tokenizer) -> usize {
    tokenizer.count(&to_compact(&restrict_tool(tool)))
}

fn footprint(
    tool: &Value,
    resolved: &Value,
    unresolved: bool,
    tokenizer: Tokenizer,
) -> ToolFootprint {
    let member_bytes = |key: &str| tool.get(key).map_or(0, |v| to_compact(v).len());
    let tokens = tokenizer.count(&to_compact(tool));
    let bare = super::canonical::without_top_level(tool, &["_meta", "icons"]);
    ToolFootprint {
        name: tool
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        tokens,
        ref_resolved_tokens: tokenizer.count(&to_compact(resolved)),
        schema_dialect: dialect(tool.get("inputSchema")).to_owned(),
        output_schema_dialect: tool
            .get("outputSchema")
            .map(|s| dialect(Some(s)).to_owned()),
        schema_bytes: member_bytes("inputSchema") + member_bytes("outputSchema"),
        meta_bytes: member_bytes("_meta"),
        icons_bytes: member_bytes("icons"),
        envelope_tokens: tokens.saturating_sub(tokenizer.count(&to_compact(&bare))),
        unresolved_refs: unresolved,
    }
}

fn list_footprint(items: &[Value], tokenizer: Tokenizer) -> ListFootprint {
    ListFootprint {
        count: items.len(),
        tokens: tokenizer.count(&to_compact(&Value::Array(items.to_vec()))),
        names: items
            .iter()
            .filter_map(|i| i.get("name").or_else(|| i.get("uri")))
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    }
}

/// The JSON Schema dialect a schema declares with `$schema`.
pub(crate) fn dialect(schema: Option<&Value>) -> &'static str {
    let Some(uri) = schema
        .and_then(|s| s.get("$schema"))
        .and_then(Value::as_str)
    else {
        return "none";
    };
    const KNOWN: [(&str, &str); 5] = [
        ("/draft/2020-12/", "2020-12"),
        ("/draft/2019-09/", "2019-09"),
        ("/draft-07/", "draft-07"),
        ("/draft-06/", "draft-06"),
        ("/draft-04/", "draft-04"),
    ];
    KNOWN
        .iter()
        .find(|(needle, _)| uri.contains(needle))
        .map_or("other", |(_, name)| name)
}

/// Renders `report` as a plain-text table.
pub fn render_table(report: &AuditReport) -> String {
    let mut out = String::new();
    let name = report.server.name.as_deref().unwrap_or("(unnamed)");
    let version = report.server.version.as_deref().unwrap_or("-");
    let _ = writeln!(
        out,
        "server {name} {version} ({}), protocol {}",
        report.server.source,
        report.protocol.as_deref().unwrap_or("unknown")
    );
    let head = [
        "tool", "tokens", "$ref-in", "dialect", "schema B", "_meta B", "icons B", "env tk",
    ];
    let rows = report
        .tools
        .iter()
        .map(|t| {
            vec![
                t.name.clone(),
                t.tokens.to_string(),
                t.ref_resolved_tokens.to_string(),
                t.schema_dialect.clone(),
                t.schema_bytes.to_string(),
                t.meta_bytes.to_string(),
                t.icons_bytes.to_string(),
                t.envelope_tokens.to_string(),
            ]
        })
        .collect();
    Table::new(head, rows)
        .align(3, Align::Left)
        .min_widths(&[4, 7, 7, 8, 8, 7, 7, 6])
        .render(Style::Plain, &mut out);
    let _ = writeln!(
        out,
        "{} tools, {} tokens ({}), {} with $ref inlined; {} canonical bytes, sha256 {}",
        report.tool_count,
        report.total_tokens,
        report.tokenizer,
        report.ref_resolved_total_tokens,
        report.canonical_bytes,
        report.canonical_sha256
    );
    for estimate in [
        &report.claude_estimate.native_tools,
        &report.claude_estimate.json_text,
    ] {
        let _ = writeln!(out, "{}", estimate.line());
    }
    if let Some(s) = &report.surface {
        let _ = writeln!(
            out,
            "without {} ({}, {}): {} tools, {} tokens; {} tokens fewer on every listing",
            s.hidden.join(", "),
            s.hidden.len(),
            s.source,
            s.shown_count,
            s.shown_tokens,
            s.saved_tokens
        );
    }
    for (label, list) in [
        ("prompts", &report.prompts),
        ("resources", &report.resources),
    ] {
        if let Some(l) = list {
            let _ = writeln!(out, "{label}: {} listed, {} tokens", l.count, l.tokens);
        }
    }
    for w in &report.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    out
}
