use serde_json::{json, Value};

use super::*;
use crate::bench::real::{load_cuts, Half, RealCut};
use crate::optimizer::parse::parse_records;
use crate::optimizer::{self, BuildConfig};
use crate::records::Common;

fn run(id: &str, tool: &str, args: Option<Value>, output: &str, exit: Option<i64>) -> ToolOutput {
    ToolOutput {
        common: Common {
            id: Some(id.into()),
            timestamp: Some(format!(
                "2026-03-02T09:00:{}Z",
                &id[1..].parse::<u8>().unwrap() + 10
            )),
            priority: None,
        },
        tool: tool.into(),
        args,
        output: output.into(),
        exit_code: exit,
        cwd: None,
    }
}

fn session() -> Records {
    Records {
        task: Some("Fix the rounding in pkg/total.py".into()),
        tool_outputs: vec![
            run("t1", "cd /srv/app && ls pkg", None, "total.py\n", Some(0)),
            run(
                "t2",
                "sed -n '3,4p' /srv/app/pkg/total.py",
                None,
                "c\nd\n",
                Some(0),
            ),
            run(
                "t3",
                "bash",
                Some(json!({"command": "cat -n pkg/total.py | sed -n '7,7p'"})),
                "     7\tg\n",
                None,
            ),
            run(
                "t4",
                "cat missing.py",
                None,
                "cat: missing.py: No such file\n",
                Some(1),
            ),
            run(
                "t5",
                "shell",
                Some(json!({"cmd": "head -1 README.md"})),
                "# App\n",
                Some(0),
            ),
            run("t6", "sed -i 's/g/G/' pkg/total.py", None, "", Some(0)),
            run("t7", "sed -n '7,7p' pkg/total.py", None, "G\n", Some(0)),
        ],
        ..Records::default()
    }
}

#[test]
fn file_reads_become_file_records_merged_with_their_ids_and_times() {
    let given = session();
    let understood = understand(given.clone());
    let ids: Vec<&str> = understood
        .tool_outputs
        .iter()
        .map(|t| t.common.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["t1", "t4", "t6"]);
    let files = crate::records::file_triples(&understood);
    assert_eq!(
        files,
        [
            ("t2", "pkg/total.py", "[ctxopt: lines 1-2 not seen]\nc\nd\n"),
            (
                "t3",
                "pkg/total.py",
                "[ctxopt: lines 1-2 not seen]\nc\nd\n[ctxopt: lines 5-6 not seen]\ng\n"
            ),
            ("t5", "README.md", "# App\n"),
            // `sed -i` wrote the file: what was seen of it before is forgotten.
            ("t7", "pkg/total.py", "[ctxopt: lines 1-6 not seen]\nG\n"),
        ]
    );
    let by_id = |id: &str| {
        given
            .tool_outputs
            .iter()
            .find(|t| t.common.id.as_deref() == Some(id))
    };
    for f in &understood.files {
        assert_eq!(
            Some(&f.common),
            by_id(f.common.id.as_deref().unwrap()).map(|t| &t.common)
        );
    }
}

#[test]
fn understanding_twice_changes_nothing() {
    let once = understand(session());
    assert_ne!(
        once,
        session(),
        "canary: the first pass changes the records"
    );
    assert_eq!(understand(once.clone()), once);
    // Records with no file read are left exactly as given.
    let mut none = session();
    none.tool_outputs
        .retain(|t| ["t1", "t4", "t6"].contains(&t.common.id.as_deref().unwrap()));
    assert_eq!(understand(none.clone()), none);
}

