//! What the frame log says about an exchange: pairing per direction, latency, protocol
//! revision, tool and error facts, `_meta` tokens. Each metric has a canary that makes it
//! non-zero on purpose.

use ctxopt::framelog::{Direction, Frame, FrameKind};

use crate::support::log::{read_log, schema_errors, Log};
use crate::support::meta_with_icon;
use crate::support::proxy::{ProxyCmd, Session};

fn exchange(steps: &[String], input: &str) -> Log {
    let run = ProxyCmd::fixture(steps).run(input.as_bytes());
    assert!(run.status.success(), "{:?} {}", run.status, run.stderr);
    read_log(&run.log)
}

fn only(log: &Log, dir: Direction, kind: FrameKind) -> Vec<&Frame> {
    log.frames
        .iter()
        .filter(|f| f.dir == dir && f.kind == kind)
        .collect()
}

#[test]
fn meta_tokens_count_a_meta_block_and_are_zero_without_one() {
    let result = format!(
        r#"{{"content":[{{"type":"text","text":"hi"}}],"_meta":{}}}"#,
        meta_with_icon(3000)
    );
    let log = exchange(
        &["result:".to_string() + &result, "respond".into()],
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"}}\n",
    );
    let req = only(&log, Direction::C2s, FrameKind::Request)[0];
    let res = only(&log, Direction::S2c, FrameKind::Response)[0];
    assert_eq!(req.meta_tokens, 0);
    assert!(res.meta_tokens > 1000, "meta_tokens {}", res.meta_tokens);
    assert!(res.tokens > res.meta_tokens);
    // The rest of the frame is what is left when the envelope is gone.
    let stripped = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#;
    let o200k = ctxopt::tokenizer::Tokenizer::O200kBase;
    assert_eq!(res.tokens - res.meta_tokens, o200k.count(stripped) as u64);
    assert_eq!(res.tokens, o200k.count(res.raw.as_deref().unwrap()) as u64);
}

#[test]
fn latency_reflects_a_server_that_sleeps() {
    let log = exchange(
        &["delay-ms:250".into(), "respond".into()],
        "{\"jsonrpc\":\"2.0\",\"id\":\"slow\",\"method\":\"tools/list\"}\n",
    );
    let res = only(&log, Direction::S2c, FrameKind::Response)[0];
    assert_eq!(res.method.as_deref(), Some("tools/list"));
    let latency = res.latency_us.expect("paired response has a latency");
    assert!(latency >= 250_000, "latency_us {latency}");
    assert_eq!(
        only(&log, Direction::C2s, FrameKind::Request)[0].latency_us,
        None
    );
}

#[test]
fn protocol_is_per_request_in_a_stateless_exchange() {
    let meta = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{{meta}}}}}\n\
         {{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{{{meta}}}}}\n"
    );
    let log = exchange(&["respond".into()], &input);
    assert_eq!(log.frames.len(), 4);
    for f in &log.frames {
        assert_eq!(f.protocol.as_deref(), Some("2026-07-28"), "{f:?}");
        assert!(f.kind != FrameKind::Request || f.meta_tokens > 0);
    }
}

#[test]
fn protocol_is_the_negotiated_revision_in_an_initialize_session() {
    let cmd = ProxyCmd::fixture(&[
        r#"result:{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"f","version":"1"}}"#,
        "respond",
    ])
    // A server without tools: with injection the proxy would answer tools/list itself.
    .option(&["--inject", "none"]);
    let mut s = Session::start(&cmd);
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}\n");
    s.recv();
    s.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
    let (_, status) = s.close();
    assert!(status.success());
    let log = read_log(cmd.log_path());
    let protocols: Vec<(Direction, Option<&str>, Option<&str>)> = log
        .frames
        .iter()
        .map(|f| (f.dir, f.method.as_deref(), f.protocol.as_deref()))
        .collect();
    use Direction::*;
    assert_eq!(
        protocols,
        [
            (C2s, Some("initialize"), Some("2025-11-25")),
            (S2c, Some("initialize"), Some("2025-06-18")),
            (C2s, Some("notifications/initialized"), Some("2025-06-18")),
            (C2s, Some("tools/list"), Some("2025-06-18")),
            (S2c, Some("tools/list"), Some("2025-06-18")),
        ]
    );
}

