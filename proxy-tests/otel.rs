//! OpenTelemetry export against a real OTLP/HTTP receiver (`peers/otlp_receiver.py`, on the
//! official `opentelemetry-proto` classes): a real session (TS SDK client × server-filesystem)
//! exported live by the proxy and again by `ctxopt export` from its log; a collector that is
//! down or refuses; and, with nothing configured, no socket at all.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use ctxopt::framelog::{Direction, Frame, FrameKind};
use serde_json::Value;

use crate::interop::peers::{fixture_tree, Client, Peers, Server};
use crate::interop::session::{proxied, run_driver};
use crate::support::log::{read_log, Log};
use crate::support::peers::peer;
use crate::support::proxy::{finish, ProxyCmd};

const CTXOPT: &str = env!("CARGO_BIN_EXE_ctxopt");

/// The receiver, started with `args`; it prints what it decoded until [`Receiver::stop`].
struct Receiver {
    child: Child,
    stdin: Option<ChildStdin>,
    out: BufReader<std::process::ChildStdout>,
    port: u16,
}

impl Receiver {
    fn start(args: &[&str]) -> Option<Receiver> {
        let python = peer(".venv/bin/python")?;
        let script = peer("otlp_receiver.py")?;
        let mut child = Command::new(python)
            .arg(script)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().expect("stdout"));
        let mut first = String::new();
        out.read_line(&mut first).expect("the receiver's port line");
        let port: Value = serde_json::from_str(&first).unwrap_or_else(|e| {
            panic!("receiver said {first:?} ({e}); is opentelemetry-proto installed?")
        });
        Some(Receiver {
            child,
            stdin,
            out,
            port: port["port"].as_u64().expect("port") as u16,
        })
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops the receiver and returns every request it decoded.
    fn stop(mut self) -> Vec<Value> {
        drop(self.stdin.take());
        let requests = (&mut self.out)
            .lines()
            .map(|l| serde_json::from_str(&l.expect("receiver line")).expect("receiver JSON"))
            .collect();
        self.child.wait().expect("receiver exit");
        requests
    }
}

/// A port on 127.0.0.1 where nothing listens (bound, then released).
pub(crate) fn closed_port_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

/// Every item of one signal in the receiver's requests: `path`, then the nesting
/// (`resource_spans`, `scope_spans`, `spans` for traces).
fn items(requests: &[Value], path: &str, nesting: [&str; 3]) -> Vec<Value> {
    let list = |v: &Value, key: &str| v[key].as_array().cloned().unwrap_or_default();
    requests
        .iter()
        .filter(|r| r["path"] == path)
        .flat_map(|r| list(&r["body"], nesting[0]))
        .flat_map(|resource| list(&resource, nesting[1]))
        .flat_map(|scope| list(&scope, nesting[2]))
        .collect()
}

/// Every span in the receiver's trace requests.
fn spans(requests: &[Value]) -> Vec<Value> {
    items(
        requests,
        "/v1/traces",
        ["resource_spans", "scope_spans", "spans"],
    )
}

/// Every metric in the receiver's metric requests.
fn metrics(requests: &[Value]) -> Vec<Value> {
    items(
        requests,
        "/v1/metrics",
        ["resource_metrics", "scope_metrics", "metrics"],
    )
}

/// An attribute's value as text (the JSON mapping writes 64-bit integers as strings).
fn attr(span: &Value, key: &str) -> Option<String> {
    let value = span["attributes"]
        .as_array()?
        .iter()
        .find(|kv| kv["key"] == key)?["value"]
        .clone();
    ["string_value", "int_value", "bool_value"]
        .iter()
        .find_map(|k| value.get(*k))
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string())
        })
}

fn nanos(ts: &str) -> String {
    chrono::DateTime::parse_from_rfc3339(ts)
        .expect("rfc3339")
        .timestamp_nanos_opt()
        .expect("in range")
        .to_string()
}

/// Requests and notifications in the log: each is one span.
fn operations(log: &Log) -> Vec<&Frame> {
    log.frames
        .iter()
        .filter(|f| matches!(f.kind, FrameKind::Request | FrameKind::Notification))
        .collect()
}