#[test]
fn a_records_file_with_cat_and_sed_reads_builds_with_file_sources() {
    let text = json!({
        "task": "Fix the rounding in calculate_total (src/billing/total.py).",
        "toolOutputs": [
            {"id": "t1", "tool": "cat src/billing/total.py", "exitCode": 0,
             "output": "def calculate_total(items):\n    return round(sum(items), 2)\n"},
            {"id": "t2", "tool": "bash", "args": {"command": "sed -n '10,11p' src/billing/tax.py"},
             "output": "def tax(total):\n    return total * 0.2\n"},
            {"id": "t3", "tool": "pytest -q", "exitCode": 1, "output": "1 failed"}
        ]
    })
    .to_string();
    let records = parse_records(&text).unwrap();
    let kinds = |records: &Records| -> Vec<(String, String, Option<String>)> {
        let out = optimizer::build(records, &BuildConfig::default()).unwrap();
        let mut kinds: Vec<_> = out
            .sources
            .into_iter()
            .filter(|s| s.kind != "task")
            .map(|s| (s.record, s.kind, s.path))
            .collect();
        kinds.dedup();
        kinds
    };
    let file = |id: &str, path: &str| (id.to_string(), "file".to_string(), Some(path.to_string()));
    let mut understood = kinds(&understand(records.clone()));
    understood.sort();
    assert_eq!(
        understood,
        [
            file("t1", "src/billing/total.py"),
            file("t2", "src/billing/tax.py"),
            ("t3".into(), "toolOutput".into(), None),
        ]
    );
    // Canary: as given, the reads are tool outputs with no path.
    assert!(kinds(&records)
        .iter()
        .all(|(_, kind, path)| kind == "toolOutput" && path.is_none()));
}

/// The generic records a user would give for a real run: the imported cut, with each file
/// record the importer made put back, in its place, as the tool output it came from (the
/// command of the call it answers and the `<output>` of its observation, else the whole
/// observation).
fn as_given(cut: &RealCut, trajectory: &Value) -> Records {
    let messages = trajectory["messages"].as_array().unwrap();
    let mut records = cut.records.clone();
    let files = std::mem::take(&mut records.files);
    for file in files {
        let id = file.common.id.as_deref().unwrap();
        let index: usize = id.strip_prefix("file-").unwrap().parse().unwrap();
        let observation = &messages[index];
        let call = observation["tool_call_id"].as_str().unwrap();
        let command = messages[..index]
            .iter()
            .rev()
            .flat_map(|m| m["extra"]["actions"].as_array().into_iter().flatten())
            .find(|a| a["tool_call_id"] == call)
            .and_then(|a| a["command"].as_str())
            .unwrap();
        let content = observation["content"].as_str().unwrap();
        let between = |open: &str, close: &str| {
            let start = content.find(open)? + open.len();
            let end = content.rfind(close)?;
            Some(&content[start..end])
        };
        let exit_code =
            between("<returncode>", "</returncode>").and_then(|c| c.trim().parse().ok());
        let output = between("<output>\n", "</output>").unwrap_or(content);
        records.tool_outputs.push(ToolOutput {
            common: file.common,
            tool: command.to_string(),
            args: None,
            output: output.to_string(),
            exit_code,
            cwd: None,
        });
    }
    // In the order they ran: `out-N` and `file-N` are the N-th message of the trajectory.
    records.tool_outputs.sort_by_key(|t| {
        let id = t.common.id.as_deref().unwrap();
        id.rsplit('-').next().unwrap().parse::<usize>().unwrap()
    });
    records
}

/// Labelled files kept at 4k tokens.
fn files_kept(cut: &RealCut, records: &Records) -> usize {
    let config = BuildConfig {
        budget: 4000,
        ..BuildConfig::default()
    };
    let context = optimizer::build(records, &config).unwrap().context;
    cut.files.iter().filter(|f| f.kept_by(&context)).count()
}

#[test]
fn a_real_run_given_as_generic_records_keeps_the_files_the_import_keeps() {
    // A run whose reads, given as plain tool outputs, lose the patched file at every cut.
    const NAME: &str = "django__django-11422.traj.json";
    let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-world/swe-agent-trajectories")
        .join(NAME);
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(&source, dir.path().join(NAME)).unwrap();
    let trajectory: Value =
        serde_json::from_str(&std::fs::read_to_string(&source).unwrap()).unwrap();
    let cuts = load_cuts(dir.path()).unwrap();
    assert_eq!(cuts.len(), 3);
    let (mut imported, mut understood, mut raw) = (0, 0, 0);
    for cut in &cuts {
        let given = as_given(cut, &trajectory);
        assert!(given.files.is_empty() && !cut.records.files.is_empty());
        let by_import = files_kept(cut, &cut.records);
        let by_understanding = files_kept(cut, &understand(given.clone()));
        assert_eq!(by_understanding, by_import, "cut at {}", cut.share);
        imported += by_import;
        understood += by_understanding;
        raw += files_kept(cut, &given);
    }
    let labelled: usize = cuts.iter().map(|c| c.files.len()).sum();
    assert!(labelled > 0 && understood == imported);
    // Canary: given as they are, without the understanding, fewer files are kept.
    assert!(
        raw < understood,
        "raw {raw}, understood {understood} of {labelled}"
    );
}

