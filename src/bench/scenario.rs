//! Benchmark scenarios: one JSON file each in `fixtures/scenarios/` (format in
//! `docs/records.md`, "Scenario files").

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::generate::{self, Generate};
use crate::optimizer::parse::parse_records;
use crate::records::Records;

/// Where a scenario's records came from, when they were imported.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScenarioSource {
    /// The importer (`swe-agent`).
    pub importer: String,
    /// The imported file, relative to the real-world data folder.
    pub trajectory: String,
    /// The share of the trajectory's steps imported (`import-swe --cut`), when cut.
    #[serde(default)]
    pub cut: Option<f64>,
}

/// A scenario file as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioFile {
    name: String,
    description: String,
    budget: usize,
    #[serde(default)]
    expect_budget_conflict: bool,
    #[serde(default)]
    source: Option<ScenarioSource>,
    #[serde(default)]
    generate: Vec<Generate>,
    records: Value,
    required_facts: Vec<String>,
    relevant: Vec<String>,
    irrelevant: Vec<String>,
}

/// A loaded scenario: generated text expanded, records validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Short name (the file's stem).
    pub name: String,
    /// What it exercises.
    pub description: String,
    /// The token budget.
    pub budget: usize,
    /// Whether the mandatory content exceeds the budget, so a correct build reports
    /// `BUDGET_CONFLICT` instead of fitting.
    pub expect_budget_conflict: bool,
    /// Provenance of imported records.
    pub source: Option<ScenarioSource>,
    /// The session.
    pub records: Records,
    /// Exact strings the context must contain.
    pub required_facts: Vec<String>,
    /// Ids of records a good context keeps.
    pub relevant: Vec<String>,
    /// Ids of records a good context leaves out.
    pub irrelevant: Vec<String>,
}

/// Why a scenario could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file or folder could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("{path}: {message}")]
    Invalid {
        /// The path.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// Loads every `*.json` in `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, ScenarioError> {
    let io = |source| ScenarioError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(io)?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .map_err(io)?;
    paths.retain(|p| p.extension().is_some_and(|e| e == "json"));
    paths.sort();
    paths.iter().map(|p| load_file(p)).collect()
}

/// Loads one scenario file.
pub fn load_file(path: &Path) -> Result<Scenario, ScenarioError> {
    let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    from_json(&text).map_err(|message| ScenarioError::Invalid {
        path: path.to_path_buf(),
        message,
    })
}

/// Reads a scenario from its JSON text; the error names the place.
pub fn from_json(text: &str) -> Result<Scenario, String> {
    let de = &mut serde_json::Deserializer::from_str(text);
    let mut file: ScenarioFile =
        serde_path_to_error::deserialize(de).map_err(|e| format!("{}: {}", e.path(), e.inner()))?;
    for (i, directive) in file.generate.iter().enumerate() {
        let generated = generate::expand(directive).map_err(|e| format!("generate[{i}].{e}"))?;
        let slot = find_record_mut(&mut file.records, &directive.record).ok_or_else(|| {
            format!(
                "generate[{i}].record: no record with id \"{}\"",
                directive.record
            )
        })?;
        slot.insert(directive.field.clone(), Value::String(generated));
    }
    let records_text = serde_json::to_string(&file.records).map_err(|e| e.to_string())?;
    let records = parse_records(&records_text).map_err(|e| format!("records.{e}"))?;
    let scenario = Scenario {
        name: file.name,
        description: file.description,
        budget: file.budget,
        expect_budget_conflict: file.expect_budget_conflict,
        source: file.source,
        records,
        required_facts: file.required_facts,
        relevant: file.relevant,
        irrelevant: file.irrelevant,
    };
    check_labels(&scenario)?;
    Ok(scenario)
}

/// The ids of every record (all scenario records carry one).
pub(crate) fn record_ids(records: &Records) -> Vec<Option<&str>> {
    let mut ids = Vec::new();
    ids.extend(records.messages.iter().map(|r| r.common.id.as_deref()));
    ids.extend(records.tool_outputs.iter().map(|r| r.common.id.as_deref()));
    ids.extend(records.errors.iter().map(|r| r.common.id.as_deref()));
    ids.extend(records.files.iter().map(|r| r.common.id.as_deref()));
    ids.extend(records.diffs.iter().map(|r| r.common.id.as_deref()));
    ids.extend(records.test_results.iter().map(|r| r.common.id.as_deref()));
    ids.extend(records.decisions.iter().map(|r| r.common.id.as_deref()));
    ids
}

