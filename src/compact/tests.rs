use serde_json::{json, Value};

use super::*;

const T: Tokenizer = Tokenizer::O200kBase;

fn limits(tokens: usize) -> Limits {
    Limits {
        tokens,
        tokenizer: T,
    }
}

fn call(schema: Schema<'_>) -> Call<'_> {
    static NULL: Value = Value::Null;
    Call {
        arguments: &NULL,
        schema,
    }
}

fn response(id: Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

fn compacted(outcome: Outcome) -> (Compacted, Value) {
    match outcome {
        Outcome::Compacted(c) => {
            let v = serde_json::from_str(&c.frame).unwrap();
            (c, v)
        }
        Outcome::Pass(p) => panic!("passed: {p}"),
    }
}

/// The tool outputs of a real SWE-agent session (fixtures/real-world), one after the other:
/// 2,400 lines with 23 Python tracebacks.
fn real_session_output() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/real-world/swe-agent-trajectories/sqlfluff__sqlfluff-1517.traj.json"
    );
    let traj: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut outputs = Vec::new();
    for m in traj["messages"].as_array().unwrap() {
        if !matches!(m["role"].as_str(), Some("user" | "tool")) {
            continue;
        }
        let text = match &m["content"] {
            Value::String(s) => s.clone(),
            Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect(),
            _ => continue,
        };
        outputs.push(text);
    }
    outputs.join("\n")
}

#[test]
fn a_real_output_keeps_every_kind_of_error_within_the_limit() {
    let output = real_session_output();
    let frame = response(
        json!(7),
        json!({"content": [{"type": "text", "text": output}]}),
    );
    let handle = handle_for("/w", &frame);
    let (c, v) = compacted(compact(
        &frame,
        &call(Schema::None),
        limits(3000),
        &handle,
        "get_result",
    ));
    assert_eq!(v["id"], 7);
    assert_eq!(v["jsonrpc"], "2.0");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(T.count(text) <= 3000, "{} tokens", T.count(text));
    assert_eq!(c.tokens, T.count(text));
    // Every distinct exception line of the session is shown.
    let errors: std::collections::BTreeSet<&str> = output
        .lines()
        .filter(|l| {
            let head = l.split(':').next().unwrap_or("");
            !head.contains(' ') && (head.ends_with("Error") || head.ends_with("Exception"))
        })
        .collect();
    assert!(errors.len() >= 8, "{errors:?}");
    for e in &errors {
        assert!(text.contains(e), "missing {e}");
    }
    let total = output.lines().count();
    assert_eq!(c.lines, total);
    let expected_end = format!(
        "… {} of {} lines left out; the whole result: get_result {{\"handle\": \"{handle}\", \"page\": 1}}",
        thousands(total - c.shown),
        thousands(total)
    );
    assert!(
        text.contains(&expected_end),
        "{}",
        &text[text.len() - 400..]
    );
    assert!(text.starts_with("   1 | "), "{}", &text[..80]);
}

#[test]
fn compaction_is_deterministic() {
    let output = real_session_output();
    let frame = response(
        json!("a"),
        json!({"content": [{"type": "text", "text": output}]}),
    );
    let one = compact(
        &frame,
        &call(Schema::None),
        limits(2000),
        "r_x",
        "get_result",
    );
    let two = compact(
        &frame,
        &call(Schema::None),
        limits(2000),
        "r_x",
        "get_result",
    );
    let (Outcome::Compacted(one), Outcome::Compacted(two)) = (one, two) else {
        panic!("not compacted")
    };
    assert_eq!(one.frame.as_bytes(), two.frame.as_bytes());
}

#[test]
fn results_under_the_limit_and_other_frames_pass() {
    let small = response(
        json!(1),
        json!({"content": [{"type": "text", "text": "ok"}]}),
    );
    assert_eq!(
        compact(&small, &call(Schema::None), limits(500), "r", "g"),
        Outcome::Pass(Pass::Small)
    );
    let text = "word ".repeat(300);
    let n = T.count(&text);
    let just = response(
        json!(1),
        json!({"content": [{"type": "text", "text": text}]}),
    );
    assert!(just.len() > n);
    assert_eq!(
        compact(&just, &call(Schema::None), limits(n), "r", "g"),
        Outcome::Pass(Pass::UnderLimit)
    );
    let long = "x".repeat(5000);
    let error =
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -1, "message": long}}).to_string();
    assert_eq!(
        compact(&error, &call(Schema::None), limits(500), "r", "g"),
        Outcome::Pass(Pass::NotAResult)
    );
}