/// The figure in `docs/records.md`: the tuning half's cuts given as generic records, beside
/// the import path (files kept at 4k). Run with `--ignored --nocapture`.
#[test]
#[ignore = "a figure over the whole corpus: about a minute in a debug build"]
fn files_kept_at_4k_on_the_tuning_half_given_as_generic_records() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-world/swe-agent-trajectories");
    let cuts = load_cuts(&dir).unwrap();
    // [labelled cuts, labelled files; files kept, cuts with all kept: imported, understood,
    // as given]
    let mut totals = [0usize; 8];
    let labelled_cuts = cuts
        .iter()
        .filter(|c| c.half == Half::Tuning && !c.files.is_empty());
    for cut in labelled_cuts {
        let text = std::fs::read_to_string(dir.join(&cut.trajectory)).unwrap();
        let given = as_given(cut, &serde_json::from_str(&text).unwrap());
        let kept = [
            files_kept(cut, &cut.records),
            files_kept(cut, &understand(given.clone())),
            files_kept(cut, &given),
        ];
        totals[0] += 1;
        totals[1] += cut.files.len();
        for (k, n) in kept.into_iter().enumerate() {
            totals[2 + k] += n;
            totals[5 + k] += usize::from(n == cut.files.len());
        }
    }
    let [cuts, labelled, imported, understood, given, all_imported, all_understood, all_given] =
        totals;
    println!("tuning half, 4k: {cuts} labelled cuts, {labelled} labelled files");
    println!("imported:             {imported} files kept, all kept in {all_imported} cuts");
    println!("generic, understood:  {understood} files kept, all kept in {all_understood} cuts");
    println!("generic, as given:    {given} files kept, all kept in {all_given} cuts");
    assert!(
        understood > given,
        "canary: the understanding keeps more files"
    );
}

#[test]
fn a_relative_read_is_resolved_where_its_command_ran_and_named_from_the_sessions_folder() {
    let at = |id: &str, cwd: &str, command: &str, output: &str| ToolOutput {
        cwd: Some(cwd.into()),
        ..run(id, command, None, output, Some(0))
    };
    let records = understand(Records {
        tool_outputs: vec![
            at("t1", "/w", "git status", "clean\n"),
            // The shell stayed in `frontend` after an earlier `cd frontend`.
            at("t2", "/w/frontend", "cat src/app.ts", "let a = 1;\n"),
            at("t3", "/w", "cd packages/cli && cat main.ts", "run();\n"),
            at("t4", "/w/frontend", "cd .. && cat README.md", "# w\n"),
            at(
                "t5",
                "/w/frontend",
                "cat /w/frontend/src/app.ts",
                "let a = 1;\n",
            ),
        ],
        ..Records::default()
    });
    let paths: Vec<&str> = records.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "frontend/src/app.ts",
            "packages/cli/main.ts",
            "README.md",
            "frontend/src/app.ts",
        ]
    );
    // On Windows, the folder and the cwd are drive paths.
    let windows = understand(Records {
        tool_outputs: vec![
            at("t1", r"D:\w", "git status", "clean\n"),
            at("t2", r"D:\w\lib", "cat a.go", "package lib\n"),
        ],
        ..Records::default()
    });
    assert_eq!(windows.files[0].path, "lib/a.go");
    // Without a `cwd`, the same reads keep the names their commands give them.
    let plain = understand(Records {
        tool_outputs: vec![run("t2", "cat src/app.ts", None, "let a = 1;\n", Some(0))],
        ..Records::default()
    });
    assert_eq!(plain.files[0].path, "src/app.ts");
}
