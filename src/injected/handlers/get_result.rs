//! `get_result`: a result the proxy compacted on the wire, served back from the store exactly
//! as the server sent it — a page, a range of lines, or the lines matching a pattern — each
//! answer under the compaction limit. The content is two text blocks: the part asked for, and
//! a note saying what it is and how to go on (the first blocks of all the pages, joined, are
//! the whole text).

use regex::Regex;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{invalid, ToolError};
use crate::compact::pages::{serve, PageCache, Part};
use crate::compact::text::result_text;
use crate::compact::Limits;
use crate::injected::tools::InjectedTool;
use crate::store::results::{unix_now, DEFAULT_RETENTION};
use crate::store::{Scope, Store};

/// The arguments of `get_result`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetResultArgs {
    handle: String,
    page: Option<usize>,
    lines: Option<(usize, usize)>,
    pattern: Option<String>,
    #[serde(default)]
    raw: bool,
}

/// The longest pattern accepted, in bytes.
const MAX_PATTERN: usize = 1000;

/// Serves part of the result kept under `args.handle` for `scope`'s workspace; `pages`
/// remembers where the pages of each result end.
pub(crate) fn get_result(
    args: GetResultArgs,
    store: &Store,
    scope: &Scope,
    limits: Limits,
    pages: &PageCache,
) -> Result<Value, ToolError> {
    let tool = InjectedTool::GetResult;
    let part = match (&args.pattern, args.lines, args.page) {
        (Some(_), _, Some(_)) | (None, Some(_), Some(_)) => {
            return Err(invalid(
                tool,
                "give one of page, lines or pattern (lines may narrow a pattern)",
            ))
        }
        (Some(p), lines, None) => {
            if p.len() > MAX_PATTERN {
                return Err(invalid(
                    tool,
                    format!("the pattern is longer than {MAX_PATTERN} bytes"),
                ));
            }
            let regex = Regex::new(p).map_err(|e| invalid(tool, format!("pattern: {e}")))?;
            let (from, to) = lines.unwrap_or((1, usize::MAX));
            Part::Pattern(regex, from, to)
        }
        (None, Some((from, to)), None) => Part::Lines(from, to),
        (None, None, page) => Part::Page(page.unwrap_or(1)),
    };
    if matches!(part, Part::Page(0)) {
        return Err(invalid(tool, "pages are numbered from 1"));
    }
    let kept = store
        .kept_result(
            &scope.workspace,
            &args.handle,
            unix_now(),
            DEFAULT_RETENTION,
        )?
        .ok_or_else(|| {
            invalid(
                tool,
                format!(
                    "no result is kept under {} in this workspace (results are kept {} hours)",
                    args.handle,
                    DEFAULT_RETENTION.as_secs() / 3600
                ),
            )
        })?;
    let doc = if args.raw {
        kept.frame
    } else {
        let message: Value = serde_json::from_str(&kept.frame)
            .map_err(|e| invalid(tool, format!("the kept frame is not JSON: {e}")))?;
        result_text(&message["result"]).unwrap_or_default()
    };
    let key = (args.handle.clone(), args.raw, limits.tokens);
    let served = pages.with(key, |ends| {
        serve(&doc, &part, limits.tokens, limits.tokenizer, ends)
    });
    let mut note = served.note;
    if let (Some(next), Part::Page(_)) = (served.next, &part) {
        note.push_str(&format!(
            " Next: {{\"handle\": \"{}\", \"page\": {next}{}}}.",
            args.handle,
            if args.raw { ", \"raw\": true" } else { "" }
        ));
    }
    Ok(json!({"content": [
        {"type": "text", "text": served.text},
        {"type": "text", "text": note}
    ]}))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::handle_for;
    use crate::tokenizer::Tokenizer;
    use sha2::{Digest, Sha256};

    fn scope() -> Scope {
        Scope {
            workspace: "/ws".into(),
            server: "s".into(),
            session: "t".into(),
        }
    }

    const LIMITS: Limits = Limits {
        tokens: 800,
        tokenizer: Tokenizer::O200kBase,
    };

    fn call(store: &Store, args: Value) -> Result<Value, ToolError> {
        get_result(
            serde_json::from_value(args).unwrap(),
            store,
            &scope(),
            LIMITS,
            &PageCache::default(),
        )
    }

    fn kept(store: &mut Store, text: &str) -> (String, String) {
        let frame = json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}}).to_string();
        let handle = handle_for("/ws", &frame);
        store
            .keep_result(
                &scope(),
                &handle,
                Some("read"),
                &frame,
                unix_now(),
                DEFAULT_RETENTION,
            )
            .unwrap();
        (handle, frame)
    }

    fn pages(store: &Store, handle: &str, raw: bool) -> String {
        let mut joined = String::new();
        let mut page = 1;
        loop {
            let r = call(store, json!({"handle": handle, "page": page, "raw": raw})).unwrap();
            joined.push_str(r["content"][0]["text"].as_str().unwrap());
            let note = r["content"][1]["text"].as_str().unwrap();
            if note.contains("the last page") {
                return joined;
            }
            assert!(note.contains(&format!("\"page\": {}", page + 1)), "{note}");
            page += 1;
        }
    }

    #[test]
    fn the_pages_joined_are_the_original_byte_for_byte() {
        let mut store = Store::open_in_memory().unwrap();
        let text: String = (0..2000)
            .map(|i| format!("{i}\tvalue é {}\r\n", i * 31))
            .collect();
        let (handle, frame) = kept(&mut store, &text);
        let sha = |s: &str| hex::encode(Sha256::digest(s.as_bytes()));
        assert_eq!(sha(&pages(&store, &handle, false)), sha(&text));
        assert_eq!(sha(&pages(&store, &handle, true)), sha(&frame));
    }

    #[test]
    fn lines_and_patterns_are_served() {
        let mut store = Store::open_in_memory().unwrap();
        let text: String = (1..=500).map(|i| format!("entry {i}\n")).collect();
        let (handle, _) = kept(&mut store, &text);
        let r = call(&store, json!({"handle": handle, "lines": [41, 42]})).unwrap();
        assert_eq!(r["content"][0]["text"], "entry 41\nentry 42\n");
        let r = call(
            &store,
            json!({"handle": handle, "pattern": "^entry (40|400)$"}),
        )
        .unwrap();
        assert_eq!(r["content"][0]["text"], " 40 | entry 40\n400 | entry 400\n");
        let r = call(
            &store,
            json!({"handle": handle, "pattern": "0$", "lines": [1, 30]}),
        )
        .unwrap();
        assert_eq!(
            r["content"][0]["text"],
            " 10 | entry 10\n 20 | entry 20\n 30 | entry 30\n"
        );
    }

    #[test]
    fn bad_requests_get_clear_errors() {
        let mut store = Store::open_in_memory().unwrap();
        let (handle, _) = kept(&mut store, "x");
        let msg = |args| call(&store, args).unwrap_err().to_string();
        assert!(msg(json!({"handle": "r_0000000000000000"}))
            .contains("no result is kept under r_0000000000000000"));
        assert!(msg(json!({"handle": handle, "pattern": "("})).contains("pattern:"));
        assert!(msg(json!({"handle": handle, "page": 2, "pattern": "x"})).contains("one of page"));
        assert!(msg(json!({"handle": handle, "page": 0})).contains("from 1"));
        // Another workspace does not see it.
        let other = Scope {
            workspace: "/elsewhere".into(),
            ..scope()
        };
        let args = serde_json::from_value(json!({"handle": handle})).unwrap();
        assert!(get_result(args, &store, &other, LIMITS, &PageCache::default()).is_err());
    }
}
