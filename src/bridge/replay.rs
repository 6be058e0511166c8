//! Replaying a frame log: the `tools/call` request/response pairs a log holds, in response
//! order, for ingestion after the fact (`ctxopt ingest`). Only relayed frames count
//! (`c2s` requests answered by `s2c` responses); the proxy's own `c2p`/`p2c` frames are its
//! injected tools and are never ingested.

use std::collections::HashMap;

use crate::framelog::record::{Direction, FrameKind, Header, LogLine};

use super::ingest::FramePair;

/// A request/response pair read from a log, owning its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedPair {
    /// The request frame's text.
    pub request: String,
    /// The response frame's text.
    pub response: String,
    /// The response's `seq`.
    pub seq: u64,
    /// The response's time.
    pub ts: String,
}

impl LoggedPair {
    /// The pair as ingestion takes it, logged in `log_path`.
    pub fn as_frame_pair<'a>(&'a self, log_path: &'a str) -> FramePair<'a> {
        FramePair {
            request: &self.request,
            response: &self.response,
            log_path: Some(log_path),
            seq: Some(self.seq),
            timestamp: Some(&self.ts),
        }
    }
}

/// What a log holds for ingestion.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    /// The log's header, when it has one.
    pub header: Option<Header>,
    /// The `tools/call` pairs, in response order.
    pub pairs: Vec<LoggedPair>,
    /// Lines that are not frame-log records (1-based line numbers).
    pub bad_lines: Vec<usize>,
}

/// Reads a frame log's text.
pub fn replay(text: &str) -> Replay {
    let mut out = Replay::default();
    let mut pending: HashMap<String, String> = HashMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let frame = match serde_json::from_str::<LogLine>(line) {
            Ok(LogLine::Header(h)) => {
                out.header.get_or_insert(h);
                continue;
            }
            Ok(LogLine::Trailer(_)) => continue,
            Ok(LogLine::Frame(f)) => f,
            Err(_) => {
                out.bad_lines.push(i + 1);
                continue;
            }
        };
        let (Some(id), Some(raw)) = (frame.id, frame.raw) else {
            continue;
        };
        match (frame.dir, frame.kind) {
            (Direction::C2s, FrameKind::Request)
                if frame.method.as_deref() == Some("tools/call") =>
            {
                pending.insert(id, raw);
            }
            (Direction::S2c, FrameKind::Response | FrameKind::Error) => {
                if let Some(request) = pending.remove(&id) {
                    out.pairs.push(LoggedPair {
                        request,
                        response: raw,
                        seq: frame.seq,
                        ts: frame.ts,
                    });
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn frame(seq: u64, dir: &str, kind: &str, id: &str, method: Option<&str>, raw: &str) -> String {
        let mut f = json!({"type": "frame", "seq": seq, "ts": format!("2026-01-01T00:00:0{seq}Z"),
            "dir": dir, "bytes": raw.len() + 1, "line_ending": "lf", "kind": kind, "id": id,
            "tokens": 1, "meta_tokens": 0, "raw": raw});
        if let Some(m) = method {
            f["method"] = json!(m);
        }
        f.to_string()
    }

    #[test]
    fn pairs_relayed_tool_calls_and_skips_the_proxys_own() {
        let req = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"a"}}}"#;
        let resp = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[]}}"#;
        let own =
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"build_context"}}"#;
        let own_resp = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
        let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#;
        let list_resp = r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#;
        let log = [
            frame(0, "c2s", "request", "1", Some("tools/call"), req),
            frame(1, "c2p", "request", "2", Some("tools/call"), own),
            frame(2, "p2c", "response", "2", Some("tools/call"), own_resp),
            frame(3, "c2s", "request", "3", Some("tools/list"), list),
            frame(4, "s2c", "response", "3", Some("tools/list"), list_resp),
            "garbage".to_string(),
            frame(5, "s2c", "response", "1", Some("tools/call"), resp),
        ]
        .join("\n");
        let r = replay(&log);
        assert_eq!(r.bad_lines, [6]);
        assert_eq!(r.pairs.len(), 1);
        assert_eq!(r.pairs[0].request, req);
        assert_eq!(r.pairs[0].response, resp);
        assert_eq!(r.pairs[0].seq, 5);
        let p = r.pairs[0].as_frame_pair("x.jsonl");
        assert_eq!((p.log_path, p.seq), (Some("x.jsonl"), Some(5)));
    }

    /// Two real sessions recorded through the proxy (frame-logs/), replayed and ingested:
    /// one line per record (newlines shown as ⏎).
    #[test]
    fn real_frame_logs_ingest_snapshot() {
        use crate::bridge::ingest::ingest;
        use crate::store::SessionRecord;

        let mut lines = Vec::new();
        for name in ["ts-filesystem", "ts-everything"] {
            let path = format!("{}/frame-logs/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let r = replay(&text);
            assert!(r.bad_lines.is_empty(), "{name}: {:?}", r.bad_lines);
            lines.push(format!("## {name} ({} tools/call pairs)", r.pairs.len()));
            for pair in &r.pairs {
                for made in ingest(&pair.as_frame_pair(name), &|_| false).unwrap() {
                    let text = match &made.record {
                        SessionRecord::File(f) => format!("{} | {}", f.path, f.content),
                        other => other.search_text(),
                    };
                    let first: String = text.replace('\n', "⏎").chars().take(110).collect();
                    lines.push(format!(
                        "seq {:>2}.{} {:<10} {:<28} {first}",
                        pair.seq,
                        made.provenance.part,
                        made.record.kind().name(),
                        made.provenance.tool.as_deref().unwrap_or("")
                    ));
                }
            }
        }
        let out = lines.join("\n");
        // The rules at work on real traffic.
        assert!(out.contains(
            "file       read_multiple_files          /tmp/ctxopt-frame-logs/project/src/lib.rs"
        ));
        assert!(
            out.contains("error      read_text_file               read_text_file: Access denied")
        );
        assert!(out.contains("[image image/png "));
        assert!(!out.contains("iVBOR"));
        insta::assert_snapshot!(out);
    }
}