#[test]
fn a_result_that_is_not_final_passes_whole_whatever_it_holds() {
    let text = "a line of output that goes on\n".repeat(400);
    let state = "eyJ2IjozfQ.".to_string() + &"Zm9v".repeat(200);
    let input_required = response(
        json!(1),
        json!({"resultType": "input_required",
               "content": [{"type": "text", "text": text}],
               "inputRequests": {"name": {"method": "elicitation/create",
                   "params": {"message": "Who?", "requestedSchema": {"type": "object"}}}},
               "requestState": state}),
    );
    let complete = input_required.replace("\"input_required\"", "\"complete\"");
    // Canary: the same result, final, is compacted.
    assert!(matches!(
        compact(&complete, &call(Schema::None), limits(500), "r", "g"),
        Outcome::Compacted(_)
    ));
    assert_eq!(
        compact(&input_required, &call(Schema::None), limits(500), "r", "g"),
        Outcome::Pass(Pass::NotFinal)
    );
    let task = input_required.replace("\"input_required\"", "\"task\"");
    assert_eq!(
        compact(&task, &call(Schema::None), limits(500), "r", "g"),
        Outcome::Pass(Pass::NotFinal)
    );
}

/// Base64-like data of `bytes` bytes that packs few bytes into a token.
fn blob(bytes: usize) -> String {
    (0..bytes)
        .map(|i| b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkrLw"[(i * 7 + i / 46) % 46] as char)
        .collect()
}

#[test]
fn a_result_without_text_passes_and_says_so_only_over_the_limit() {
    let image = |data: String| {
        response(
            json!(1),
            json!({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}),
        )
    };
    let resource = |blob: String| {
        response(
            json!(1),
            json!({"content": [{"type": "resource", "resource": {"uri": "file:///a.gz", "blob": blob}}]}),
        )
    };
    for frame in [image(blob(20_000)), resource(blob(20_000))] {
        assert!(T.count(&frame) > 500, "canary: over the limit");
        assert_eq!(
            compact(&frame, &call(Schema::None), limits(500), "r", "g"),
            Outcome::Pass(Pass::NoText)
        );
    }
    // More bytes than the limit has tokens, fewer tokens: under the limit like any result.
    let small = image("A".repeat(1000));
    assert!(small.len() > 500 && T.count(&small) <= 500);
    assert_eq!(
        compact(&small, &call(Schema::None), limits(500), "r", "g"),
        Outcome::Pass(Pass::UnderLimit)
    );
}

#[test]
fn is_error_meta_and_other_blocks_are_kept() {
    let log: String = (0..2000).map(|i| format!("step {i} ok\n")).collect();
    let result = json!({
        "content": [
            {"type": "text", "text": log, "annotations": {"audience": ["assistant"]}},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "text", "text": "second block"}
        ],
        "isError": true,
        "_meta": {"k": 1}
    });
    let frame = response(json!(18446744073709551616u128), result);
    let (_, v) = compacted(compact(
        &frame,
        &call(Schema::None),
        limits(400),
        "r_h",
        "ctxopt_get_result",
    ));
    assert_eq!(v["id"].to_string(), "18446744073709551616");
    let r = &v["result"];
    assert_eq!(r["isError"], true);
    assert_eq!(r["_meta"], json!({"k": 1}));
    let content = r["content"].as_array().unwrap();
    assert_eq!(content.len(), 2);
    assert_eq!(content[0]["type"], "text");
    assert_eq!(
        content[0]["annotations"],
        json!({"audience": ["assistant"]})
    );
    assert_eq!(content[1]["type"], "image");
    let text = content[0]["text"].as_str().unwrap();
    assert!(text.contains("ctxopt_get_result {\"handle\": \"r_h\""));
    // The second block's line is the last line of the joined text (after the empty line
    // the first block's final newline and the joining newline make).
    assert!(text.contains("2002 | second block"), "{text}");
}

