//! The four classes of loss of issue 11, one test each on a fixture of its own in
//! `fixtures/losses/`: a needle in a big output (and the exceptional lines of big outputs),
//! the definition the error points at (and the files it imports), tool names that say
//! nothing, and starvation under budget.

use serde_json::Value;

use crate::optimizer::parse::parse_records;
use crate::optimizer::{build, BuildConfig, BuildOutput, DropReason, Signal};
use crate::records::Records;

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

fn omitted_reason(out: &BuildOutput, record: &str) -> Vec<DropReason> {
    out.omitted
        .iter()
        .filter(|o| o.record == record)
        .map(|o| o.reason)
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
        .find(|c| c.signal == Signal::IdentifierMatch)
        .unwrap();
    assert_eq!(identifier.value, 1.0, "its own path joins the focus");
    assert!(omitted_reason(&out, "readme")
        .iter()
        .all(|r| *r != DropReason::Budget));
}

#[test]
fn a_file_the_defining_file_imports_is_linked_to_the_task() {
    let f = fixture("imports-link-files");
    let identifier_match = |out: &BuildOutput, record: &str| {
        out.sources
            .iter()
            .filter(|s| s.record == record)
            .flat_map(|s| &s.components)
            .filter(|c| c.signal == Signal::IdentifierMatch)
            .map(|c| c.value)
            .fold(0.0, f64::max)
    };
    let out = built(&records(&f), 4000);
    // `models` defines `total_cents` (the task names it) and imports `shop.pricing`.
    assert!(identifier_match(&out, "pricing") > 0.0, "{:?}", out.sources);
    assert_eq!(
        identifier_match(&out, "cli"),
        0.0,
        "imported by nothing of the focus"
    );
    // The canary: without the import line, nothing links `pricing`.
    let mut unlinked = f.clone();
    let models = unlinked["files"][2]["content"].as_str().unwrap();
    unlinked["files"][2]["content"] =
        Value::String(models.replace("from shop.pricing import discounted\n", ""));
    assert_eq!(
        identifier_match(&built(&records(&unlinked), 4000), "pricing"),
        0.0
    );
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
    assert!(out
        .omitted
        .iter()
        .all(|o| o.reason != DropReason::RepeatedRun));
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
        assert_eq!(omitted_reason(&out, "m2"), [DropReason::LowRelevance]);
    }
}

/// The output `spec` of the exceptional-lines fixture describes (see its `description`).
fn big_output(spec: &Value) -> String {
    let lines = spec["lines"].as_u64().unwrap() as usize;
    let routine = spec["routine"].as_array().unwrap();
    let exceptional = spec["exceptional"].as_object().unwrap();
    (1..=lines)
        .map(|n| match exceptional.get(&n.to_string()) {
            Some(line) => format!("{}\n", line.as_str().unwrap()),
            None => {
                let hex = format!("a{:x}9", (n as u64).wrapping_mul(2_654_435_761));
                let line = routine[n % routine.len()]
                    .as_str()
                    .unwrap()
                    .replace("{n}", &n.to_string())
                    .replace("{s}", &format!("{:02}", n % 60))
                    .replace("{h}", &hex);
                format!("{line}\n")
            }
        })
        .collect()
}

#[test]
fn big_outputs_keep_their_exceptional_lines_with_line_numbers() {
    let f = fixture("exceptional-lines-of-big-outputs");
    let mut value = f["records"].clone();
    for (k, spec) in f["outputs"].as_array().unwrap().iter().enumerate() {
        value["toolOutputs"][k]["output"] = Value::String(big_output(spec));
    }
    let budget = f["budget"].as_u64().unwrap() as usize;
    let out = built(&records(&value), budget);
    assert!(out.stats.output_tokens <= budget);
    for spec in f["outputs"].as_array().unwrap() {
        for (n, line) in spec["exceptional"].as_object().unwrap() {
            let shown = format!("{n}: {}", line.as_str().unwrap());
            assert!(
                out.context.contains(&shown),
                "{shown} not in\n{}",
                out.context
            );
        }
    }
    insta::assert_snapshot!(out.context);
}

#[test]
fn an_excerpt_that_the_kept_chunks_show_is_left_out_as_covered() {
    let f = fixture("exceptional-lines-of-big-outputs");
    let mut spec = f["outputs"][0].clone();
    spec["lines"] = Value::from(80);
    spec["exceptional"] = serde_json::json!({
        "40": "2026-03-04 02:40:51 ERROR sync failed: AccessDenied on media-eu/2026/03/clip.mp4"
    });
    let mut value = f["records"].clone();
    value["toolOutputs"][0]["output"] = Value::String(big_output(&spec));
    value["toolOutputs"].as_array_mut().unwrap().truncate(1);
    let r = records(&value);
    let tight = built(&r, 300);
    assert!(
        tight.context.contains("40: 2026-03-04 02:40:51 ERROR"),
        "{}",
        tight.context
    );
    let roomy = built(&r, 16_000);
    assert!(
        omitted_reason(&roomy, "sync-log").contains(&DropReason::Covered),
        "{:?}",
        roomy.omitted
    );
    assert_eq!(roomy.context.matches("ERROR sync failed").count(), 1);
}

#[test]
fn a_sessions_only_output_answering_the_task_is_kept_when_everything_fits() {
    let r = records(&fixture("only-output-answers-the-task"));
    let out = built(&r, 4000);
    // The output shares no word with the question it answers; it fits, so it is there.
    assert!(out.context.contains("v20.11.1"), "{}", out.context);
    assert!(omitted_reason(&out, "o1").is_empty());
}

#[test]
fn a_value_printed_by_cat_behind_a_bare_bash_survives_repeated_run_folding() {
    let f = fixture("cat-behind-bash-folded");
    let out = built(&records(&f), 4000);
    // Folded as a repeat (only a number differs), the earlier run's value stays in the
    // history line of the run kept.
    assert_eq!(omitted_reason(&out, "b1"), [DropReason::RepeatedRun]);
    assert!(
        out.context.contains("upload_timeout_seconds = 90"),
        "{}",
        out.context
    );
    assert!(out.context.contains("upload_timeout_seconds = 30"));
    // Given the commands, the runs are different commands and both are kept.
    let mut named = f.clone();
    named["toolOutputs"][0]["args"] = serde_json::json!({"command": "cat config.prod.toml"});
    named["toolOutputs"][1]["args"] = serde_json::json!({"command": "cat config.dev.toml"});
    let out = built(&records(&named), 4000);
    for value in ["upload_timeout_seconds = 90", "upload_timeout_seconds = 30"] {
        assert!(out.context.contains(value), "{value}: {}", out.context);
    }
}