/// The expected spans of `log`, checked against what the receiver got.
fn assert_spans_match_log(spans: &[Value], log: &Log) {
    let ops = operations(log);
    assert_eq!(
        spans.len(),
        ops.len() + 1,
        "one span per pair and notification, plus the session"
    );
    let session = spans
        .iter()
        .find(|s| s.get("parent_span_id").is_none())
        .expect("a root span for the session");
    assert_eq!(
        session["name"],
        format!("session {}", log.header.server_name)
    );
    assert_eq!(session["start_time_unix_nano"], nanos(&log.header.started));
    assert_eq!(session["end_time_unix_nano"], nanos(&log.trailer.ts));
    assert_eq!(attr(session, "ctxopt.exit.code").as_deref(), Some("0"));
    for op in &ops {
        let span = spans
            .iter()
            .find(|s| attr(s, "ctxopt.request.seq") == Some(op.seq.to_string()))
            .unwrap_or_else(|| panic!("no span for seq {}", op.seq));
        let method = op.method.as_deref().expect("method");
        let name = match &op.tool {
            Some(tool) => format!("{method} {tool}"),
            None => method.to_string(),
        };
        assert_eq!(span["name"], name.as_str());
        assert_eq!(span["trace_id"], session["trace_id"], "{name}");
        assert_eq!(span["parent_span_id"], session["span_id"], "{name}");
        let kind = if op.dir == Direction::C2s {
            "SPAN_KIND_CLIENT"
        } else {
            "SPAN_KIND_SERVER"
        };
        assert_eq!(span["kind"], kind, "{name}");
        assert_eq!(attr(span, "mcp.method.name").as_deref(), Some(method));
        assert_eq!(attr(span, "network.transport").as_deref(), Some("pipe"));
        assert_eq!(
            attr(span, "mcp.protocol.version").as_deref(),
            Some("2025-11-25"),
            "{name}"
        );
        assert!(
            attr(span, "mcp.session.id").is_some(),
            "{name}: initialize era"
        );
        assert_eq!(
            attr(span, "ctxopt.request.tokens"),
            Some(op.tokens.to_string())
        );
        assert_eq!(span["start_time_unix_nano"], nanos(&op.ts));
        assert_eq!(attr(span, "gen_ai.tool.name"), op.tool.clone());
        assert_eq!(
            attr(span, "gen_ai.operation.name").is_some(),
            method == "tools/call",
            "{name}"
        );
        assert!(
            attr(span, "gen_ai.tool.call.arguments").is_none(),
            "content stays out unless opted in"
        );
        if op.kind == FrameKind::Notification {
            assert_eq!(span["start_time_unix_nano"], span["end_time_unix_nano"]);
            continue;
        }
        let id = op.id.as_deref().expect("request id");
        assert_eq!(
            attr(span, "jsonrpc.request.id").as_deref(),
            Some(id.trim_matches('"'))
        );
        let answer = log
            .frames
            .iter()
            .find(|f| {
                f.seq > op.seq
                    && f.id.as_deref() == Some(id)
                    && f.dir != op.dir
                    && matches!(f.kind, FrameKind::Response | FrameKind::Error)
            })
            .unwrap_or_else(|| panic!("{name}: no answer in the log"));
        assert_eq!(span["end_time_unix_nano"], nanos(&answer.ts), "{name}");
        assert_eq!(
            attr(span, "ctxopt.response.tokens"),
            Some(answer.tokens.to_string())
        );
        let failed = answer.is_error == Some(true);
        assert_eq!(
            attr(span, "error.type").as_deref(),
            failed.then_some("tool_error"),
            "{name}"
        );
        assert_eq!(
            span["status"]["code"].as_str(),
            failed.then_some("STATUS_CODE_ERROR"),
            "{name}"
        );
    }
    assert!(
        spans
            .iter()
            .any(|s| attr(s, "error.type").as_deref() == Some("tool_error")),
        "the session reads a missing file: one span must carry the tool error"
    );
}

/// The histogram counts every request the client sent; the token counter adds up each tool's
/// response tokens as the log has them.
fn assert_metrics_match_log(metrics: &[Value], log: &Log) {
    let histogram = metrics
        .iter()
        .find(|m| m["name"] == "mcp.client.operation.duration")
        .expect("the duration histogram");
    assert_eq!(histogram["unit"], "s");
    let count: u64 = histogram["histogram"]["data_points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| {
            p["count"]
                .as_str()
                .expect("count")
                .parse::<u64>()
                .expect("u64")
        })
        .sum();
    let client_requests = log
        .dir(Direction::C2s)
        .iter()
        .filter(|f| f.kind == FrameKind::Request)
        .count() as u64;
    assert_eq!(count, client_requests);
    let tokens = metrics
        .iter()
        .find(|m| m["name"] == "ctxopt.tool.tokens")
        .expect("the token counter");
    let point = tokens["sum"]["data_points"]
        .as_array()
        .expect("points")
        .iter()
        .find(|p| {
            let attrs = p["attributes"].to_string();
            attrs.contains("read_text_file") && attrs.contains("\"response\"")
        })
        .expect("read_text_file response tokens");
    let expected: u64 = log
        .dir(Direction::S2c)
        .iter()
        .filter(|f| f.tool.as_deref() == Some("read_text_file"))
        .map(|f| f.tokens)
        .sum();
    assert!(expected > 0);
    assert_eq!(point["as_int"], expected.to_string());
}