#[test]
fn structured_content_is_kept_valid_or_the_result_left_whole() {
    let log: String = (0..3000).map(|i| format!("row {i}\n")).collect();
    let big = json!({"rows": log.lines().collect::<Vec<_>>()});
    let small = json!({"count": 3000});
    let with = |s: &Value| {
        response(
            json!(1),
            json!({"content": [{"type": "text", "text": log}], "structuredContent": s}),
        )
    };
    // A big structuredContent under a declared (or unknown) schema: whole.
    let declared =
        json!({"type": "object", "properties": {"rows": {"type": "string", "maxLength": 100000}}});
    for schema in [Schema::Declared(&declared), Schema::Unknown] {
        assert_eq!(
            compact(&with(&big), &call(schema), limits(1000), "r", "g"),
            Outcome::Pass(Pass::StructuredOverLimit {
                tokens: T.count(&big.to_string())
            })
        );
    }
    // Without a schema it is left out, and said so.
    let (_, v) = compacted(compact(
        &with(&big),
        &call(Schema::None),
        limits(1000),
        "r",
        "g",
    ));
    assert!(v["result"].get("structuredContent").is_none());
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("structuredContent is left out"));
    // A small one stays as it was, and the whole stays within the limit.
    let (c, v) = compacted(compact(
        &with(&small),
        &call(Schema::Declared(&declared)),
        limits(1000),
        "r",
        "g",
    ));
    assert_eq!(v["result"]["structuredContent"], small);
    assert!(c.tokens + T.count(&small.to_string()) <= 1000);
}

#[test]
fn a_one_line_result_shows_its_start_and_end() {
    // Dense text: about one token per two and a half characters.
    let line = format!("START{}FINISH", "abcd efgh ".repeat(200_000));
    let frame = response(
        json!(1),
        json!({"content": [{"type": "text", "text": line}]}),
    );
    let (c, v) = compacted(compact(&frame, &call(Schema::None), limits(1000), "r", "g"));
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(c.tokens <= 1000);
    assert!(text.starts_with("1 | START"), "{}", &text[..40]);
    assert!(text.contains("FINISH\n"));
    assert!(text.contains("characters left out"));
    assert!(text.contains("… 1 lines shown, 1 cut short"));
}

#[test]
fn lines_matching_the_arguments_are_shown() {
    let log: String = (0..3000)
        .map(|i| {
            if i == 1717 {
                "customer ACME-42 refund issued\n".to_string()
            } else {
                format!("customer C-{i} ok\n")
            }
        })
        .collect();
    let frame = response(
        json!(1),
        json!({"content": [{"type": "text", "text": log}]}),
    );
    let args = json!({"query": "refund"});
    let c = Call {
        arguments: &args,
        schema: Schema::None,
    };
    let (_, v) = compacted(compact(&frame, &c, limits(400), "r", "g"));
    assert!(v["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("1718 | customer ACME-42 refund issued"));
}

#[test]
fn thousands_are_grouped() {
    assert_eq!(thousands(0), "0");
    assert_eq!(thousands(999), "999");
    assert_eq!(thousands(19_412), "19,412");
    assert_eq!(thousands(1_234_567), "1,234,567");
}

/// The real server-filesystem repeats a file's text in `structuredContent.content`, under an
/// `outputSchema` that asks for a string: both get the compacted text, and the result still
/// validates against the real schema (recorded in fixtures/real-world).
#[test]
fn structured_content_repeating_the_text_is_compacted_with_it_and_stays_valid() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/real-world/tier1-tools-list/filesystem-wire.jsonl"
    );
    let list: Value = serde_json::from_str(
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let tool = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_text_file")
        .unwrap();
    let schema = &tool["outputSchema"];
    let output = real_session_output();
    let frame = response(
        json!(4),
        json!({"content": [{"type": "text", "text": output}], "structuredContent": {"content": output}}),
    );
    let (c, v) = compacted(compact(
        &frame,
        &call(Schema::Declared(schema)),
        limits(3000),
        "r",
        "g",
    ));
    let structured = &v["result"]["structuredContent"];
    assert_eq!(structured["content"], v["result"]["content"][0]["text"]);
    assert!(jsonschema::draft7::is_valid(schema, structured));
    assert!(2 * c.tokens <= 3000);
    // A schema that constrains the string keeps the result whole.
    let strict =
        json!({"type": "object", "properties": {"content": {"type": "string", "maxLength": 10}}});
    assert!(matches!(
        compact(
            &frame,
            &call(Schema::Declared(&strict)),
            limits(3000),
            "r",
            "g"
        ),
        Outcome::Pass(Pass::StructuredOverLimit { tokens }) if tokens > 1500
    ));
}
