//! The benchmark scenarios: schema validity, provenance of the imported ones, one snapshot
//! of the rendered context per scenario, determinism, metric canaries, and the CLI's
//! handling of malformed input.

use std::path::{Path, PathBuf};
use std::process::Command;

use ctxopt::bench::metrics;
use ctxopt::bench::report;
use ctxopt::bench::scenario::{self, Scenario};
use ctxopt::bench::strategy::{self, Strategy};
use ctxopt::import::swe_agent;
use ctxopt::optimizer::{self, BuildConfig};
use ctxopt::tokenizer::Tokenizer;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scenario_dir() -> PathBuf {
    repo().join("fixtures/scenarios")
}

fn scenario_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(scenario_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
}

fn load(name: &str) -> Scenario {
    scenario::load_file(&scenario_dir().join(format!("{name}.json"))).unwrap()
}

fn config(scenario: &Scenario) -> BuildConfig {
    BuildConfig {
        budget: scenario.budget,
        ..BuildConfig::default()
    }
}

#[test]
fn there_are_at_least_fourteen_scenarios_and_all_load() {
    let scenarios = scenario::load_dir(&scenario_dir()).unwrap();
    assert!(scenarios.len() >= 14, "{} scenarios", scenarios.len());
    let real = scenarios.iter().filter(|s| s.source.is_some()).count();
    assert!(real >= 2, "{real} scenarios from real trajectories");
    assert!(scenarios.iter().any(|s| s.expect_budget_conflict));
    for s in &scenarios {
        assert!(!s.required_facts.is_empty(), "{}", s.name);
        assert!(!s.relevant.is_empty(), "{}", s.name);
    }
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(repo().join("docs/records.schema.json")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap()
}

#[test]
fn every_scenarios_records_follow_the_schema() {
    let validator = schema();
    for path in scenario_files() {
        let file: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&file["records"])
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{}: {errors:?}", path.display());
    }
}

#[test]
fn the_schema_rejects_what_the_parser_rejects() {
    let validator = schema();
    for bad in [
        r#"{"errors":[{"message":3}]}"#,
        r#"{"errors":[{"stack":"x"}]}"#,
        r#"{"testResults":[{"name":"a","status":"done"}]}"#,
        r#"{"files":[{"path":"a","content":"","priority":1.5}]}"#,
        r#"{"messages":[{"role":"user","text":"x","timestamp":"yesterday"}]}"#,
        r#"{"toolOutputs":[{"tool":"  ","output":""}]}"#,
        r#"[1]"#,
    ] {
        let value: serde_json::Value = serde_json::from_str(bad).unwrap();
        assert!(!validator.is_valid(&value), "schema accepted {bad}");
        assert!(
            optimizer::parse::parse_records(bad).is_err(),
            "parser accepted {bad}"
        );
    }
}

#[test]
fn imported_scenarios_equal_the_importers_output() {
    let real_world = repo().join("fixtures/real-world");
    let mut checked = 0;
    for s in scenario::load_dir(&scenario_dir()).unwrap() {
        let Some(source) = &s.source else { continue };
        assert_eq!(source.importer, "swe-agent");
        let path = real_world.join(&source.trajectory);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (the real-world data lives in fixtures/real-world)",
                path.display()
            )
        });
        let options = swe_agent::ImportOptions {
            cut: source.cut.map(swe_agent::Cut::Share),
        };
        let imported = swe_agent::import_with(&text, &options).unwrap();
        assert_eq!(imported.records, s.records, "{}", s.name);
        assert!(imported.records.diffs.is_empty(), "{}", s.name);
        assert!(
            imported.kept_steps < imported.steps,
            "{}: a mid-work cut",
            s.name
        );
        for file in &imported.final_patch {
            assert!(
                s.required_facts.contains(&file.path),
                "{}: {}",
                s.name,
                file.path
            );
        }
        checked += 1;
    }
    assert!(checked >= 2);
}

/// One snapshot of the rendered context per scenario; each scenario is built twice, on one
/// counting thread and on the default number, and the two results must be byte-identical.
/// Every scenario is compared before the test fails, so one run writes every changed
/// snapshot (`.snap.new`) and names them all.
#[test]
fn every_scenario_builds_identically_and_matches_its_snapshot() {
    let mut differ = Vec::new();
    for s in scenario::load_dir(&scenario_dir()).unwrap() {
        let single = BuildConfig {
            threads: 1,
            ..config(&s)
        };
        let first = optimizer::build(&s.records, &single).unwrap();
        let second = optimizer::build(&s.records, &config(&s)).unwrap();
        let first_bytes = serde_json::to_string(&first).unwrap();
        let second_bytes = serde_json::to_string(&second).unwrap();
        assert!(first_bytes == second_bytes, "{}: two builds differ", s.name);
        let compared = std::panic::catch_unwind(|| {
            insta::assert_snapshot!(format!("scenario__{}", s.name), first.context);
        });
        if compared.is_err() {
            differ.push(s.name.clone());
        }
    }
    assert!(differ.is_empty(), "snapshots differ: {differ:?}");
}

