//! Existing frame logs as the same spans and metrics the proxy exports live
//! (`ctxopt export --otlp URL LOG…`), for logs recorded before export was on.

use std::path::Path;
use std::sync::Arc;

use opentelemetry_proto::tonic::metrics::v1::Metric;
use opentelemetry_proto::tonic::trace::v1::Span;

use super::spans::SessionSpans;
use super::OtelError;
use crate::framelog::reader::{LogItem, LogReader};
use crate::framelog::{ExitStatus, LogLine};
use crate::redact::Redactor;

/// What a replay hands on, session by session: its spans, then its metrics.
#[derive(Debug)]
pub enum Output {
    /// A finished span.
    Span(Box<Span>),
    /// A session's metrics.
    Metrics(Vec<Metric>),
}

/// What a replay read.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ReplayStats {
    /// Sessions (header … trailer runs; a run cut off without a trailer counts too).
    pub sessions: u64,
    /// Spans handed on.
    pub spans: u64,
    /// Lines that are not frame-log records (a damaged or truncated log), skipped.
    pub bad_lines: u64,
    /// Frame lines before any header, skipped (a span needs its session's ids).
    pub headless_frames: u64,
}

/// Reads the frame log at `path` and hands each session's spans, then its metrics, to `out`;
/// with `content`, tool arguments and results go into spans, redacted by it.
pub fn replay(
    path: &Path,
    content: Option<Arc<Redactor>>,
    out: &mut dyn FnMut(Output),
) -> Result<ReplayStats, OtelError> {
    let mut stats = ReplayStats::default();
    let mut session: Option<SessionSpans> = None;
    for item in LogReader::open(path)? {
        match item? {
            LogItem::Bad { .. } => stats.bad_lines += 1,
            LogItem::Line(LogLine::Header(header)) => {
                if let Some(mut open) = session.take() {
                    end(&mut open, None, None, out, &mut stats);
                }
                stats.sessions += 1;
                session = Some(SessionSpans::new(&header, content.clone()));
            }
            LogItem::Line(LogLine::Frame(frame)) => match &mut session {
                Some(s) => {
                    for span in s.frame(&frame) {
                        stats.spans += 1;
                        out(Output::Span(Box::new(span)));
                    }
                }
                None => stats.headless_frames += 1,
            },
            LogItem::Line(LogLine::Trailer(trailer)) => {
                if let Some(mut open) = session.take() {
                    end(
                        &mut open,
                        Some(&trailer.ts),
                        Some(&trailer.exit),
                        out,
                        &mut stats,
                    );
                }
            }
        }
    }
    if let Some(mut open) = session.take() {
        end(&mut open, None, None, out, &mut stats);
    }
    Ok(stats)
}

