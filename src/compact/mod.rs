//! Compaction on the wire (`ctxopt-proxy --compact-results TOKENS`): a `tools/call` result
//! whose text counts more than the limit reaches the client as a compacted result of at most
//! the limit — the lines that matter for that output, head and tail, each with its line
//! number, and one sentence naming what was left out and the `get_result` call that returns
//! the whole. Everything else passes byte for byte. Specified in `docs/compaction.md`.
//!
//! # Layout
//! - [`text`]: a result's text (its `text` blocks joined) and its lines; the exact limit check.
//! - [`shown_lines`]: which lines are shown (the optimizer's extraction, line by line) and how.
//! - [`pages`]: the whole text served back a page, a line range or a pattern at a time.
//!
//! [`compact`] is the one entry point for a response frame; it never fails: anything it
//! cannot compact while keeping the result valid for the client is passed whole, with the
//! reason ([`Pass`]).

pub(crate) mod pages;
pub(crate) mod shown_lines;
pub(crate) mod text;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::tokenizer::Tokenizer;

/// The smallest limit `--compact-results` accepts: below it the sentence naming the
/// `get_result` call would not fit beside any excerpt.
pub(crate) const MIN_LIMIT: usize = 200;

/// What is known of the tool's `outputSchema` from the server's `tools/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Schema<'a> {
    /// The tool was listed without one.
    None,
    /// The tool declares this one.
    Declared(&'a Value),
    /// The tool was not seen in a listing: treated as declaring one that allows nothing.
    Unknown,
}

/// Keywords a property's schema may hold and still accept any string.
const PLAIN_STRING_KEYWORDS: [&str; 4] = ["type", "description", "title", "$comment"];

impl Schema<'_> {
    /// Whether `structuredContent.member` may hold any string: no schema, or a declared
    /// property that is `{"type": "string"}` and nothing that constrains it.
    fn allows_any_string(&self, member: &str) -> bool {
        match self {
            Schema::None => true,
            Schema::Unknown => false,
            Schema::Declared(schema) => schema
                .pointer(&format!(
                    "/properties/{}",
                    member.replace('~', "~0").replace('/', "~1")
                ))
                .and_then(Value::as_object)
                .is_some_and(|p| {
                    p.get("type").and_then(Value::as_str) == Some("string")
                        && p.keys()
                            .all(|k| PLAIN_STRING_KEYWORDS.contains(&k.as_str()))
                }),
        }
    }
}

/// The call a response answers.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Call<'a> {
    /// The call's arguments (`null` when it had none).
    pub(crate) arguments: &'a Value,
    /// The tool's output schema.
    pub(crate) schema: Schema<'a>,
}

/// How compaction is set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The most tokens a result's text may count before it is compacted, and the most the
    /// compacted text (and each `get_result` page) counts.
    pub(crate) tokens: usize,
    /// The tokenizer that counts them.
    pub(crate) tokenizer: Tokenizer,
}

/// Claude Code's default cut for MCP results (`MAX_MCP_OUTPUT_TOKENS`).
pub(crate) const DEFAULT_LIMIT: usize = 25_000;

impl Default for Limits {
    /// [`DEFAULT_LIMIT`] tokens of `o200k_base`.
    fn default() -> Limits {
        Limits {
            tokens: DEFAULT_LIMIT,
            tokenizer: Tokenizer::O200kBase,
        }
    }
}

/// Why a response passed whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pass {
    /// The frame has fewer bytes than the limit has tokens (decided without parsing).
    Small,
    /// Not a `tools/call` result with a `content` array (an error response, say).
    NotAResult,
    /// Not a final result: its `resultType` is not `complete` (2026-07-28): an
    /// `input_required` result (whose `requestState` the client must echo byte for byte)
    /// or a task handle. Passed whole whatever it holds.
    NotFinal,
    /// The result has no text block to compact (only images, audio, resources), and the
    /// frame counts more than the limit. (One that counts at most the limit is
    /// [`Pass::UnderLimit`].)
    NoText,
    /// Its text counts at most the limit.
    UnderLimit,
    /// Its `structuredContent` takes more than half the limit apart from the members that
    /// repeat the text, and the tool declares (or may declare) an `outputSchema` it must keep
    /// validating against.
    StructuredOverLimit {
        /// Tokens of that `structuredContent` (the members repeating the text emptied).
        tokens: usize,
    },
}

