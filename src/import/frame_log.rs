//! Replaying a frame log: the `tools/call` request/response pairs a log holds, in response
//! order, for ingestion after the fact (`ctxopt ingest`). Only relayed frames count
//! (`c2s` requests answered by `s2c` responses); the proxy's own `c2p`/`p2c` frames are its
//! injected tools and are never ingested.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::framelog::exchanges::{Entry, Exchange, Exchanges};
use crate::framelog::reader::{LogReader, ReadError};
use crate::framelog::record::{Direction, FrameKind, Header};

use crate::import::mcp::FramePair;

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

/// What a log holds for ingestion, in log order.
#[derive(Debug, Clone, PartialEq)]
pub enum Replayed {
    /// The log's header.
    Header(Header),
    /// A relayed `tools/call` request and its answer, at the answer's place.
    Pair(LoggedPair),
    /// A line that is not a frame-log record (1-based line number).
    Bad(u64),
}

/// Replays a frame log as it streams by: the [`Exchanges`] pairing iterator, keeping the
/// relayed `tools/call` pairs.
pub struct Replay<R> {
    log: Exchanges<R>,
}

impl Replay<BufReader<File>> {
    /// Opens the log at `path`.
    pub fn open(path: &Path) -> Result<Self, ReadError> {
        Ok(Replay {
            log: Exchanges::open(path)?,
        })
    }
}

impl<R: BufRead> Replay<R> {
    /// Replays what `reader` reads.
    pub fn new(reader: LogReader<R>) -> Self {
        Replay {
            log: Exchanges::new(reader),
        }
    }
}

/// The pair an exchange holds for ingestion: a relayed `s2c` answer (a single frame, with
/// its text) to a `c2s` `tools/call` request.
fn tool_call_pair(exchange: Exchange) -> Option<LoggedPair> {
    let (answer, request) = (exchange.message, exchange.request?);
    let relayed = answer.dir() == Direction::S2c && request.dir() == Direction::C2s;
    let single = answer.item.is_none() && request.item.is_none();
    if !relayed || !single || request.kind() != FrameKind::Request {
        return None;
    }
    if request.frame.method.as_deref() != Some("tools/call") {
        return None;
    }
    Some(LoggedPair {
        request: request.frame.raw.clone()?,
        response: answer.frame.raw.clone()?,
        seq: answer.frame.seq,
        ts: answer.frame.ts.clone(),
    })
}

impl<R: BufRead> Iterator for Replay<R> {
    type Item = Result<Replayed, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let entry = match self.log.next()? {
                Ok(entry) => entry,
                Err(e) => return Some(Err(e)),
            };
            match entry {
                Entry::Header(h) => return Some(Ok(Replayed::Header(h))),
                Entry::Bad { line, .. } => return Some(Ok(Replayed::Bad(line))),
                Entry::Trailer(_) => {}
                Entry::Frame { messages, .. } => {
                    if let Some(pair) = messages.into_iter().find_map(tool_call_pair) {
                        return Some(Ok(Replayed::Pair(pair)));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The pairs and the bad line numbers of a log's text.
    fn replay(text: &str) -> (Vec<LoggedPair>, Vec<u64>) {
        let (mut pairs, mut bad) = (Vec::new(), Vec::new());
        for item in Replay::new(LogReader::new(text.as_bytes())) {
            match item.unwrap() {
                Replayed::Pair(p) => pairs.push(p),
                Replayed::Bad(line) => bad.push(line),
                Replayed::Header(_) => {}
            }
        }
        (pairs, bad)
    }

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
        let (pairs, bad_lines) = replay(&log);
        assert_eq!(bad_lines, [6]);
        assert_eq!(pairs.len(), 1);
        assert_eq!(pairs[0].request, req);
        assert_eq!(pairs[0].response, resp);
        assert_eq!(pairs[0].seq, 5);
        let p = pairs[0].as_frame_pair("x.jsonl");
        assert_eq!((p.log_path, p.seq), (Some("x.jsonl"), Some(5)));
    }

    /// Two real sessions recorded through the proxy (frame-logs/), replayed and ingested:
    /// one line per record (newlines shown as ⏎).
    #[test]
    fn real_frame_logs_ingest_snapshot() {
        use crate::import::mcp::ingest;
        use crate::records::SessionRecord;

        let mut lines = Vec::new();
        for name in ["ts-filesystem", "ts-everything"] {
            let path = format!("{}/frame-logs/{name}.jsonl", env!("CARGO_MANIFEST_DIR"));
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let (pairs, bad_lines) = replay(&text);
            assert!(bad_lines.is_empty(), "{name}: {bad_lines:?}");
            lines.push(format!("## {name} ({} tools/call pairs)", pairs.len()));
            for pair in &pairs {
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