#[test]
fn requests_pair_per_direction_with_overlapping_ids() {
    let scratch = tempfile::tempdir().unwrap();
    let server_request = scratch.path().join("server-request.jsonl");
    std::fs::write(
        &server_request,
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"roots/list\"}\n",
    )
    .unwrap();
    let cmd = ProxyCmd::fixture(&[
        format!("emit:{}", server_request.display()),
        "respond".into(),
    ]);
    let mut s = Session::start(&cmd);
    assert!(s.recv().ends_with(b"\"roots/list\"}\n"));
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"tools/list\"}\n");
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"roots\":[]}}\n");
    let (_, status) = s.close();
    assert!(status.success());
    let log = read_log(cmd.log_path());
    let c2s_res = only(&log, Direction::C2s, FrameKind::Response);
    let s2c_res = only(&log, Direction::S2c, FrameKind::Response);
    assert_eq!(c2s_res[0].method.as_deref(), Some("roots/list"));
    assert_eq!(s2c_res[0].method.as_deref(), Some("tools/list"));
    assert!(c2s_res[0].latency_us.is_some() && s2c_res[0].latency_us.is_some());
}

#[test]
fn tool_calls_carry_the_tool_and_is_error_and_errors_their_code() {
    let log = exchange(
        &[
            r#"result:{"content":[{"type":"text","text":"boom"}],"isError":true}"#.into(),
            "respond".into(),
        ],
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"explode\",\"arguments\":{}}}\n\
         {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\n",
    );
    let res = only(&log, Direction::S2c, FrameKind::Response);
    assert_eq!(res[0].tool.as_deref(), Some("explode"));
    assert_eq!(res[0].is_error, Some(true));
    assert_eq!(res[1].tool, None);
    assert_eq!(res[1].is_error, None, "is_error only on tools/call results");

    let scratch = tempfile::tempdir().unwrap();
    let error = scratch.path().join("error.jsonl");
    std::fs::write(
        &error,
        "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32601,\"message\":\"Method not found\"}}\n",
    )
    .unwrap();
    let log = exchange(&[format!("emit:{}", error.display())], "");
    assert_eq!(log.frames[0].kind, FrameKind::Error);
    assert_eq!(log.frames[0].error_code, Some(-32601));
}

#[test]
fn batches_carry_per_item_accounting() {
    let log = exchange(
        &["respond".into()],
        "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"a\",\"_meta\":{\"progressToken\":1}}},\
          {\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"},\
          {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]\n",
    );
    let req = &log.frames[0];
    assert_eq!(req.kind, FrameKind::Batch);
    let items = req.items.as_ref().unwrap();
    let kinds: Vec<_> = items.iter().map(|i| i.kind).collect();
    assert_eq!(
        kinds,
        [
            FrameKind::Request,
            FrameKind::Notification,
            FrameKind::Request
        ]
    );
    assert!(items[0].meta_tokens > 0 && items[2].meta_tokens == 0);
    assert!(req.meta_tokens > 0);
    let res = &log.frames[1];
    assert_eq!(res.dir, Direction::S2c);
    let items = res.items.as_ref().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0].method.as_deref(), Some("tools/call"));
    assert_eq!(items[0].tool.as_deref(), Some("a"));
    assert_eq!(items[0].is_error, Some(false));
    assert_eq!(items[1].method.as_deref(), Some("ping"));
    assert!(items.iter().all(|i| i.latency_us.is_some() && i.tokens > 0));
}

#[test]
fn a_session_log_snapshot() {
    let cmd = ProxyCmd::fixture(&[
        r#"result:{"content":[{"type":"text","text":"ok"}]}"#,
        "respond",
    ])
    .option(&["--name", "fixture"]);
    let mut s = Session::start(&cmd);
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\"}}\n");
    s.recv();
    s.send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n");
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hi\"}}}\n");
    s.recv();
    let (_, status) = s.close();
    assert!(status.success());
    read_log(cmd.log_path());
    let text = std::fs::read_to_string(cmd.log_path()).unwrap();
    insta::with_settings!({filters => vec![
        (r#""(ts|started)":"[^"]+""#, r#""$1":"[TIME]""#),
        (r#""(server_pid|proxy_pid|latency_us)":[0-9]+"#, r#""$1":"[N]""#),
        (r#""cwd":"[^"]*""#, r#""cwd":"[CWD]""#),
        (r#""server_argv":\["[^"]*fixture-server"#, r#""server_argv":["[FIXTURE]"#),
        (r#""(proxy_version|ctxopt_version)":"[^"]+""#, r#""$1":"[VERSION]""#),
    ]}, {
        insta::assert_snapshot!(text);
    });
}

/// The real `tools/list` captures; the few that keep only the `result` member get a JSON-RPC
/// envelope in front, nothing else changes.
fn real_tools_lists() -> Vec<(String, Vec<u8>)> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-world/tier1-tools-list");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-wire.jsonl"))
        .collect();
    files.sort();
    files
        .iter()
        .enumerate()
        .map(|(i, path)| {
            let capture = std::fs::read(path).unwrap();
            let parsed: serde_json::Value = serde_json::from_slice(&capture).unwrap();
            if parsed.get("id").is_some() {
                return (
                    path.file_name().unwrap().to_string_lossy().into_owned(),
                    capture,
                );
            }
            let mut frame = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},").into_bytes();
            frame.extend_from_slice(&capture[1..]);
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                frame,
            )
        })
        .collect()
}