/// Ends a session: its last spans, then its metrics.
fn end(
    session: &mut SessionSpans,
    ts: Option<&str>,
    exit: Option<&ExitStatus>,
    out: &mut dyn FnMut(Output),
    stats: &mut ReplayStats,
) {
    for span in session.finish(ts, exit) {
        stats.spans += 1;
        out(Output::Span(Box::new(span)));
    }
    out(Output::Metrics(session.metrics(ts)));
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;

    use super::*;
    use crate::otel::encode;

    fn recorded(name: &str) -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("frame-logs")
            .join(name)
    }

    fn spans_of(path: &Path) -> (Vec<Span>, Vec<Vec<Metric>>, ReplayStats) {
        let (mut spans, mut metrics) = (Vec::new(), Vec::new());
        let stats = replay(path, None, &mut |out| match out {
            Output::Span(s) => spans.push(*s),
            Output::Metrics(m) => metrics.push(m),
        })
        .unwrap();
        (spans, metrics, stats)
    }

    fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a Any> {
        span.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
    }

    fn text(span: &Span, key: &str) -> String {
        match attr(span, key) {
            Some(Any::StringValue(s)) => s.clone(),
            Some(Any::IntValue(i)) => i.to_string(),
            Some(other) => format!("{other:?}"),
            None => "-".into(),
        }
    }

    /// Requests and notifications of a log, counted from its records alone.
    fn operations_in(path: &Path) -> usize {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .filter(|l| l.contains(r#""type":"frame""#))
            .filter(|l| l.contains(r#""kind":"request""#) || l.contains(r#""kind":"notification""#))
            .count()
    }

    #[test]
    fn a_recorded_session_gives_one_span_per_pair_and_notification() {
        let path = recorded("ts-filesystem.jsonl");
        let (spans, metrics, stats) = spans_of(&path);
        assert_eq!(stats.sessions, 1);
        assert_eq!(
            spans.len(),
            operations_in(&path) + 1,
            "one per operation, plus the session"
        );
        let session = spans.last().unwrap();
        assert!(session.parent_span_id.is_empty());
        let summary: Vec<String> = spans
            .iter()
            .map(|s| {
                let parent = if s.parent_span_id.is_empty() {
                    "root"
                } else if s.parent_span_id == session.span_id {
                    "session"
                } else {
                    "other"
                };
                assert_eq!(s.trace_id, session.trace_id);
                format!(
                    "{} {:?} {parent} id={} op={} proto={} err={} status={} tokens={}/{} meta={}/{}",
                    s.name,
                    opentelemetry_proto::tonic::trace::v1::span::SpanKind::try_from(s.kind).unwrap(),
                    text(s, "jsonrpc.request.id"),
                    text(s, "gen_ai.operation.name"),
                    text(s, "mcp.protocol.version"),
                    text(s, "error.type"),
                    s.status.as_ref().map_or(0, |st| st.code),
                    text(s, "ctxopt.request.tokens"),
                    text(s, "ctxopt.response.tokens"),
                    text(s, "ctxopt.request.meta_tokens"),
                    text(s, "ctxopt.response.meta_tokens"),
                )
            })
            .collect();
        insta::assert_snapshot!(summary.join("\n"));
        assert!(spans[..spans.len() - 1]
            .iter()
            .all(|s| text(s, "network.transport") == "pipe" && text(s, "mcp.session.id") != "-"));
        assert_eq!(metrics.len(), 1);
        assert_eq!(
            metrics[0].len(),
            2,
            "the duration histogram and the token counter"
        );
    }

    #[test]
    fn a_stateless_session_has_no_session_id() {
        let (spans, _, _) = spans_of(&recorded("py-client-stateless.jsonl"));
        assert!(spans.len() > 2);
        for span in &spans {
            assert_eq!(text(span, "mcp.session.id"), "-", "{}", span.name);
        }
        let (spans, _, _) = spans_of(&recorded("py-session-memory.jsonl"));
        assert!(spans.iter().all(|s| text(s, "mcp.session.id") != "-"));
    }

    #[test]
    fn a_replay_is_byte_identical_every_time() {
        let path = recorded("ts-everything.jsonl");
        let resource = encode::resource(&[("service.name".into(), "t".into())]);
        let body = || {
            let (spans, metrics, _) = spans_of(&path);
            let mut bytes = encode::traces_body(&resource, spans);
            bytes.extend(encode::metrics_body(&resource, metrics.concat()));
            bytes
        };
        assert_eq!(body(), body());
    }

    #[test]
    fn a_traceparent_in_meta_is_the_remote_parent() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let request = r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi","note":"ghp_R8yq2Lm4Xz0Pw6Vn1Ks9Tb3Hd7Jf5Gc2Ae4B"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","tracestate":"rojo=1"}}}"#;
        let response = r#"{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi"}],"isError":true}}"#;
        let frame = |seq: u64, ts: &str, dir: &str, kind: &str, raw: &str| {
            serde_json::json!({"type":"frame","seq":seq,"ts":ts,"dir":dir,"bytes":raw.len()+1,"line_ending":"lf",
                "kind":kind,"id":"\"a\"","method":"tools/call","tool":"echo","protocol":"2025-11-25",
                "is_error": kind == "response", "tokens":10+seq,"meta_tokens":seq,"raw":raw})
            .to_string()
        };
        let lines = [
            r#"{"type":"header","format_version":1,"proxy_version":"t","tokenizer":"o200k_base","started":"2026-12-01T10:00:00.000000Z","server_name":"s","server_argv":["s"],"cwd":"/","server_pid":2,"proxy_pid":1}"#.to_string(),
            frame(0, "2026-12-01T10:00:01.000000Z", "c2s", "request", request),
            frame(1, "2026-12-01T10:00:01.250000Z", "s2c", "response", response),
        ];
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let mut spans = Vec::new();
        let redactor = Redactor::with_key(crate::redact::Key::from_bytes([7; 32]));
        replay(&log, Some(Arc::new(redactor)), &mut |out| {
            if let Output::Span(s) = out {
                spans.push(*s)
            }
        })
        .unwrap();
        assert_eq!(
            spans.len(),
            2,
            "the call and the session (no trailer: cut off)"
        );
        let call = &spans[0];
        assert_eq!(call.name, "tools/call echo");
        assert_eq!(
            hex::encode(&call.trace_id),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(hex::encode(&call.parent_span_id), "00f067aa0ba902b7");
        assert_eq!(call.trace_state, "rojo=1");
        assert_eq!(
            call.end_time_unix_nano - call.start_time_unix_nano,
            250_000_000
        );
        assert_eq!(text(call, "jsonrpc.request.id"), "a");
        assert_eq!(text(call, "error.type"), "tool_error");
        let arguments = text(call, "gen_ai.tool.call.arguments");
        assert!(arguments.contains(r#""text":"hi""#), "{arguments}");
        assert!(
            arguments.contains("[REDACTED:github-token:40:") && !arguments.contains("ghp_"),
            "the token is redacted with the log's rules: {arguments}"
        );
        assert!(text(call, "gen_ai.tool.call.result").contains(r#""text":"hi""#));
        assert_ne!(
            spans[1].trace_id, call.trace_id,
            "the session keeps its own trace"
        );
    }

    #[test]
    fn a_compacted_result_s_span_has_the_delivered_and_saved_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let request = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read","arguments":{}}}"#;
        let original = r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a long text"}]}}"#;
        let compacted =
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a"}]}}"#;
        let frame = |seq: u64,
                     ts: &str,
                     dir: &str,
                     kind: &str,
                     tokens: u64,
                     raw: &str,
                     compacts: Option<u64>| {
            let id = if raw.contains(r#""id":8,"#) { "8" } else { "7" };
            let mut f = serde_json::json!({"type":"frame","seq":seq,"ts":ts,"dir":dir,"bytes":raw.len()+1,"line_ending":"lf",
                "kind":kind,"id":id,"method":"tools/call","tool":"read","protocol":"2025-11-25",
                "tokens":tokens,"meta_tokens":0,"raw":raw});
            if let Some(c) = compacts {
                f["compacts"] = c.into();
            }
            f.to_string()
        };
        let lines = [
            r#"{"type":"header","format_version":2,"proxy_version":"t","tokenizer":"o200k_base","started":"2026-12-01T10:00:00.000000Z","server_name":"s","server_argv":["s"],"cwd":"/","server_pid":2,"proxy_pid":1}"#.to_string(),
            frame(0, "2026-12-01T10:00:01.000000Z", "c2s", "request", 20, request, None),
            frame(1, "2026-12-01T10:00:01.100000Z", "s2c", "response", 5000, original, None),
            frame(2, "2026-12-01T10:00:01.300000Z", "p2c", "response", 300, compacted, Some(1)),
            frame(3, "2026-12-01T10:00:02.000000Z", "c2s", "request", 20, &request.replace(":7,", ":8,"), None),
            frame(4, "2026-12-01T10:00:02.100000Z", "s2c", "response", 40, &original.replace(":7,", ":8,"), None),
        ];
        std::fs::write(&log, lines.join("\n") + "\n").unwrap();
        let (spans, _, _) = spans_of(&log);
        assert_eq!(spans.len(), 3, "two calls and the session");
        let (compacted, whole) = (&spans[0], &spans[1]);
        assert_eq!(text(compacted, "jsonrpc.request.id"), "7");
        assert_eq!(
            text(compacted, "ctxopt.response.tokens"),
            "5000",
            "the server's original"
        );
        assert_eq!(text(compacted, "ctxopt.response.delivered_tokens"), "300");
        assert_eq!(text(compacted, "ctxopt.response.saved_tokens"), "4700");
        assert_eq!(
            compacted.end_time_unix_nano - compacted.start_time_unix_nano,
            300_000_000,
            "ends when the client got the compacted frame"
        );
        assert_eq!(text(whole, "jsonrpc.request.id"), "8");
        assert!(attr(whole, "ctxopt.response.compacted").is_none());
        assert!(attr(whole, "ctxopt.response.saved_tokens").is_none());
    }
}
