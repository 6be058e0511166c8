use serde_json::{json, Value};

use super::*;

fn scope() -> Scope {
    Scope {
        workspace: "/ws".into(),
        server: "srv".into(),
        session: "s".into(),
    }
}

fn bridge() -> Bridge {
    Bridge::new(Store::open_in_memory().unwrap(), scope())
}

fn call_frame(id: u64, tool: &str, args: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
    .to_string()
}

fn pair<'a>(request: &'a str, response: &'a str, seq: u64) -> FramePair<'a> {
    FramePair {
        request,
        response,
        log_path: Some("run.jsonl"),
        seq: Some(seq),
        timestamp: None,
    }
}

#[test]
fn answer_routes_injected_calls_only() {
    let b = bridge();
    let frame = b
        .answer(&call_frame(9, "get_decisions", json!({})))
        .expect("an injected call is answered");
    let v: Value = serde_json::from_str(&frame).unwrap();
    assert_eq!(v["id"], 9);
    assert_eq!(v["result"]["structuredContent"], json!({"decisions": []}));
    assert!(v["result"].get("resultType").is_none());
    assert_eq!(
        b.answer(&call_frame(10, "read_file", json!({"path": "a"}))),
        None
    );
    assert_eq!(
        b.answer(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
        None
    );
    assert_eq!(b.answer("not json"), None);

    let modern = json!({"jsonrpc": "2.0", "id": "m", "method": "tools/call",
        "params": {"name": "get_decisions", "arguments": {},
                   "_meta": {protocol::PROTOCOL_VERSION_KEY: protocol::MODERN_VERSION}}});
    let v: Value = serde_json::from_str(&b.answer(&modern.to_string()).unwrap()).unwrap();
    assert_eq!(v["id"], "m");
    assert_eq!(v["result"]["resultType"], "complete");
}

#[test]
fn a_colliding_server_tool_is_relayed_and_ingested_while_ours_is_renamed() {
    let b = bridge();
    let ext = b
        .extend_tools_list(
            r#"{"tools":[{"name":"build_context","inputSchema":{"type":"object"}}]}"#,
        )
        .unwrap();
    assert_eq!(ext.notes().len(), 1);
    assert!(ext.notes()[0].contains("ctxopt_build_context"));
    // The server's own build_context goes to the server, and its results are ingested.
    let server_call = call_frame(1, "build_context", json!({}));
    assert_eq!(b.answer(&server_call), None);
    let response = json!({"jsonrpc": "2.0", "id": 1,
        "result": {"content": [{"type": "text", "text": "server's answer"}]}})
    .to_string();
    assert_eq!(
        b.on_frame_pair(&pair(&server_call, &response, 2))
            .unwrap()
            .inserted,
        1
    );
    // Ours answers under the new name, and is never ingested.
    let ours = call_frame(3, "ctxopt_build_context", json!({"task": "x"}));
    assert!(b.answer(&ours).is_some());
    let err = b.on_frame_pair(&pair(&ours, &response.replace("\"id\":1", "\"id\":3"), 4));
    assert!(
        matches!(err, Err(BridgeError::Skipped(IngestError::InjectedTool(_)))),
        "{err:?}"
    );
}

#[test]
fn paginated_lists_are_extended_on_the_last_page_avoiding_every_page() {
    let b = bridge();
    let first = r#"{"tools":[{"name":"search_context","inputSchema":{"type":"object"}}],"nextCursor":"p2"}"#;
    assert_eq!(b.extend_tools_list(first), None);
    let last = b
        .extend_tools_list(r#"{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}"#)
        .unwrap();
    let names = tools_list::listed_names(&serde_json::from_str(&last.result).unwrap());
    assert!(
        names.contains(&"ctxopt_search_context".to_string()),
        "{names:?}"
    );
    assert_eq!(
        b.lookup("ctxopt_search_context"),
        Some(InjectedTool::SearchContext)
    );
    // A new listing after list_changed starts afresh.
    let again = b
        .extend_tools_list(r#"{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}"#)
        .unwrap();
    assert!(again.renamed.is_empty());
    assert_eq!(
        b.lookup("search_context"),
        Some(InjectedTool::SearchContext)
    );
}

#[test]
fn selection_none_extends_nothing() {
    let b = bridge().with_selection(Selection::None);
    assert_eq!(b.extend_tools_list(r#"{"tools":[]}"#), None);
    assert_eq!(
        b.answer(&call_frame(1, "build_context", json!({"task": "x"}))),
        None
    );
}

#[test]
fn a_missing_store_answers_with_the_reason_and_ingests_nothing() {
    let err = StoreError::NoDefaultLocation;
    let b = Bridge::unavailable(&err, scope());
    let frame = b
        .answer(&call_frame(1, "build_context", json!({"task": "x"})))
        .unwrap();
    let v: Value = serde_json::from_str(&frame).unwrap();
    assert_eq!(v["result"]["isError"], true);
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("not available"));
    let request = call_frame(2, "read", json!({}));
    let response = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    assert!(matches!(
        b.on_frame_pair(&pair(&request, response, 1)),
        Err(BridgeError::NoStore(_))
    ));
    let summary = b.failure_summary().unwrap();
    assert!(summary.starts_with("store: 1 write(s) failed"), "{summary}");
    assert!(summary.contains("no home directory"), "{summary}");
}

#[test]
fn store_failures_are_flagged_first_once_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite3");
    let b = Bridge::new(Store::open_path(&path).unwrap(), scope());
    // Break the store under the bridge: another process drops the table.
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("DROP TABLE records")
        .unwrap();
    let request = call_frame(2, "read", json!({}));
    let response = r#"{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"x"}]}}"#;
    let firsts: Vec<bool> = (0..3)
        .map(
            |seq| match b.on_frame_pair(&pair(&request, response, seq)) {
                Err(BridgeError::Store { first, .. }) => first,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!(firsts, [true, false, false]);
    assert!(b
        .failure_summary()
        .unwrap()
        .starts_with("store: 3 write(s) failed"));
}

#[test]
fn ingested_frames_feed_the_tools() {
    let b = bridge();
    let request = call_frame(4, "read_text_file", json!({"path": "/ws/a.rs"}));
    let response = json!({"jsonrpc": "2.0", "id": 4,
        "result": {"content": [{"type": "text", "text": "fn alpha() {}"}]}})
    .to_string();
    b.on_frame_pair(&pair(&request, &response, 5)).unwrap();
    let result = b.call(InjectedTool::GetFileHistory, &json!({"path": "a.rs"}));
    let versions = result["structuredContent"]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0]["content"], "fn alpha() {}");
    assert_eq!(versions[0]["seq"], 5);
}

/// A `tools/call` answer whose text is 3,000 numbered lines, with `structuredContent`.
fn big_result(structured: Option<Value>) -> String {
    let text: String = (0..3000).map(|i| format!("line {i}\n")).collect();
    let mut result = json!({"content": [{"type": "text", "text": text}]});
    if let Some(s) = structured {
        result["structuredContent"] = s;
    }
    json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string()
}

fn compacting(b: Bridge) -> Bridge {
    b.with_compaction(Limits {
        tokens: 500,
        tokenizer: crate::tokenizer::Tokenizer::O200kBase,
    })
}

#[test]
fn each_reason_to_leave_a_result_over_the_limit_whole_is_given() {
    let args = json!({});
    let left = |reason, structured_tokens, kept_cap| {
        ResultVerdict::LeftWhole(LeftWhole {
            reason,
            limit: 500,
            structured_tokens,
            kept_cap,
        })
    };
    // Canaries: compacted with a store, relayed without a word under the limit.
    let b = compacting(bridge());
    assert!(matches!(
        b.compact_response(&big_result(None), "dump", &args),
        ResultVerdict::Compacted(_)
    ));
    let small = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"ok"}]}}"#;
    assert_eq!(
        b.compact_response(small, "dump", &args),
        ResultVerdict::Relay
    );
    // structuredContent over half the limit, for a tool never listed (its schema unknown).
    let rows: Vec<String> = (0..400).map(|i| format!("row {i}")).collect();
    let structured = json!({"rows": rows});
    let tokens = crate::tokenizer::Tokenizer::O200kBase.count(&structured.to_string()) as u64;
    assert!(tokens > 250);
    assert_eq!(
        b.compact_response(&big_result(Some(structured)), "stats", &args),
        left(LeftWholeReason::StructuredContent, Some(tokens), None)
    );
    // Larger than the store keeps.
    let capped = compacting(bridge()).with_kept_cap(1000);
    assert_eq!(
        capped.compact_response(&big_result(None), "dump", &args),
        left(LeftWholeReason::OverKeptCap, None, Some(1000))
    );
    // No text to compact: an image (its data packs few bytes into a token).
    let data: String = (0..20_000)
        .map(|i| char::from(b'A' + (i * 7 % 26) as u8))
        .collect();
    let image = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [
        {"type": "image", "data": data, "mimeType": "image/png"}]}})
    .to_string();
    assert_eq!(
        b.compact_response(&image, "snapshot", &args),
        left(LeftWholeReason::NoText, None, None)
    );
    // No store to keep it in.
    let unavailable = compacting(Bridge::unavailable(&StoreError::NoDefaultLocation, scope()));
    assert_eq!(
        unavailable.compact_response(&big_result(None), "dump", &args),
        left(LeftWholeReason::NotKept, None, None)
    );
}

#[test]
fn left_whole_reasons_are_stable_strings_in_the_log() {
    for (reason, text) in [
        (LeftWholeReason::StructuredContent, "structured_content"),
        (LeftWholeReason::OverKeptCap, "over_kept_cap"),
        (LeftWholeReason::NotKept, "not_kept"),
        (LeftWholeReason::StoreBusy, "store_busy"),
        (LeftWholeReason::NoText, "no_text"),
    ] {
        assert_eq!(serde_json::to_value(reason).unwrap(), text);
        assert_eq!(
            serde_json::from_value::<LeftWholeReason>(json!(text)).unwrap(),
            reason
        );
    }
    // A later version's reason still reads.
    assert_eq!(
        serde_json::from_value::<LeftWholeReason>(json!("cosmic_rays")).unwrap(),
        LeftWholeReason::Other
    );
}