/// Spans keyed by span id, for comparing two exports of one session.
fn by_id(spans: &[Value]) -> std::collections::BTreeMap<String, &Value> {
    spans
        .iter()
        .map(|s| (s["span_id"].as_str().expect("span id").to_string(), s))
        .collect()
}

#[test]
fn a_real_session_exported_live_and_from_its_log_gives_the_same_spans() {
    let Some(peers) = Peers::locate() else { return };
    let Some(live) = Receiver::start(&[]) else {
        return;
    };
    let replayed = Receiver::start(&[]).expect("a second receiver");
    let tmp = tempfile::tempdir().expect("tempdir");
    let log_path = tmp.path().join("session.jsonl");
    let fixture = fixture_tree();
    let server = peers.server_command(Server::Filesystem, &fixture);
    let mut target: Vec<OsString> = proxied(&server, &log_path);
    target.splice(1..1, ["--otlp-endpoint".into(), live.url().into()]);
    let command = peers.client_command(Client::Ts, Server::Filesystem, &fixture, &target);
    run_driver(&command, &[]);
    let log = read_log(&log_path);
    assert!(log.trailer.errors.is_empty(), "{:?}", log.trailer.errors);

    let export = Command::new(CTXOPT)
        .args(["export", "--otlp", &replayed.url()])
        .arg(&log_path)
        .output()
        .expect("run ctxopt export");
    let stderr = String::from_utf8_lossy(&export.stderr);
    assert!(export.status.success(), "{stderr}");
    let expected = operations(&log).len() + 1;
    assert!(
        stderr.contains(&format!("{expected} spans from 1 session(s)")),
        "{stderr}"
    );

    let (live, replayed) = (live.stop(), replayed.stop());
    for requests in [&live, &replayed] {
        assert!(requests
            .iter()
            .all(|r| r["headers"]["content-type"] == "application/x-protobuf"));
        let resource = &requests[0]["body"]["resource_spans"][0]["resource"]["attributes"][0];
        assert_eq!(resource["key"], "service.name");
        assert_eq!(resource["value"]["string_value"], "ctxopt-proxy");
        assert_spans_match_log(&spans(requests), &log);
        assert_metrics_match_log(&metrics(requests), &log);
    }
    let (live_spans, replayed_spans) = (spans(&live), spans(&replayed));
    assert_eq!(
        by_id(&live_spans),
        by_id(&replayed_spans),
        "live and replayed spans are the same"
    );
    assert_eq!(metrics(&live), metrics(&replayed));
}

/// A recorded log from the repository, with its operation count.
fn recorded_log() -> (PathBuf, usize) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("frame-logs/ts-filesystem.jsonl");
    let log = read_log(&path);
    let spans = operations(&log).len() + 1;
    (path, spans)
}

#[test]
fn export_to_a_collector_that_is_down_counts_every_span_dropped() {
    let (path, spans) = recorded_log();
    let output = Command::new(CTXOPT)
        .args(["export", "--otlp", &closed_port_url()])
        .arg(&path)
        .output()
        .expect("run ctxopt export");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{spans} of {spans} spans dropped")),
        "{stderr}"
    );
    assert!(stderr.contains("metrics not exported"), "{stderr}");
}

#[test]
fn export_to_a_collector_that_refuses_counts_every_span_dropped() {
    let Some(receiver) = Receiver::start(&["--status", "503"]) else {
        return;
    };
    let (path, spans) = recorded_log();
    let output = Command::new(CTXOPT)
        .args(["export", "--otlp", &receiver.url()])
        .arg(&path)
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents%20one")
        .env("OTEL_SERVICE_NAME", "fleet")
        .output()
        .expect("run ctxopt export");
    let requests = receiver.stop();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{spans} of {spans} spans dropped")),
        "{stderr}"
    );
    assert!(stderr.contains("HTTP 503"), "{stderr}");
    assert_eq!(
        self::spans(&requests).len(),
        spans,
        "the receiver saw them all, and refused"
    );
    assert!(requests
        .iter()
        .all(|r| r["headers"]["x-team"] == "agents one"));
    let resource = &requests[0]["body"]["resource_spans"][0]["resource"]["attributes"][0];
    assert_eq!(resource["value"]["string_value"], "fleet");
}

