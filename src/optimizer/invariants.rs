//! Property tests of the whole pipeline's invariants, and determinism tests.
//!
//! - Mandatory content is never dropped for budget or relevance.
//! - The context's tokens are within the budget, or `BUDGET_CONFLICT` is reported.
//! - Every source tag in the context resolves to a kept fragment of an input record.
//! - Identical input and config give byte-identical output, whatever the thread count.

use std::collections::BTreeSet;

use proptest::prelude::*;

use crate::optimizer::{build, BuildConfig, BuildOutput, DropReason, Signal};
use crate::records::{
    Common, Decision, DecisionStatus, ErrorRecord, FileRecord, Message, Records, Role, TestResult,
    TestStatus, ToolOutput,
};
use crate::tokenizer::Tokenizer;

const WORDS: &[&str] = &[
    "invoice",
    "total",
    "cents",
    "must",
    "never",
    "parser",
    "TypeError:",
    "computeTotal",
    "src/a.ts",
    "FAILED",
    "ok",
    "the",
    "retry",
    "é",
    "\n",
    "\n\n",
    "\r\n",
    "42",
];

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(WORDS), 0..40).prop_map(|w| w.join(" "))
}

fn common(id: String) -> impl Strategy<Value = Common> {
    (
        prop::option::of(0u32..1_000_000),
        prop::option::of(0.0f64..=1.0),
    )
        .prop_map(move |(t, p)| Common {
            id: Some(id.clone()),
            timestamp: t.map(|s| {
                chrono::DateTime::from_timestamp(1_700_000_000 + i64::from(s), 0)
                    .unwrap_or_default()
                    .to_rfc3339()
            }),
            priority: p,
        })
}

fn records() -> impl Strategy<Value = Records> {
    let message = |i: usize| {
        (
            common(format!("m{i}")),
            prop::sample::select(vec![Role::User, Role::Assistant, Role::System, Role::Tool]),
            text(),
        )
            .prop_map(|(common, role, text)| Message { common, role, text })
    };
    let tool = |i: usize| {
        (
            common(format!("t{i}")),
            prop::sample::select(vec!["npm test", "ls", "cargo test"]),
            text(),
            prop::option::of(0i64..3),
        )
            .prop_map(|(common, tool, output, exit_code)| ToolOutput {
                common,
                tool: tool.into(),
                args: None,
                output,
                exit_code,
                cwd: None,
            })
    };
    let error = |i: usize| {
        (common(format!("e{i}")), text(), prop::option::of(text())).prop_map(
            |(common, message, stack)| ErrorRecord {
                common,
                message,
                stack,
            },
        )
    };
    let file = |i: usize| {
        (
            common(format!("f{i}")),
            prop::sample::select(vec!["src/a.ts", "src/b.py", r"C:\x\y.cs"]),
            text(),
        )
            .prop_map(|(common, path, content)| FileRecord {
                common,
                path: path.into(),
                content,
            })
    };
    let test = |i: usize| {
        (
            common(format!("r{i}")),
            prop::sample::select(vec!["a > b", "test_x"]),
            prop::sample::select(vec![
                TestStatus::Passed,
                TestStatus::Failed,
                TestStatus::Skipped,
            ]),
            prop::option::of(text()),
        )
            .prop_map(|(common, name, status, output)| TestResult {
                common,
                name: name.into(),
                status,
                output,
            })
    };
    let decision = |i: usize| {
        (
            common(format!("d{i}")),
            text(),
            prop::sample::select(vec![
                DecisionStatus::Accepted,
                DecisionStatus::Proposed,
                DecisionStatus::Rejected,
                DecisionStatus::Superseded,
            ]),
        )
            .prop_map(|(common, text, status)| Decision {
                common,
                text,
                status,
            })
    };
    (
        prop::option::of(text()),
        (0..6usize).prop_flat_map(move |n| (0..n).map(message).collect::<Vec<_>>()),
        (0..6usize).prop_flat_map(move |n| (0..n).map(tool).collect::<Vec<_>>()),
        (0..3usize).prop_flat_map(move |n| (0..n).map(error).collect::<Vec<_>>()),
        (0..3usize).prop_flat_map(move |n| (0..n).map(file).collect::<Vec<_>>()),
        (0..3usize).prop_flat_map(move |n| (0..n).map(test).collect::<Vec<_>>()),
        (0..4usize).prop_flat_map(move |n| (0..n).map(decision).collect::<Vec<_>>()),
    )
        .prop_map(
            |(task, messages, tool_outputs, errors, files, diffs_src, decisions)| Records {
                task,
                messages,
                tool_outputs,
                errors,
                files,
                diffs: Vec::new(),
                test_results: diffs_src,
                decisions,
            },
        )
}