#[test]
fn ctxopt_meets_the_scenario_benchmarks_reference_bar() {
    // What `ctxopt bench` prints and docs/benchmarks.md records: every required fact and the
    // budget on every scenario, recall 100 %, reduction and precision above the reference's.
    let scenarios = scenario::load_dir(&scenario_dir()).unwrap();
    let run = report::run_all(&scenarios, Tokenizer::O200kBase);
    assert!(run.meets_bar, "{}", report::text_table(&run));
    // The canary: a fact no record holds is missed, and the bar is not met.
    let mut missing = scenarios.clone();
    missing[0]
        .required_facts
        .push("a fact that no record of this scenario holds".into());
    let run = report::run_all(&missing, Tokenizer::O200kBase);
    assert!(!run.meets_bar, "{}", report::text_table(&run));
}

#[test]
fn truncation_loses_facts_on_the_tight_budget() {
    // Canary for the facts metric: head truncation cuts the NPE away, so strategy B must
    // score below 100% here.
    let s = load("tight-budget");
    let raw = Tokenizer::O200kBase.count(&strategy::raw_context(&s.records));
    let run = strategy::run(
        Strategy::DedupeTruncate,
        &s.records,
        s.budget,
        Tokenizer::O200kBase,
    )
    .unwrap();
    let m = metrics::measure(&s, &run, raw, Tokenizer::O200kBase);
    assert!(m.facts_retained < m.facts_total, "{m:?}");
    assert!(m.within_budget && m.budget_ok);
    assert!(m.reduction > 0.0);
    assert!(m.recall.unwrap() < 1.0);
}

#[test]
fn raw_breaks_the_budget_and_conflicts_count_only_where_expected() {
    // Canary for budget compliance: A never fits, and does not report a conflict.
    let s = load("impossible-budget");
    let raw_text = strategy::raw_context(&s.records);
    let raw = Tokenizer::O200kBase.count(&raw_text);
    let run = strategy::run(Strategy::Raw, &s.records, s.budget, Tokenizer::O200kBase).unwrap();
    let m = metrics::measure(&s, &run, raw, Tokenizer::O200kBase);
    assert!(!m.within_budget && !m.budget_ok);
    assert_eq!(m.reduction, 0.0);
    assert_eq!((m.facts_retained, m.recall), (m.facts_total, Some(1.0)));
    // A reported conflict excuses the overrun only in a scenario that expects one.
    let mut conflicted = run.clone();
    conflicted.conflict_reported = true;
    assert!(metrics::measure(&s, &conflicted, raw, Tokenizer::O200kBase).budget_ok);
    let mut fits = s.clone();
    fits.expect_budget_conflict = false;
    assert!(!metrics::measure(&fits, &conflicted, raw, Tokenizer::O200kBase).budget_ok);
}

#[test]
fn precision_recall_and_attribution_on_a_hand_made_scenario() {
    let s = scenario::from_json(
        r#"{"name":"hand","description":"d","budget":1000,
            "records":{"task":"fix parse_date",
              "messages":[{"id":"m1","role":"user","text":"parse_date fails on leap days"},
                          {"id":"m2","role":"user","text":"lunch?"},
                          {"id":"m3","role":"assistant","text":"ok"}],
              "errors":[{"id":"e1","message":"ValueError: day is out of range for month"}]},
            "required_facts":["day is out of range"],"relevant":["m1","e1"],"irrelevant":["m2"]}"#,
    )
    .unwrap();
    let mut run = strategy::run(Strategy::Raw, &s.records, s.budget, Tokenizer::O200kBase).unwrap();
    // Keep m1 (relevant), m2 (irrelevant), m3 (unlabelled); drop e1 (relevant).
    run.kept = ["m1", "m2", "m3"].iter().map(|s| s.to_string()).collect();
    run.context =
        "[source: record m1] parse_date fails\n[source: record m2] lunch?\n[source: record m7] ok"
            .into();
    let m = metrics::measure(&s, &run, 100, Tokenizer::O200kBase);
    assert_eq!(m.precision, Some(0.5));
    assert_eq!(m.recall, Some(0.5));
    assert_eq!(m.relevant_missing, ["e1"]);
    assert_eq!(m.irrelevant_kept, ["m2"]);
    assert_eq!(
        (m.tags_total, m.tags_resolved, m.attribution_ok),
        (3, 2, false)
    );
    assert_eq!((m.facts_retained, m.facts_missing.len()), (0, 1));
}

