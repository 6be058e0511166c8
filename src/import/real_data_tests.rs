//! Every real session file in `fixtures/real-world/agent-transcripts` imports, every record
//! passes the records parser, and the counts by kind (and what was skipped) are snapshotted.

use std::collections::BTreeMap;
use std::path::Path;

use super::{import_text, ImportOptions, ImportSummary, SourceFormat};
use crate::optimizer::parse::parse_records;

fn dir(sub: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/real-world/agent-transcripts")
        .join(sub)
}

/// The text of the corpus's session file `name` in `sub` (`claude-code`, `codex-cli`, …).
pub(crate) fn corpus_file(sub: &str, name: &str) -> String {
    std::fs::read_to_string(dir(sub).join(name)).unwrap()
}

fn files(sub: &str, ends: &str) -> Vec<std::path::PathBuf> {
    let mut out: Vec<_> = std::fs::read_dir(dir(sub))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(ends))
        .collect();
    out.sort();
    out
}

#[test]
fn every_real_transcript_imports_snapshot() {
    let mut all: BTreeMap<String, ImportSummary> = BTreeMap::new();
    let sets = [
        (SourceFormat::ClaudeCode, files("claude-code", ".jsonl")),
        (SourceFormat::ClaudeCode, files("claude-hooks", "chat.json")),
        (SourceFormat::GeminiCli, files("gemini-cli", ".json")),
        (SourceFormat::GeminiCli, files("gemini-cli", ".jsonl")),
        (SourceFormat::Codex, files("codex-cli", ".jsonl")),
    ];
    for (format, paths) in sets {
        assert!(!paths.is_empty(), "no {format} files");
        for path in paths {
            let text = std::fs::read_to_string(&path).unwrap();
            let (records, summary) = import_text(format, &text, &ImportOptions::default()).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            assert!(summary.errors.is_empty(), "{name}: {summary}");
            assert!(!summary.records.is_empty(), "{name}: no records");
            assert!(records.task.is_some(), "{name}: no task");
            let json = serde_json::to_string(&records).unwrap();
            assert_eq!(parse_records(&json).unwrap(), records, "{name}");
            all.insert(format!("{format}/{name}"), summary);
        }
    }
    insta::assert_json_snapshot!(all);
}