/// The `(fragment, record)` pairs of the context's source tags.
fn tags(context: &str) -> Vec<(String, String)> {
    context
        .lines()
        .filter_map(|l| l.strip_prefix("[source: "))
        .filter_map(|l| {
            let mut parts = l.trim_end_matches(']').split(" | ");
            let fr = parts.next()?.to_string();
            let rec = parts.next()?.strip_prefix("record ")?.to_string();
            Some((fr, rec))
        })
        .collect()
}

fn input_ids(records: &Records) -> BTreeSet<String> {
    let mut ids: BTreeSet<String> = BTreeSet::new();
    let commons = records
        .messages
        .iter()
        .map(|r| &r.common)
        .chain(records.tool_outputs.iter().map(|r| &r.common))
        .chain(records.errors.iter().map(|r| &r.common))
        .chain(records.files.iter().map(|r| &r.common))
        .chain(records.diffs.iter().map(|r| &r.common))
        .chain(records.test_results.iter().map(|r| &r.common))
        .chain(records.decisions.iter().map(|r| &r.common));
    ids.extend(commons.filter_map(|c| c.id.clone()));
    ids.insert("task".into());
    ids
}

fn check(records: &Records, out: &BuildOutput, budget: usize) {
    // Budget, counted on the rendered text.
    assert_eq!(
        Tokenizer::O200kBase.count(&out.context),
        out.stats.output_tokens
    );
    let conflict = out
        .report
        .warnings
        .iter()
        .any(|w| w.starts_with("BUDGET_CONFLICT"));
    assert!(
        out.stats.output_tokens <= budget || conflict,
        "{} > {budget}",
        out.stats.output_tokens
    );
    // Tags resolve to kept fragments of input records, one tag per kept fragment.
    let ids = input_ids(records);
    let tagged = tags(&out.context);
    assert_eq!(tagged.len(), out.sources.len());
    for ((fr, rec), source) in tagged.iter().zip(&out.sources) {
        assert_eq!((fr, rec), (&source.id, &source.record));
        assert!(ids.contains(rec), "{rec} is no input record");
    }
    // Mandatory records keep a fragment unless dedupe or superseding removed them.
    for id in ids.iter().filter(|id| is_mandatory_record(records, id)) {
        let kept = out.sources.iter().any(|s| &s.record == id);
        let deduped = out.omitted.iter().any(|o| {
            &o.record == id
                && matches!(
                    o.reason,
                    DropReason::Duplicate
                        | DropReason::NearDuplicate
                        | DropReason::RepeatedRun
                        | DropReason::Superseded
                )
        });
        assert!(kept || deduped, "mandatory {id} was dropped");
    }
    if records
        .task
        .as_deref()
        .is_some_and(|t| !t.trim().is_empty())
    {
        assert!(out.sources.iter().any(|s| s.record == "task"));
    }
    // Nothing is both kept and omitted.
    let kept: BTreeSet<&str> = out.sources.iter().map(|s| s.id.as_str()).collect();
    assert!(out.omitted.iter().all(|o| !kept.contains(o.id.as_str())));
}

/// Mandatory by the documented rule, checked from the input: accepted decisions and user
/// messages that state a requirement.
fn is_mandatory_record(records: &Records, id: &str) -> bool {
    records
        .decisions
        .iter()
        .any(|d| d.common.id.as_deref() == Some(id) && d.status == DecisionStatus::Accepted)
        || records.messages.iter().any(|m| {
            m.common.id.as_deref() == Some(id)
                && m.role == Role::User
                && !crate::optimizer::extract::requirements::requirements(&m.text).is_empty()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn invariants_hold(records in records(), budget in 0usize..600) {
        let config = BuildConfig { budget, ..BuildConfig::default() };
        let out = build(&records, &config).unwrap();
        check(&records, &out, budget);
    }
}

fn sample() -> Records {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/scenarios/failed-attempts.json"
    ))
    .ok()
    .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
    .and_then(|v| serde_json::from_value(v.get("records")?.clone()).ok());
    text.unwrap_or_else(|| Records {
        task: Some("Fix computeTotal".into()),
        messages: (0..300)
            .map(|i| Message {
                common: Common::default(),
                role: Role::Assistant,
                text: format!("step {i}: computeTotal in src/a.ts still fails"),
            })
            .collect(),
        ..Records::default()
    })
}