fn ctxopt(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ctxopt"))
        .args(args)
        .output()
        .unwrap()
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn build_rejects_malformed_records_with_the_place_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("context.txt");
    for (text, place) in [
        (
            r#"{"errors":[{"message":"a"},{"message":"b"},{"message":"c"},{"message":3}]}"#,
            "errors[3].message: expected a string",
        ),
        (
            r#"{"testResults":[{"name":"t","status":"done"}]}"#,
            "testResults[0].status: unknown value \"done\"",
        ),
        ("{\"task\": \"x\"} trailing", "trailing characters"),
    ] {
        let records = write(dir.path(), "records.json", text);
        let result = ctxopt(&[
            "build",
            "--records",
            records.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(place), "{stderr}");
        assert!(!out.exists(), "an output file was written for {text}");
    }
}

#[test]
fn import_swe_rejects_malformed_trajectories_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("records.json");
    for (text, place) in [
        (
            r#"{"trajectory_format":"other","messages":[]}"#,
            "trajectory_format: expected \"mini-swe-agent-1.1\"",
        ),
        (
            r#"{"trajectory_format":"mini-swe-agent-1.1","messages":[{"role":"user","content":"no task"}]}"#,
            "messages[0].content: expected a <pr_description> block",
        ),
        ("{not json", "not JSON"),
    ] {
        let traj = write(dir.path(), "t.traj.json", text);
        let result = ctxopt(&[
            "import-swe",
            traj.to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&result.stderr);
        assert_eq!(result.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(place), "{stderr}");
        assert!(!out.exists());
    }
}

#[test]
fn import_swe_writes_records_the_parser_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("records.json");
    let traj =
        repo().join("fixtures/real-world/swe-agent-trajectories/pydicom__pydicom-901.traj.json");
    let result = ctxopt(&[
        "import-swe",
        traj.to_str().unwrap(),
        "--cut",
        "0.4",
        "--output",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        result.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&result.stderr)
    );
    let records = optimizer::parse::parse_records(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert!(
        records.diffs.is_empty(),
        "the final patch is never a record"
    );
    let whole = swe_agent::import_trajectory(&std::fs::read_to_string(&traj).unwrap()).unwrap();
    assert!(records.messages.len() < whole.messages.len());
    assert!(
        records.files.iter().any(|f| f.path == "pydicom/config.py"),
        "the cat of config.py is a file record"
    );
    let bad = ctxopt(&["import-swe", traj.to_str().unwrap(), "--cut", "1.5"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid cut"));
    assert!(records
        .task
        .unwrap()
        .starts_with("pydicom should not define handler"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&out).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn bench_writes_json_and_only_its_own_markdown_section() {
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    std::fs::copy(
        scenario_dir().join("superseded-decisions.json"),
        scenarios.join("superseded-decisions.json"),
    )
    .unwrap();
    let out = dir.path().join("benchmarks");
    let doc = write(
        dir.path(),
        "benchmarks.md",
        "# Benchmarks\n\n## Proxy\n\nproxy figures stay\n\n## Optimizer\n\nold figures\n",
    );
    let result = ctxopt(&[
        "bench",
        "--scenarios",
        scenarios.to_str().unwrap(),
        "--output-dir",
        out.to_str().unwrap(),
        "--markdown",
        doc.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&result.stdout);
    assert!(matches!(result.status.code(), Some(0 | 1)), "{stdout}");
    assert!(
        stdout.contains("superseded-decisions  B dedupe+truncate"),
        "{stdout}"
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("optimizer-scenarios.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(json["scenarios"][0]["name"], "superseded-decisions");
    assert_eq!(
        json["scenarios"][0]["strategies"].as_array().unwrap().len(),
        3
    );
    let md = std::fs::read_to_string(&doc).unwrap();
    assert!(
        md.starts_with("# Benchmarks\n\n## Proxy\n\nproxy figures stay\n\n## Optimizer\n"),
        "{md}"
    );
    assert!(!md.contains("old figures"));
    assert!(md.contains("| superseded-decisions | C ctxopt |"), "{md}");
}