/// Two requests and a notification to the fixture server, which answers the requests.
const SESSION: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}\n";

#[test]
fn a_proxy_whose_collector_is_down_relays_the_same_bytes_and_counts_the_drops() {
    let plain = ProxyCmd::fixture(&["respond"])
        .option(&["--inject", "none"])
        .run(SESSION);
    let down = ProxyCmd::fixture(&["respond"])
        .option(&["--inject", "none", "--otlp-endpoint", &closed_port_url()])
        .run(SESSION);
    assert_eq!(down.stdout, plain.stdout, "the client gets the same bytes");
    assert!(down.status.success(), "{}", down.stderr);
    let log = read_log(&down.log);
    // Two pairs, one notification, the session.
    let line = "otlp export: 4 of 4 spans dropped";
    assert!(
        log.trailer.errors.iter().any(|e| e.starts_with(line)),
        "{:?}",
        log.trailer.errors
    );
    assert!(down.stderr.contains(line), "{}", down.stderr);
    assert!(read_log(&plain.log).trailer.errors.is_empty());
}

/// The `socket(2)` calls for IP sockets that `ctxopt-proxy` (with `options`) and its server
/// made in a short session, as strace saw them.
fn ip_sockets(options: &[&str]) -> Vec<String> {
    let tmp = tempfile::tempdir().expect("tempdir");
    let trace = tmp.path().join("strace.txt");
    let mut strace = Command::new("strace");
    strace
        .args(["-f", "-qq", "-e", "trace=socket", "-o"])
        .arg(&trace)
        .arg(crate::support::proxy::PROXY)
        .args(["--no-log", "--store", ":memory:", "--inject", "none"])
        .args(options)
        .arg("--")
        .arg(crate::support::proxy::fixture_server())
        .arg("respond");
    // Nothing configured: no OTEL_* variable reaches the proxy.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("OTEL_") {
            strace.env_remove(key);
        }
    }
    let mut child = strace
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace is needed for this test (Debian: apt-get install strace)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(SESSION)
        .expect("write");
    let (_, stderr, status) = finish(child);
    assert!(status.success(), "{stderr}");
    std::fs::read_to_string(&trace)
        .expect("strace output")
        .lines()
        .filter(|l| l.contains("AF_INET"))
        .map(str::to_string)
        .collect()
}

#[test]
fn with_nothing_configured_no_socket_is_opened() {
    assert_eq!(ip_sockets(&[]), Vec::<String>::new());
    // The canary: the same check sees the socket an endpoint makes the exporter open.
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let sockets = ip_sockets(&["--otlp-endpoint", &receiver.url()]);
    assert!(
        !sockets.is_empty(),
        "strace saw no socket with an endpoint configured"
    );
    assert!(!spans(&receiver.stop()).is_empty());
}

#[test]
fn a_traceparent_in_meta_continues_into_the_exported_span() {
    let Some(receiver) = Receiver::start(&[]) else {
        return;
    };
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"t\",\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"traceparent\":\"00-{trace}-{parent}-01\",\"tracestate\":\"rojo=1\"}}}}}}\n\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{{\"name\":\"t\",\"_meta\":{{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}}}}\n"
    );
    let run = ProxyCmd::fixture(&["respond"])
        .option(&["--inject", "none", "--otlp-endpoint", &receiver.url()])
        .run(input.as_bytes());
    assert!(run.status.success(), "{}", run.stderr);
    let spans = spans(&receiver.stop());
    let log = read_log(&run.log);
    let span_of = |id: &str| {
        let seq = log
            .dir(Direction::C2s)
            .into_iter()
            .find(|f| f.id.as_deref() == Some(id))
            .expect("request logged")
            .seq;
        spans
            .iter()
            .find(|s| attr(s, "ctxopt.request.seq") == Some(seq.to_string()))
            .unwrap_or_else(|| panic!("no span for request {id}"))
    };
    let traced = span_of("1");
    assert_eq!(traced["trace_id"], trace);
    assert_eq!(traced["parent_span_id"], parent);
    assert_eq!(traced["trace_state"], "rojo=1");
    // Canary: a request without one stays in the session's own trace.
    let session = spans
        .iter()
        .find(|s| s.get("parent_span_id").is_none())
        .expect("the session span");
    let untraced = span_of("2");
    assert_eq!(untraced["trace_id"], session["trace_id"]);
    assert_ne!(untraced["trace_id"], trace);
}