/// Labels must name existing records, no record may be both, every record needs an id
/// (so kept records can be told apart), and every fact must occur in the input.
fn check_labels(scenario: &Scenario) -> Result<(), String> {
    let ids = record_ids(&scenario.records);
    if ids.iter().any(Option::is_none) {
        return Err("records: every record of a scenario needs an id".into());
    }
    let ids: BTreeSet<&str> = ids.into_iter().flatten().collect();
    for (list, labels) in [
        ("relevant", &scenario.relevant),
        ("irrelevant", &scenario.irrelevant),
    ] {
        if let Some(unknown) = labels.iter().find(|id| !ids.contains(id.as_str())) {
            return Err(format!("{list}: no record with id \"{unknown}\""));
        }
    }
    if let Some(both) = scenario
        .relevant
        .iter()
        .find(|id| scenario.irrelevant.contains(id))
    {
        return Err(format!(
            "\"{both}\" is labelled both relevant and irrelevant"
        ));
    }
    let raw = super::strategy::raw_context(&scenario.records);
    if let Some(missing) = scenario
        .required_facts
        .iter()
        .find(|fact| !raw.contains(fact.as_str()))
    {
        return Err(format!(
            "required_facts: \"{missing}\" does not occur in the records"
        ));
    }
    Ok(())
}

/// The object of the record with `id` in any list of `records`.
fn find_record_mut<'a>(
    records: &'a mut Value,
    id: &str,
) -> Option<&'a mut serde_json::Map<String, Value>> {
    records
        .as_object_mut()?
        .values_mut()
        .filter_map(Value::as_array_mut)
        .flatten()
        .filter_map(Value::as_object_mut)
        .find(|r| r.get("id").and_then(Value::as_str) == Some(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{"name":"n","description":"d","budget":100,
        "records":{"task":"fix the parser","messages":[{"id":"m1","role":"user","text":"the parser fails"}],
                   "toolOutputs":[{"id":"t1","tool":"cat log","output":""}]},
        "generate":[{"record":"t1","lines":3,"seed":1,"start":"2026-01-01T00:00:00Z","step_ms":1000,
                     "templates":["{time} ok"],"insert":[{"line":2,"text":"{time} parser error E42"}]}],
        "required_facts":["parser error E42"],"relevant":["t1"],"irrelevant":["m1"]}"#;

    /// The error `from_json` gives for [`MINIMAL`] with `from` replaced by `to`.
    fn error_after(from: &str, to: &str) -> String {
        from_json(&MINIMAL.replace(from, to)).unwrap_err()
    }

    #[test]
    fn loads_and_expands_generated_text() {
        let scenario = from_json(MINIMAL).unwrap();
        assert_eq!(
            scenario.records.tool_outputs[0].output,
            "2026-01-01 00:00:00.000 ok\n2026-01-01 00:00:01.000 parser error E42\n2026-01-01 00:00:02.000 ok\n"
        );
    }

    #[test]
    fn rejects_broken_labels_and_facts() {
        assert_eq!(
            error_after(r#""irrelevant":["m1"]"#, r#""irrelevant":["m9"]"#),
            "irrelevant: no record with id \"m9\""
        );
        assert_eq!(
            error_after(r#""irrelevant":["m1"]"#, r#""irrelevant":["t1"]"#),
            "\"t1\" is labelled both relevant and irrelevant"
        );
        assert_eq!(
            error_after("parser error E42\"]", "parser error E43\"]"),
            "required_facts: \"parser error E43\" does not occur in the records"
        );
        assert_eq!(
            error_after(r#""id":"m1","#, ""),
            "records: every record of a scenario needs an id"
        );
    }

    #[test]
    fn reports_invalid_records_with_their_place() {
        assert_eq!(
            error_after(r#""role":"user""#, r#""role":"bot""#),
            "records.messages[0].role: unknown value \"bot\", expected one of user, assistant, system, tool"
        );
        assert_eq!(
            error_after(r#""record":"t1""#, r#""record":"t2""#),
            "generate[0].record: no record with id \"t2\""
        );
    }
}
