use serde_json::json;

use super::*;
use crate::import::mcp::{ingest, FramePair};

fn scope() -> Scope {
    Scope {
        workspace: "/ws".into(),
        server: "filesystem".into(),
        session: "s1".into(),
    }
}

/// Stores the records one real-looking `tools/call` exchange gives.
fn record_call(store: &mut Store, seq: u64, tool: &str, args: Value, result: Value) {
    let request = json!({"jsonrpc": "2.0", "id": seq, "method": "tools/call",
                         "params": {"name": tool, "arguments": args}})
    .to_string();
    let response = json!({"jsonrpc": "2.0", "id": seq, "result": result}).to_string();
    let ts = format!("2026-03-01T10:00:{:02}Z", seq % 60);
    let pair = FramePair {
        request: &request,
        response: &response,
        log_path: Some("logs/run.jsonl"),
        seq: Some(seq),
        timestamp: Some(&ts),
    };
    let records = ingest(&pair, &|_| false).unwrap();
    store.insert(&scope(), &records).unwrap();
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

fn call(store: &mut Store, tool: InjectedTool, args: Value) -> Value {
    let result = handle_call(tool, &args, store, &scope()).unwrap();
    let schema = &tool.definition()["outputSchema"];
    let structured = &result["structuredContent"];
    if let Err(e) = jsonschema::draft7::validate(schema, structured) {
        panic!(
            "{} output breaks its schema: {e}\n{structured:#}",
            tool.name()
        );
    }
    result
}

fn session() -> Store {
    let mut store = Store::open_in_memory().unwrap();
    record_call(
        &mut store,
        3,
        "read_text_file",
        json!({"path": "/ws/src/billing.rs"}),
        text("pub fn round_cents(x: f64) -> i64 { x as i64 }"),
    );
    record_call(
        &mut store,
        5,
        "read_text_file",
        json!({"path": "/ws/src/rounding.rs"}),
        json!({"content": [{"type": "text",
            "text": "Error: ENOENT: no such file or directory, open '/ws/src/rounding.rs'"}],
            "isError": true}),
    );
    record_call(
        &mut store,
        7,
        "run_tests",
        json!({"filter": "billing"}),
        text("test billing::rounds_half_up ... FAILED\nassertion failed: round_cents(2.5) == 3"),
    );
    record_call(
        &mut store,
        9,
        "read_text_file",
        json!({"path": "/ws/src/billing.rs"}),
        text("pub fn round_cents(x: f64) -> i64 { x.round() as i64 }"),
    );
    store
}

#[test]
fn build_context_quotes_errors_and_maps_sources_to_frames() {
    let mut store = session();
    let result = call(
        &mut store,
        InjectedTool::BuildContext,
        json!({"task": "fix the failing billing rounding test; round_cents needs /ws/src/rounding.rs"}),
    );
    let context = result["content"][0]["text"].as_str().unwrap();
    assert!(
        context.contains("ENOENT: no such file or directory, open '/ws/src/rounding.rs'"),
        "{context}"
    );
    assert!(context.contains("x.round() as i64"), "{context}");
    let s = &result["structuredContent"];
    assert_eq!(s["context"], context);
    assert_eq!(s["records"], 5);
    let error_source = s["sources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|src| src["kind"] == "error")
        .expect("the error is a source");
    assert_eq!(error_source["log"], "logs/run.jsonl");
    assert_eq!(error_source["seq"], 5);
    assert_eq!(error_source["tool"], "read_text_file");
    assert_eq!(error_source["server"], "filesystem");
    let tag = format!("record {}", error_source["record"].as_str().unwrap());
    assert!(context.contains(&tag), "{tag} not in {context}");

    let as_json = call(
        &mut store,
        InjectedTool::BuildContext,
        json!({"task": "billing", "format": "json", "budget": 300}),
    );
    let text: Value =
        serde_json::from_str(as_json["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, as_json["structuredContent"]);
    assert_eq!(text["budget"], 300);
}

#[test]
fn ingest_records_then_decisions_and_build_context() {
    let mut store = session();
    let records = json!({"decisions": [
        {"text": "Round half away from zero, never bankers' rounding.", "status": "accepted"},
        {"text": "Use a decimal crate.", "status": "rejected"}],
        "errors": [{"message": "PaymentGatewayTimeout after 30s", "timestamp": "2026-03-01T11:00:00Z"}]});
    let first = call(
        &mut store,
        InjectedTool::IngestRecords,
        json!({"records": records}),
    );
    assert_eq!(
        first["structuredContent"],
        json!({"inserted": 3, "duplicates": 0})
    );
    let again = call(
        &mut store,
        InjectedTool::IngestRecords,
        json!({"records": records}),
    );
    assert_eq!(
        again["structuredContent"],
        json!({"inserted": 0, "duplicates": 3})
    );

    let accepted = call(
        &mut store,
        InjectedTool::GetDecisions,
        json!({"status": "accepted"}),
    );
    let list = accepted["structuredContent"]["decisions"]
        .as_array()
        .unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(
        list[0]["text"],
        "Round half away from zero, never bankers' rounding."
    );
    let all = call(&mut store, InjectedTool::GetDecisions, json!({}));
    assert_eq!(
        all["structuredContent"]["decisions"]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    let built = call(
        &mut store,
        InjectedTool::BuildContext,
        json!({"task": "fix billing rounding"}),
    );
    let context = built["content"][0]["text"].as_str().unwrap();
    assert!(context.contains("Round half away from zero"), "{context}");
}

#[test]
fn search_finds_identifiers_best_first() {
    let mut store = session();
    let found = call(
        &mut store,
        InjectedTool::SearchContext,
        json!({"query": "round_cents ENOENT", "limit": 2}),
    );
    let hits = found["structuredContent"]["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2);
    assert!(hits[0]["score"].as_f64().unwrap() >= hits[1]["score"].as_f64().unwrap());
    assert!(hits.iter().all(|h| h["score"].as_f64().unwrap() > 0.0));
    let none = call(
        &mut store,
        InjectedTool::SearchContext,
        json!({"query": "kubernetes"}),
    );
    assert_eq!(none["structuredContent"]["hits"], json!([]));
    let err = handle_call(
        InjectedTool::SearchContext,
        &json!({"query": "a an"}),
        &mut store,
        &scope(),
    )
    .unwrap_err();
    assert!(matches!(err, ToolError::InvalidArguments { .. }), "{err}");
}

#[test]
fn relevant_errors_rank_by_query_and_include_failing_tests() {
    let mut store = session();
    let found = call(
        &mut store,
        InjectedTool::GetRelevantErrors,
        json!({"query": "billing rounds_half_up"}),
    );
    let errors = found["structuredContent"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["kind"], "testResult");
    assert_eq!(errors[0]["message"], "test billing::rounds_half_up failed");
    let newest = call(
        &mut store,
        InjectedTool::GetRelevantErrors,
        json!({"limit": 1}),
    );
    let errors = newest["structuredContent"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0]["seq"], 7);
}

#[test]
fn file_history_lists_every_read_and_marks_changes() {
    let mut store = session();
    record_call(
        &mut store,
        11,
        "read_text_file",
        json!({"path": "/ws/src/billing.rs"}),
        text("pub fn round_cents(x: f64) -> i64 { x.round() as i64 }"),
    );
    let history = call(
        &mut store,
        InjectedTool::GetFileHistory,
        json!({"path": "src/billing.rs"}),
    );
    let versions = history["structuredContent"]["versions"].as_array().unwrap();
    let seqs: Vec<_> = versions
        .iter()
        .map(|v| v["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [3, 9, 11]);
    let changed: Vec<_> = versions
        .iter()
        .map(|v| v["changed"].as_bool().unwrap())
        .collect();
    assert_eq!(changed, [true, true, false]);
    let other = call(
        &mut store,
        InjectedTool::GetFileHistory,
        json!({"path": "ling.rs"}),
    );
    assert_eq!(other["structuredContent"]["versions"], json!([]));
}

#[test]
fn bad_arguments_and_records_are_tool_errors() {
    let mut store = session();
    let cases = [
        (InjectedTool::BuildContext, json!({})),
        (
            InjectedTool::BuildContext,
            json!({"task": "x", "format": "xml"}),
        ),
        (InjectedTool::BuildContext, json!({"task": "x", "extra": 1})),
        (InjectedTool::GetDecisions, json!({"status": "maybe"})),
        (InjectedTool::GetFileHistory, json!({"path": ""})),
    ];
    for (tool, args) in cases {
        let err = handle_call(tool, &args, &mut store, &scope()).unwrap_err();
        assert!(
            matches!(err, ToolError::InvalidArguments { .. }),
            "{args}: {err}"
        );
        assert_eq!(err.to_call_result()["isError"], true);
    }
    let err = handle_call(
        InjectedTool::IngestRecords,
        &json!({"records": {"errors": [{"message": 3}]}}),
        &mut store,
        &scope(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("errors[0].message"), "{err}");
}

#[test]
fn build_context_is_deterministic() {
    let mut store = session();
    let args = json!({"task": "fix the failing billing rounding test", "format": "json"});
    let first = call(&mut store, InjectedTool::BuildContext, args.clone());
    let second = call(&mut store, InjectedTool::BuildContext, args);
    assert_eq!(first.to_string(), second.to_string());
}

#[test]
fn numeric_argument_errors_name_the_argument_and_its_range() {
    let mut store = session();
    let cases = [
        (
            InjectedTool::BuildContext,
            json!({"task": "x", "budget": -5}),
            "invalid arguments for build_context: `budget` must be an integer in 1..=200000, found -5",
        ),
        (
            InjectedTool::BuildContext,
            json!({"task": "x", "budget": 0}),
            "invalid arguments for build_context: `budget` must be an integer in 1..=200000, found 0",
        ),
        (
            InjectedTool::SearchContext,
            json!({"query": "billing", "limit": 2.5}),
            "invalid arguments for search_context: `limit` must be an integer in 1..=100, found 2.5",
        ),
        (
            InjectedTool::GetRelevantErrors,
            json!({"limit": "10"}),
            "invalid arguments for get_relevant_errors: `limit` must be an integer in 1..=100, found \"10\"",
        ),
    ];
    for (tool, args, message) in cases {
        let err = handle_call(tool, &args, &mut store, &scope()).unwrap_err();
        assert_eq!(err.to_string(), message);
    }
}

#[test]
fn ingest_records_says_which_unknown_fields_it_ignored() {
    let mut store = session();
    let answer = call(
        &mut store,
        InjectedTool::IngestRecords,
        json!({"records": {"extra": 1, "toolOutputs": [{"tool": "make", "output": "ok", "cmd": "make"}]}}),
    );
    let s = &answer["structuredContent"];
    assert_eq!(s["inserted"], 1);
    assert_eq!(s["ignored"], json!(["extra", "toolOutputs[0].cmd"]));
    let text = answer["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("2 unknown field(s) were ignored: extra, toolOutputs[0].cmd"),
        "{text}"
    );
    let clean = call(
        &mut store,
        InjectedTool::IngestRecords,
        json!({"records": {"task": "t", "errors": [{"id": "e9", "message": "boom"}]}}),
    );
    assert!(
        clean["structuredContent"].get("ignored").is_none(),
        "{clean}"
    );
}

#[test]
fn a_huge_task_is_cut_with_a_note_and_the_answer_stays_small() {
    let mut store = session();
    let task = "fix the billing rounding test ".repeat(180_000); // 5.4 MB
    let answer = call(
        &mut store,
        InjectedTool::BuildContext,
        json!({"task": task, "budget": 500}),
    );
    let bytes = answer.to_string().len();
    assert!(bytes < 200_000, "{bytes} bytes");
    let warnings = answer["structuredContent"]["warnings"].to_string();
    assert!(
        warnings.contains(&format!("only its first {MAX_TASK_CHARS} were used")),
        "{warnings}"
    );
    // The task is cut into parts; the answer says which part of how many it shows.
    assert!(answer["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("| record task | part 1 of "));
}

#[test]
fn ingest_records_stores_a_file_reading_command_as_the_file() {
    let mut store = Store::open_in_memory().unwrap();
    let records = json!({"toolOutputs": [
        {"id": "t1", "tool": "cat src/tax.py", "exitCode": 0,
         "output": "def tax(total):\n    return total * 0.2\n"},
        {"id": "t2", "tool": "grep -n tax src/rates.py", "exitCode": 0,
         "output": "3:def tax_rate():\n"}]});
    let answer = call(
        &mut store,
        InjectedTool::IngestRecords,
        json!({"records": records}),
    );
    assert_eq!(
        answer["structuredContent"],
        json!({"inserted": 2, "duplicates": 0})
    );
    let versions = |store: &mut Store, path: &str| {
        let history = call(store, InjectedTool::GetFileHistory, json!({"path": path}));
        history["structuredContent"]["versions"]
            .as_array()
            .unwrap()
            .len()
    };
    assert_eq!(versions(&mut store, "src/tax.py"), 1);
    // Canary: a search naming a file is not a read of it.
    assert_eq!(versions(&mut store, "src/rates.py"), 0);
}