impl std::fmt::Display for Pass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Pass::Small => "under the limit",
            Pass::NotAResult => "not a tool result with content",
            Pass::NotFinal => "not a final result (resultType other than complete)",
            Pass::NoText => "it has no text content to compact: relayed whole",
            Pass::UnderLimit => "under the limit",
            Pass::StructuredOverLimit { .. } => {
                "its structuredContent, which must stay valid against the tool's outputSchema, takes more than half the limit: relayed whole"
            }
        })
    }
}

/// A compacted response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Compacted {
    /// The frame the client gets, without a line ending.
    pub(crate) frame: String,
    /// Lines of the original text.
    pub(crate) lines: usize,
    /// Lines shown (whole or cut short).
    pub(crate) shown: usize,
    /// Tokens of the compacted text content.
    pub(crate) tokens: usize,
}

/// What [`compact`] decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Relay the server's frame as it is.
    Pass(Pass),
    /// Send this instead (after keeping the original under the handle).
    Compacted(Compacted),
}

/// The handle of a result: `r_` and 16 hex digits of sha256 over the workspace and the
/// frame, so the same result in the same workspace keeps one handle.
pub(crate) fn handle_for(workspace: &str, frame: &str) -> String {
    let mut h = Sha256::new();
    h.update(workspace.as_bytes());
    h.update([0]);
    h.update(frame.as_bytes());
    format!("r_{}", &hex::encode(h.finalize())[..16])
}

