//! The four classes of loss of issue 11, one test each on a fixture of its own in
//! `fixtures/losses/`: a needle in a big output, the definition the error points at, tool
//! names that say nothing, and starvation under budget.

use serde_json::Value;

use crate::optimizer::parse::parse_records;
use crate::optimizer::records::Records;
use crate::optimizer::{build, BuildConfig, BuildOutput};

fn fixture(name: &str) -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/losses/");
    let text = std::fs::read_to_string(format!("{path}{name}.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn records(value: &Value) -> Records {
    parse_records(&value.to_string()).unwrap()
}

fn built(records: &Records, budget: usize) -> BuildOutput {
    let config = BuildConfig {
        budget,
        ..BuildConfig::default()
    };
    build(records, &config).unwrap()
}

fn omitted_reason<'a>(out: &'a BuildOutput, record: &str) -> Vec<&'a str> {
    out.omitted
        .iter()
        .filter(|o| o.record == record)
        .map(|o| o.reason.as_str())
        .collect()
}

#[test]
fn the_one_error_line_of_a_big_json_lines_log_is_kept() {
    let f = fixture("needle-in-a-big-output");
    let lines = f["lines"].as_u64().unwrap() as usize;
    let at = f["needle_line"].as_u64().unwrap() as usize;
    let needle = f["needle"].as_str().unwrap();
    let routine = f["routine"].as_str().unwrap();
    let log: String = (1..=lines)
        .map(|n| {
            if n == at {
                format!("{needle}\n")
            } else {
                format!("{}\n", routine.replace("{n}", &n.to_string()))
            }
        })
        .collect();
    let mut value = f["records"].clone();
    value["toolOutputs"][0]["output"] = Value::String(log);
    let out = built(&records(&value), f["budget"].as_u64().unwrap() as usize);
    assert!(out.context.contains(needle), "{}", out.context);
    assert!(out.stats.output_tokens <= 800);
}

#[test]
fn the_file_defining_what_the_error_names_is_kept() {
    let r = records(&fixture("definition-the-error-points-at"));
    let out = built(&r, 1200);
    assert!(
        out.context.contains("class LineItem:") && out.context.contains("price_cents: int"),
        "{}",
        out.context
    );
    let models = out.sources.iter().find(|s| s.record == "models").unwrap();
    let identifier = models
        .components
        .iter()
        .find(|c| c.signal == "identifier_match")
        .unwrap();
    assert_eq!(identifier.value, 1.0, "its own path joins the focus");
    assert!(omitted_reason(&out, "readme")
        .iter()
        .all(|r| *r != "budget"));
}

#[test]
fn different_outputs_of_a_bare_tool_are_different_runs() {
    let r = records(&fixture("tool-names-that-say-nothing"));
    let out = built(&r, 4000);
    assert!(
        out.context.contains("upload_timeout_seconds = 30"),
        "{}",
        out.context
    );
    assert!(out.omitted.iter().all(|o| o.reason != "repeated_run"));
}

#[test]
fn what_is_linked_to_the_task_is_there_while_budget_remains() {
    let r = records(&fixture("starvation-under-budget"));
    // `wc` names only the file, which is linked to the task because it defines
    // `parse_header`; even a relevance floor nothing reaches leaves linked fragments in.
    for min_relevance in [crate::optimizer::DEFAULT_MIN_RELEVANCE, 100.0] {
        let config = BuildConfig {
            min_relevance,
            ..BuildConfig::default()
        };
        let out = build(&r, &config).unwrap();
        for record in ["task", "reader", "wc"] {
            assert!(
                out.sources.iter().any(|s| s.record == record),
                "{record} left out at {min_relevance}: {:?}",
                omitted_reason(&out, record)
            );
        }
        assert_eq!(omitted_reason(&out, "m2"), ["low_relevance"]);
    }
}