fn json(out: &BuildOutput) -> Vec<u8> {
    serde_json::to_vec(out).unwrap()
}

#[test]
fn identical_builds_are_byte_identical() {
    let records = sample();
    let config = BuildConfig {
        budget: 500,
        ..BuildConfig::default()
    };
    let a = json(&build(&records, &config).unwrap());
    let b = json(&build(&records, &config).unwrap());
    assert_eq!(a, b);
}

#[test]
fn thread_counts_and_calling_threads_do_not_change_the_output() {
    let records = sample();
    let one = BuildConfig {
        budget: 500,
        threads: 1,
        ..BuildConfig::default()
    };
    let four = BuildConfig {
        threads: 4,
        ..one.clone()
    };
    let reference = json(&build(&records, &one).unwrap());
    assert_eq!(reference, json(&build(&records, &four).unwrap()));
    let handles: Vec<_> = (0..3)
        .map(|_| {
            let (records, config) = (records.clone(), four.clone());
            std::thread::spawn(move || json(&build(&records, &config).unwrap()))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), reference);
    }
}

#[test]
fn empty_records_build_an_empty_context() {
    let out = build(&Records::default(), &BuildConfig::default()).unwrap();
    assert_eq!(out.context, "");
    assert_eq!((out.stats.input_tokens, out.stats.output_tokens), (0, 0));
    assert_eq!(out.stats.reduction, 0.0);
    assert!(out.sources.is_empty() && out.omitted.is_empty());
}

#[test]
fn a_huge_single_line_is_cut_and_the_budget_holds() {
    let records = Records {
        task: Some("Why does the export stall?".into()),
        tool_outputs: vec![ToolOutput {
            common: Common {
                id: Some("big".into()),
                ..Common::default()
            },
            tool: "cat export.log".into(),
            args: None,
            output: "export stall retry ".repeat(60_000),
            exit_code: Some(1),
            cwd: None,
        }],
        ..Records::default()
    };
    let config = BuildConfig {
        budget: 500,
        ..BuildConfig::default()
    };
    let out = build(&records, &config).unwrap();
    check(&records, &out, 500);
    assert!(out.stats.output_tokens <= 500);
    assert!(
        out.stats.reduction > 0.9,
        "reduction canary: {}",
        out.stats.reduction
    );
    assert!(out.omitted.iter().any(|o| o.reason == DropReason::Budget));
}

#[test]
fn crlf_and_windows_paths_work_end_to_end() {
    let records = Records {
        task: Some(r"Fix the crash in C:\src\App\Billing.cs".into()),
        messages: vec![Message {
            common: Common::default(),
            role: Role::User,
            text: "It must not\r\nchange the API.\r\n".into(),
        }],
        files: vec![
            FileRecord {
                common: Common::default(),
                path: r"C:\src\App\Billing.cs".into(),
                content: "class Billing {}\r\n".into(),
            },
            FileRecord {
                common: Common::default(),
                path: r"C:\src\App\Other.cs".into(),
                content: "class Other {}\r\n".into(),
            },
        ],
        ..Records::default()
    };
    // Every fragment is kept, to read its scores.
    let config = BuildConfig {
        min_relevance: 0.0,
        ..BuildConfig::default()
    };
    let out = build(&records, &config).unwrap();
    assert!(!out.context.contains('\r'));
    assert!(out.context.contains("It must not\nchange the API."));
    let value = |path: &str, signal: Signal| {
        let source = out
            .sources
            .iter()
            .find(|s| s.path.as_deref() == Some(path))
            .unwrap();
        source
            .components
            .iter()
            .find(|c| c.signal == signal)
            .unwrap()
            .value
    };
    assert_eq!(
        value(r"C:\src\App\Billing.cs", Signal::IdentifierMatch),
        1.0
    );
    assert_eq!(value(r"C:\src\App\Other.cs", Signal::IdentifierMatch), 0.0);
    // `src` and `App` only say where the workspace lives: the task's terms are the rest.
    assert_eq!(
        value(r"C:\src\App\Billing.cs", Signal::LexicalOverlap),
        0.3333
    );
    assert_eq!(value(r"C:\src\App\Other.cs", Signal::LexicalOverlap), 0.0);
}