/// Compacts a `tools/call` response frame (its text without the line ending) answering
/// `call`, under `limits`; the sentence names `get_result` (the name the client sees) and
/// `handle`.
pub(crate) fn compact(
    frame: &str,
    call: &Call<'_>,
    limits: Limits,
    handle: &str,
    get_result: &str,
) -> Outcome {
    let limit = limits.tokens;
    let tokenizer = limits.tokenizer;
    if frame.len() <= limit {
        return Outcome::Pass(Pass::Small);
    }
    let Ok(mut message) = serde_json::from_str::<Value>(frame) else {
        return Outcome::Pass(Pass::NotAResult);
    };
    let result = &message["result"];
    if result
        .get("resultType")
        .is_some_and(|t| t.as_str() != Some("complete"))
    {
        return Outcome::Pass(Pass::NotFinal);
    }
    if !result.get("content").is_some_and(Value::is_array) {
        return Outcome::Pass(Pass::NotAResult);
    }
    let Some(text) = text::result_text(result) else {
        return Outcome::Pass(if text::exceeds(frame, limit, tokenizer) {
            Pass::NoText
        } else {
            Pass::UnderLimit
        });
    };
    if !text::exceeds(&text, limit, tokenizer) {
        return Outcome::Pass(Pass::UnderLimit);
    }
    let Some(Value::Object(mut result_map)) = message.get_mut("result").map(Value::take) else {
        return Outcome::Pass(Pass::NotAResult);
    };
    let mut notes = Vec::new();
    let mut structured_tokens = 0;
    // Members of structuredContent that repeat the text (server-filesystem's `content`):
    // they get the compacted text too, where any string is valid there.
    let mut mirrored: Vec<String> = Vec::new();
    if let Some(Value::Object(structured)) = result_map.get("structuredContent") {
        mirrored = structured
            .iter()
            .filter(|(k, v)| v.as_str() == Some(text.as_str()) && call.schema.allows_any_string(k))
            .map(|(k, _)| k.clone())
            .collect();
    }
    if let Some(structured) = result_map.get("structuredContent") {
        let mut rest = structured.clone();
        for member in &mirrored {
            rest[member.as_str()] = Value::String(String::new());
        }
        structured_tokens = tokenizer.count(&rest.to_string());
        let fits = structured_tokens <= limit / 2;
        match (call.schema, fits) {
            (_, true) => {}
            (Schema::Declared(_) | Schema::Unknown, false) => {
                return Outcome::Pass(Pass::StructuredOverLimit {
                    tokens: structured_tokens,
                })
            }
            (Schema::None, false) => {
                result_map.remove("structuredContent");
                structured_tokens = 0;
                mirrored.clear();
                notes.push(
                    "its structuredContent is left out too (the tool declares no outputSchema)"
                        .to_string(),
                );
            }
        }
    }
    let lines = text::lines(&text);
    let order = shown_lines::ranked(&lines, &shown_lines::argument_terms(call.arguments));
    // Each mirrored member holds the compacted text again.
    let available = (limit - structured_tokens) / (1 + mirrored.len());
    let mut estimate = available;
    let (body, shown) = loop {
        let ex = shown_lines::excerpt(&lines, &order, estimate, tokenizer);
        let body = format!(
            "{}{}",
            ex.text,
            sentence(lines.len(), &ex, &notes, limit, handle, get_result)
        );
        let tokens = tokenizer.count(&body);
        if tokens <= available || estimate == 0 {
            break (body, ex.shown);
        }
        // Each row was counted alone and the sentence not at all: shrink by the overshoot.
        let over = tokens - available;
        estimate = estimate.saturating_sub(over.max(estimate / 20).max(1));
    };
    let tokens = tokenizer.count(&body);
    if let Some(structured) = result_map.get_mut("structuredContent") {
        for member in &mirrored {
            structured[member.as_str()] = Value::String(body.clone());
        }
    }
    result_map.insert(
        "content".into(),
        Value::Array(compacted_content(&result_map, body)),
    );
    message["result"] = Value::Object(result_map);
    Outcome::Compacted(Compacted {
        frame: message.to_string(),
        lines: lines.len(),
        shown,
        tokens,
    })
}

/// The content with the text blocks replaced by one block holding `body` (where the first
/// text block was, keeping its other members), every other block in its place.
fn compacted_content(result: &Map<String, Value>, body: String) -> Vec<Value> {
    let mut out = Vec::new();
    let mut body = Some(body);
    for block in result["content"].as_array().into_iter().flatten() {
        if block.get("type").and_then(Value::as_str) != Some("text") {
            out.push(block.clone());
        } else if let Some(body) = body.take() {
            let mut block = block.clone();
            block["text"] = Value::String(body);
            out.push(block);
        }
    }
    out
}

/// The sentence that ends a compacted text.
fn sentence(
    total: usize,
    ex: &shown_lines::Excerpt,
    notes: &[String],
    limit: usize,
    handle: &str,
    get_result: &str,
) -> String {
    let left = total - ex.shown;
    let mut s = if left > 0 {
        format!(
            "… {} of {} lines left out",
            thousands(left),
            thousands(total)
        )
    } else {
        format!("… {} lines shown", thousands(total))
    };
    if ex.cut > 0 {
        s.push_str(&format!(", {} cut short", thousands(ex.cut)));
    }
    for note in notes {
        s.push_str("; ");
        s.push_str(note);
    }
    s.push_str(&format!(
        "; the whole result: {get_result} {{\"handle\": \"{handle}\", \"page\": 1}} (pages of at most {} tokens), or by lines {{\"handle\": \"{handle}\", \"lines\": [FROM, TO]}}, or the lines matching a pattern {{\"handle\": \"{handle}\", \"pattern\": \"REGEX\"}}\n",
        thousands(limit)
    ));
    s
}

/// `19412` as `19,412`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests;
