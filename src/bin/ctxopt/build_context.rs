//! `ctxopt build`: records in, a budgeted, provenance-tagged context out.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use ctxopt::optimizer::parse::parse_records;
use ctxopt::optimizer::{self, BuildConfig, DEFAULT_BUDGET};
use ctxopt::records::understand::understand;
use ctxopt::records::Records;
use ctxopt::tokenizer::Tokenizer;
use serde_json::Value;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Format {
    /// The context text.
    Text,
    /// The whole result: context, sources, omitted, report, stats.
    Json,
}

/// Arguments of `ctxopt build`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The records file (JSON, see docs/records.md).
    #[arg(long, conflicts_with = "stdin", required_unless_present = "stdin")]
    records: Option<PathBuf>,
    /// Read the records from standard input.
    #[arg(long)]
    stdin: bool,
    /// The task, overriding the records' own.
    #[arg(long)]
    task: Option<String>,
    /// The token budget of the context.
    #[arg(long, default_value_t = DEFAULT_BUDGET)]
    budget: usize,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Write here (whole, mode 0600, via a temporary file) instead of standard output.
    #[arg(long)]
    output: Option<PathBuf>,
    /// The tokenizer: o200k_base, cl100k_base or chars/4.
    #[arg(long, default_value = "o200k_base")]
    tokenizer: Tokenizer,
}

/// Runs `ctxopt build`. Malformed records are an error naming the place; nothing is
/// written then.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (text, origin) = match &args.records {
        Some(path) => (
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
            path.display().to_string(),
        ),
        None => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("reading standard input")?;
            (s, "<stdin>".to_string())
        }
    };
    let records = parse_records(&text).with_context(|| format!("{origin}: malformed records"))?;
    if let Some(problem) = foreign_document(&text, &records) {
        anyhow::bail!("{origin}: malformed records: {problem}");
    }
    // A tool output whose command reads a file is that file's content (docs/records.md).
    let records = understand(records);
    let config = BuildConfig {
        budget: args.budget,
        task: args.task,
        tokenizer: args.tokenizer,
        ..BuildConfig::default()
    };
    let out = optimizer::build(&records, &config)
        .with_context(|| format!("{origin}: invalid records"))?;
    let mut bytes = match args.format {
        Format::Text => out.context.into_bytes(),
        Format::Json => serde_json::to_vec_pretty(&out).context("encoding the result")?,
    };
    if args.format == Format::Json {
        bytes.push(b'\n');
    }
    crate::output_file::emit(args.output.as_deref(), &bytes)?;
    Ok(ExitCode::SUCCESS)
}

/// What is wrong with a JSON object none of whose members is a field of the records format:
/// it reads as an empty session (unknown fields are ignored), but it is another kind of file,
/// and building from it would print nothing and succeed. `None` for anything else (`{}`
/// included, the empty session the format allows).
fn foreign_document(text: &str, records: &Records) -> Option<String> {
    if *records != Records::default() {
        return None;
    }
    let Ok(Value::Object(top)) = serde_json::from_str::<Value>(text) else {
        return None;
    };
    // The format's fields, as the records type itself writes them.
    let every = Records {
        task: Some(String::new()),
        ..Records::default()
    };
    let Ok(Value::Object(fields)) = serde_json::to_value(every) else {
        return None;
    };
    if top.is_empty() || top.keys().any(|k| fields.contains_key(k)) {
        return None;
    }
    let quoted = |keys: Vec<&String>| {
        keys.iter()
            .map(|k| format!("{k:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let members: Vec<&String> = top.keys().take(5).collect();
    let more = if top.len() > members.len() {
        ", …"
    } else {
        ""
    };
    Some(format!(
        "(top level): not a records file: none of its members ({}{more}) is a records field ({}; see docs/records.md)",
        quoted(members),
        quoted(fields.keys().collect())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(text: &str) -> Option<String> {
        foreign_document(text, &parse_records(text).unwrap())
    }

    #[test]
    fn a_json_object_with_no_records_field_is_named_not_a_records_file() {
        let found = problem(r#"{"name": "left-pad", "version": "1.3.0"}"#).unwrap();
        assert!(
            found.starts_with(
                r#"(top level): not a records file: none of its members ("name", "version") is a records field ("#
            ),
            "{found}"
        );
        assert!(found.contains(r#""toolOutputs""#), "{found}");
        // Canaries: the empty session, an empty list, a task alone are records files.
        for text in ["{}", r#"{"messages": []}"#, r#"{"task": "fix it", "x": 1}"#] {
            assert_eq!(problem(text), None, "{text}");
        }
    }

    #[test]
    fn a_read_given_as_a_tool_output_builds_as_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let records = dir.path().join("records.json");
        let output = dir.path().join("out.json");
        let text = serde_json::json!({
            "task": "Fix calculate_total in src/billing/total.py",
            "toolOutputs": [{"id": "t1", "tool": "bash",
                "args": {"command": "sed -n '1,2p' src/billing/total.py"},
                "output": "def calculate_total(items):\n    return round(sum(items), 2)\n"}]
        });
        std::fs::write(&records, text.to_string()).unwrap();
        let args = Args {
            records: Some(records),
            stdin: false,
            task: None,
            budget: DEFAULT_BUDGET,
            format: Format::Json,
            output: Some(output.clone()),
            tokenizer: Tokenizer::O200kBase,
        };
        run(args).unwrap();
        let out: Value = serde_json::from_slice(&std::fs::read(&output).unwrap()).unwrap();
        let read: Vec<&Value> = out["sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["record"] == "t1")
            .collect();
        assert!(!read.is_empty(), "{out:#}");
        for source in read {
            assert_eq!(
                (&source["kind"], &source["path"]),
                (
                    &serde_json::json!("file"),
                    &serde_json::json!("src/billing/total.py")
                )
            );
        }
    }
}