#[test]
fn report_canaries_merges_omissions_and_conflicts() {
    let say = |text: &str| Message {
        common: Common::default(),
        role: Role::User,
        text: text.into(),
    };
    let records = Records {
        task: Some("Keep totals in integer cents in computeTotal".into()),
        messages: vec![
            say("Totals must stay in integer cents."),
            say("Totals must stay in integer cents."),
        ],
        ..Records::default()
    };
    let out = build(
        &records,
        &BuildConfig {
            budget: 5,
            ..BuildConfig::default()
        },
    )
    .unwrap();
    assert_eq!(out.report.merges.len(), 1, "{:?}", out.report.merges);
    assert_eq!(out.report.omissions, vec![(DropReason::Duplicate, 1)]);
    assert!(
        out.report.warnings[0].starts_with("BUDGET_CONFLICT"),
        "{:?}",
        out.report.warnings
    );
    assert_eq!(out.report.config_hash.len(), 64);
    assert_eq!(out.report.tokenizer, "o200k_base");
}

#[test]
fn standing_instructions_never_fill_the_budget() {
    let message = |id: &str, role, text: &str| Message {
        common: Common {
            id: Some(id.into()),
            ..Common::default()
        },
        role,
        text: text.into(),
    };
    let records = Records {
        task: Some("Fix the rounding in computeTotal in src/billing/total.ts".into()),
        messages: vec![
            message(
                "sys",
                Role::System,
                "Fix bugs like the rounding in computeTotal in src/billing/total.ts; you must run the tests.",
            ),
            message(
                "a1",
                Role::Assistant,
                "The rounding in computeTotal in src/billing/total.ts fails because floats are summed.",
            ),
        ],
        ..Records::default()
    };
    let out = build(&records, &BuildConfig::default()).unwrap();
    let omitted = out.omitted.iter().find(|o| o.record == "sys").unwrap();
    assert_eq!(omitted.reason, DropReason::LowRelevance);
    assert!(out.sources.iter().any(|s| s.record == "a1"));
}

/// A session like the live filesystem one, every path under `root`: the task is about
/// `billing.rs` and `rates.rs`, reading `rates.rs` failed, and a `write_file` wrote a
/// sibling, `notes.txt`, that shares nothing with the task but the folder.
fn session_under(root: &str) -> Records {
    let common = |id: &str, second: u32| Common {
        id: Some(id.into()),
        timestamp: Some(format!("2026-11-30T16:25:{second:02}Z")),
        priority: None,
    };
    let file = |id: &str, second, name: &str, content: &str| FileRecord {
        common: common(id, second),
        path: format!("{root}/{name}"),
        content: content.into(),
    };
    Records {
        task: Some("fix total_cents rounding in billing.rs; the rates come from rates.rs".into()),
        files: vec![
            file(
                "r1",
                1,
                "notes.txt",
                "invoice totals are rounded half up (v1)\n",
            ),
            file(
                "r2",
                2,
                "billing.rs",
                "pub fn total_cents(x: f64) -> i64 { x as i64 }\n",
            ),
            file(
                "r5",
                5,
                "notes.txt",
                "invoice totals are rounded half even (v2)\n",
            ),
        ],
        errors: vec![ErrorRecord {
            common: common("r3", 3),
            message: format!(
                "read_text_file: ENOENT: no such file or directory, open '{root}/rates.rs'"
            ),
            stack: None,
        }],
        tool_outputs: vec![ToolOutput {
            common: common("r4", 4),
            tool: "write_file".into(),
            args: Some(serde_json::json!({
                "content": "invoice totals are rounded half even (v2)\n",
                "path": format!("{root}/notes.txt"),
            })),
            output: format!("Successfully wrote to {root}/notes.txt"),
            exit_code: None,
            cwd: None,
        }],
        ..Records::default()
    }
}