/// `_meta` removal done the obvious way, on a parsed tree, for cross-checking.
fn drop_meta(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.shift_remove("_meta");
            map.values_mut().for_each(drop_meta);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(drop_meta),
        _ => {}
    }
}

#[test]
fn real_tools_lists_relay_byte_exact_and_meta_tokens_match_a_tree_based_strip() {
    let captures = real_tools_lists();
    let scratch = tempfile::tempdir().unwrap();
    let stream: Vec<u8> = captures.iter().flat_map(|(_, f)| f.clone()).collect();
    let file = scratch.path().join("captures.jsonl");
    std::fs::write(&file, &stream).unwrap();
    let run =
        ProxyCmd::fixture(&["chunk:1000".to_string(), format!("emit:{}", file.display())]).run(b"");
    assert!(run.status.success(), "{}", run.stderr);
    assert!(run.stdout == stream, "captures relayed byte-exact");

    let log = read_log(&run.log);
    assert_eq!(log.frames.len(), captures.len());
    let o200k = ctxopt::tokenizer::Tokenizer::O200kBase;
    let mut cross_checked_with_meta = 0;
    for ((name, _), frame) in captures.iter().zip(&log.frames) {
        let raw = frame.raw.as_deref().unwrap();
        assert_eq!(frame.kind, FrameKind::Response, "{name}");
        assert_eq!(frame.tokens, o200k.count(raw) as u64, "{name}");
        let mut tree: serde_json::Value = serde_json::from_str(raw).unwrap();
        if !raw.contains("\"_meta\"") {
            assert_eq!(frame.meta_tokens, 0, "{name}");
            continue;
        }
        // Compare only where re-serializing the tree reproduces the wire text exactly.
        if serde_json::to_string(&tree).unwrap() != raw {
            continue;
        }
        drop_meta(&mut tree);
        let without = o200k.count(&serde_json::to_string(&tree).unwrap()) as u64;
        assert_eq!(frame.meta_tokens, frame.tokens - without, "{name}");
        assert!(frame.meta_tokens > 0, "{name}");
        cross_checked_with_meta += 1;
    }
    assert!(
        cross_checked_with_meta >= 3,
        "{cross_checked_with_meta} captures with _meta checked"
    );
}

#[test]
fn the_trailer_pins_the_session_and_the_schema_refuses_malformed_pins() {
    let cmd = ProxyCmd::fixture(&[
        r#"method-result:initialize:{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"f","version":"7.1"}}"#,
        r#"method-result:tools/list:{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}"#,
        "respond",
    ])
    .option(&["--inject", "none"]);
    let mut s = Session::start(&cmd);
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{},\"clientInfo\":{\"name\":\"cl\",\"version\":\"3\"}}}\n");
    s.recv();
    s.send(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n");
    s.recv();
    let (_, status) = s.close();
    assert!(status.success());
    let log = read_log(cmd.log_path());
    let pins = log.trailer.pins.clone().expect("the trailer has pins");
    let peer = |name: &str, version: &str| ctxopt::framelog::Identity {
        name: name.into(),
        version: Some(version.into()),
    };
    assert_eq!(pins.client, Some(peer("cl", "3")));
    assert_eq!(pins.server, Some(peer("f", "7.1")));
    assert_eq!(pins.protocols, ["2025-11-25", "2025-06-18"]);
    let tools = serde_json::json!([{"name": "echo", "inputSchema": {"type": "object"}}]);
    assert_eq!(
        pins.catalog_digests,
        [ctxopt::evidence::catalog::digest(tools.as_array().unwrap())]
    );
    assert_eq!(pins.ctxopt_version, log.header.proxy_version);
    assert!(pins.changed.is_empty(), "{:?}", pins.changed);
    // The schema holds the pins to their shape.
    let trailer = serde_json::to_value(ctxopt::framelog::LogLine::Trailer(log.trailer)).unwrap();
    assert!(schema_errors(&trailer).is_empty());
    for (pointer, bad) in [
        ("/pins/changed", serde_json::json!(["weather"])),
        ("/pins/catalog_digests", serde_json::json!(["not-a-digest"])),
        ("/pins/client", serde_json::json!({"name": "cl"})),
        ("/pins/ctxopt_version", serde_json::json!("")),
    ] {
        let mut broken = trailer.clone();
        *broken.pointer_mut(pointer).unwrap() = bad;
        assert!(!schema_errors(&broken).is_empty(), "{pointer} accepted");
    }
}