/// What a build chose, without what names the folder: the kept records with their score
/// components, and the omitted records with their reasons and scores.
fn choices(out: &BuildOutput) -> String {
    let kept: Vec<String> = out
        .sources
        .iter()
        .map(|s| {
            let parts: Vec<String> = s
                .components
                .iter()
                .map(|c| format!("{}={}", c.signal, c.value))
                .collect();
            format!("kept {} {} [{}]", s.record, s.score, parts.join(" "))
        })
        .collect();
    let omitted = out
        .omitted
        .iter()
        .map(|o| format!("omitted {} {} {:?}", o.record, o.reason, o.score));
    kept.into_iter()
        .chain(omitted)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn where_the_workspace_lives_does_not_change_the_selection() {
    let config = BuildConfig {
        budget: 2000,
        ..BuildConfig::default()
    };
    let under_home = build(&session_under("/home/u/other-name/proj"), &config).unwrap();
    // `tmpAAAAAA` reads as a symbol the error shares; `tmpabFix` holds the task's word `fix`.
    for root in ["/tmp/.tmpAAAAAA/proj", "/tmp/.tmpabFix/proj"] {
        let under_tmp = build(&session_under(root), &config).unwrap();
        assert_eq!(choices(&under_tmp), choices(&under_home), "{root}");
    }
    // The sibling the write went to shares nothing with the task but the folder: no term, no
    // name (the budget left over may still take it, as it takes any tool output that fits).
    let r4 = under_home.sources.iter().find(|s| s.record == "r4");
    let shared = r4.map_or(0.0, |s| {
        s.components
            .iter()
            .filter(|c| matches!(c.signal, Signal::LexicalOverlap | Signal::IdentifierMatch))
            .map(|c| c.value)
            .sum()
    });
    assert_eq!(shared, 0.0, "{}", choices(&under_home));
    assert!(
        r4.is_some()
            || under_home
                .omitted
                .iter()
                .any(|o| o.record == "r4" && o.reason == DropReason::LowRelevance),
        "{}",
        choices(&under_home)
    );
}

/// The `identifier_match` value of the kept fragment of `record`.
fn identifier_match(out: &BuildOutput, record: &str) -> f64 {
    let source = out.sources.iter().find(|s| s.record == record);
    source
        .unwrap_or_else(|| panic!("{record} not kept: {}", choices(out)))
        .components
        .iter()
        .find(|c| c.signal == Signal::IdentifierMatch)
        .unwrap()
        .value
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn no_temporary_folder_name_changes_the_selection(
        name in "[A-Za-z0-9]{0,3}(Fix|FIX|Rates|Cents|Bill|Come|Total)?[A-Za-z0-9]{0,3}"
    ) {
        let config = BuildConfig { budget: 2000, ..BuildConfig::default() };
        let reference = build(&session_under("/home/u/other-name/proj"), &config).unwrap();
        let temporary = build(&session_under(&format!("/tmp/.tmp{name}/proj")), &config).unwrap();
        prop_assert_eq!(choices(&temporary), choices(&reference));
    }
}

#[test]
fn a_folder_below_the_root_that_the_error_names_still_counts() {
    let session = |root: &str| {
        let run = |id: &str, tool: &str, output: String| ToolOutput {
            common: Common {
                id: Some(id.into()),
                ..Common::default()
            },
            tool: tool.into(),
            args: None,
            output,
            exit_code: Some(0),
            cwd: None,
        };
        Records {
            task: Some("Fix the build".into()),
            errors: vec![ErrorRecord {
                common: Common {
                    id: Some("error".into()),
                    ..Common::default()
                },
                message: format!("error: cannot compile {root}/src/parser: unexpected token"),
                stack: None,
            }],
            tool_outputs: vec![
                run(
                    "ls-parser",
                    "ls src/parser",
                    format!("{root}/src/parser/ast.rs"),
                ),
                run("ls-src", "ls src", format!("{root}/src/main.rs")),
                run("ls-root", "ls", format!("{root}/Cargo.toml")),
            ],
            ..Records::default()
        }
    };
    let config = BuildConfig {
        budget: 2000,
        min_relevance: 0.0,
        ..BuildConfig::default()
    };
    let a = build(&session("/ws/proj"), &config).unwrap();
    let b = build(&session("/tmp/.tmpAAAAAA/proj"), &config).unwrap();
    assert_eq!(choices(&a), choices(&b));
    assert_eq!(identifier_match(&a, "ls-parser"), 0.5, "{}", choices(&a));
    assert_eq!(identifier_match(&a, "ls-src"), 0.0);
    assert_eq!(identifier_match(&a, "ls-root"), 0.0);
}
