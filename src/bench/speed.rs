//! The speed benchmark: synthetic sessions of 1k, 10k, 60k and 100k records (about 33
//! tokens a record, so 60k records is the 2M-token session) built under the default budget,
//! timed.
//!
//! The sessions are a deterministic function of their size and seed ([`synthetic_session`]):
//! a mix of tool runs, chat, errors with stacks, file snapshots, diffs, test results and
//! decisions, with repeats (the same commands, the same failures) as in real sessions.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::generate::SplitMix64;
use super::strategy::raw_context;
use crate::optimizer::{self, BuildConfig, OptimizerError};
use crate::records::{
    Common, Decision, DecisionStatus, DiffRecord, ErrorRecord, FileRecord, Message, Records, Role,
    TestResult, TestStatus, ToolOutput,
};
use crate::tokenizer::Tokenizer;

const WORDS: [&str; 48] = [
    "parser", "config", "request", "handler", "retry", "timeout", "cache", "session", "token",
    "buffer", "schema", "index", "query", "worker", "queue", "batch", "invoice", "ledger",
    "render", "stream", "socket", "client", "server", "route", "module", "import", "export",
    "value", "field", "record", "error", "result", "check", "build", "deploy", "test", "merge",
    "branch", "commit", "patch", "file", "path", "line", "column", "frame", "stack", "trace",
    "log",
];
const COMMANDS: [&str; 6] = [
    "npm test",
    "cargo test",
    "pytest -q",
    "git status",
    "ls src",
    "go test ./...",
];
const ERROR_TYPES: [&str; 5] = [
    "TypeError",
    "ValueError",
    "KeyError",
    "IOError",
    "RangeError",
];
const PATHS: [&str; 8] = [
    "src/parser.ts",
    "src/config.rs",
    "app/handlers.py",
    "internal/queue/worker.go",
    "src/billing/total.ts",
    "lib/session.rb",
    "src/main/java/com/acme/App.java",
    "README.md",
];

fn words(rng: &mut SplitMix64, n: usize) -> String {
    (0..n)
        .map(|_| WORDS[rng.index(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

/// A synthetic session of `records` records (plus a task), fully determined by `seed`.
pub(crate) fn synthetic_session(records: usize, seed: u64) -> Records {
    let mut rng = SplitMix64::new(seed);
    let start = chrono::DateTime::from_timestamp(1_772_000_000, 0).unwrap_or_default();
    let mut out = Records {
        task: Some(
            "Fix the ParseError: unexpected token in src/http/header.ts without changing the public API."
                .into(),
        ),
        ..Records::default()
    };
    for i in 0..records {
        let common = Common {
            id: Some(format!("s{i}")),
            timestamp: Some(
                (start + chrono::Duration::seconds(i as i64 * 7))
                    .to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            ),
            priority: None,
        };
        let path = PATHS[rng.index(PATHS.len())];
        match i % 20 {
            0..=7 => {
                let failed = rng.between(0, 3) == 0;
                let output = format!(
                    "running {n} tests\n{w1}\n{status}: {w2} at {path}:{line}\n",
                    n = rng.between(1, 400),
                    w1 = words(&mut rng, 6),
                    status = if failed { "FAIL" } else { "ok" },
                    w2 = words(&mut rng, 4),
                    line = rng.between(1, 900)
                );
                out.tool_outputs.push(ToolOutput {
                    common,
                    tool: COMMANDS[rng.index(COMMANDS.len())].into(),
                    args: None,
                    output,
                    exit_code: Some(i64::from(failed)),
                    cwd: None,
                });
            }
            8..=13 => {
                let length = rng.between(8, 16) as usize;
                out.messages.push(Message {
                    common,
                    role: if i % 2 == 0 {
                        Role::Assistant
                    } else {
                        Role::User
                    },
                    text: format!("{}.", words(&mut rng, length)),
                });
            }
            14 | 15 => out.errors.push(ErrorRecord {
                common,
                // The task's error occurs a few times early on; the other errors are unrelated.
                message: if i % 2000 == 14 && i < 10_000 {
                    "ParseError: unexpected token '}' at src/http/header.ts:41:7".into()
                } else {
                    format!(
                        "{}: {} is undefined",
                        ERROR_TYPES[rng.index(ERROR_TYPES.len())],
                        words(&mut rng, 2)
                    )
                },
                stack: Some(format!(
                    "    at {w} ({path}:{l}:{c})\n    at run (src/main.ts:{m}:3)",
                    w = WORDS[rng.index(WORDS.len())],
                    l = rng.between(1, 500),
                    c = rng.between(1, 80),
                    m = rng.between(1, 99)
                )),
            }),
            16 => out.files.push(FileRecord {
                common,
                path: path.into(),
                content: format!(
                    "fn {}() {{\n    {}\n}}\n",
                    WORDS[rng.index(WORDS.len())],
                    words(&mut rng, 6)
                ),
            }),
            17 => out.diffs.push(DiffRecord {
                common,
                path: path.into(),
                diff: format!(
                    "@@ -{l} +{l} @@\n-{a}\n+{b}\n",
                    l = rng.between(1, 400),
                    a = words(&mut rng, 4),
                    b = words(&mut rng, 4)
                ),
            }),
            18 => out.test_results.push(TestResult {
                common,
                name: format!("{}::{}", path, words(&mut rng, 2).replace(' ', "_")),
                status: if rng.between(0, 2) == 0 {
                    TestStatus::Failed
                } else {
                    TestStatus::Passed
                },
                output: Some(words(&mut rng, 5)),
            }),
            _ => out.decisions.push(Decision {
                common,
                text: format!("We could change the {} next.", words(&mut rng, 2)),
                // A few accepted decisions early on; the rest are open or closed.
                status: match (i % 2000, rng.between(0, 2)) {
                    (19, _) if i < 10_000 => DecisionStatus::Accepted,
                    (_, 0) => DecisionStatus::Proposed,
                    (_, 1) => DecisionStatus::Rejected,
                    _ => DecisionStatus::Superseded,
                },
            }),
        }
    }
    out
}

/// The session sizes of `ctxopt bench --speed`; 60,000 records is about 2M tokens.
pub const SIZES: [usize; 4] = [1_000, 10_000, 60_000, 100_000];

/// One session size's timing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedRow {
    /// Records in the session.
    pub records: usize,
    /// Tokens of the session, rendered whole.
    pub(crate) input_tokens: usize,
    /// Bytes of the session, rendered whole.
    pub(crate) input_bytes: usize,
    /// Builds timed.
    pub runs: usize,
    /// Fastest build, milliseconds.
    pub(crate) min_ms: f64,
    /// Median build, milliseconds.
    pub(crate) median_ms: f64,
    /// Median microseconds per thousand input tokens.
    pub(crate) us_per_1k_tokens: f64,
    /// Tokens of the built context.
    pub(crate) output_tokens: usize,
}

/// The speed benchmark's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpeedReport {
    /// The tokenizer.
    pub tokenizer: String,
    /// The budget of every build.
    pub budget: usize,
    /// Hardware threads available.
    pub threads: usize,
    /// Whether the binary was built with optimizations.
    pub release: bool,
    /// One row per size.
    pub rows: Vec<SpeedRow>,
}

/// Builds a synthetic session of each size `runs` times and times the builds.
pub fn measure(
    sizes: &[usize],
    runs: usize,
    budget: usize,
    tokenizer: Tokenizer,
) -> Result<SpeedReport, OptimizerError> {
    tokenizer.warm();
    let config = BuildConfig {
        budget,
        tokenizer,
        ..BuildConfig::default()
    };
    let mut rows = Vec::new();
    for &size in sizes {
        let records = synthetic_session(size, 0x5EED ^ size as u64);
        let raw = raw_context(&records);
        let input_tokens = tokenizer.count(&raw);
        let mut times = Vec::with_capacity(runs);
        let mut output_tokens = 0;
        for _ in 0..runs.max(1) {
            let started = Instant::now();
            let output = optimizer::build(&records, &config)?;
            times.push(started.elapsed().as_secs_f64() * 1000.0);
            output_tokens = output.stats.output_tokens;
        }
        times.sort_by(f64::total_cmp);
        let median_ms = times[times.len() / 2];
        rows.push(SpeedRow {
            records: size,
            input_tokens,
            input_bytes: raw.len(),
            runs: times.len(),
            min_ms: times[0],
            median_ms,
            us_per_1k_tokens: median_ms * 1000.0 / (input_tokens.max(1) as f64 / 1000.0),
            output_tokens,
        });
    }
    Ok(SpeedReport {
        tokenizer: tokenizer.name().into(),
        budget,
        threads: std::thread::available_parallelism().map_or(1, usize::from),
        release: !cfg!(debug_assertions),
        rows,
    })
}

impl SpeedReport {
    /// The speed part of the `## Optimizer` section.
    pub fn markdown(&self) -> String {
        let mut out = format!(
            "### Speed\n\n`ctxopt bench --speed`: synthetic sessions (deterministic, see `src/bench/speed.rs`), \
             budget {}, {} hardware threads, {} build, {} builds per size. \
             The 60,000-record session is the 2M-token one.\n\n\
             | records | input tokens | input MB | min ms | median ms | µs per 1k tokens | output tokens |\n\
             |---|---|---|---|---|---|---|\n",
            self.budget,
            self.threads,
            if self.release { "release" } else { "debug" },
            self.rows.first().map_or(0, |r| r.runs),
        );
        for r in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {} |\n",
                r.records,
                r.input_tokens,
                r.input_bytes as f64 / 1_000_000.0,
                r.min_ms,
                r.median_ms,
                r.us_per_1k_tokens,
                r.output_tokens
            ));
        }
        out.push('\n');
        if let Some(row) = self.two_million() {
            out.push_str(&format!(
                "2M-token session ({} tokens): median {:.0} ms against the 1,000 ms target — {}. \
                 Time per token across sizes: {}.\n\n",
                row.input_tokens,
                row.median_ms,
                if row.median_ms < 1000.0 {
                    "met"
                } else {
                    "NOT met"
                },
                self.rows
                    .iter()
                    .map(|r| format!("{:.2} µs", r.us_per_1k_tokens / 1000.0))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out
    }

    /// The row closest to 2M input tokens, when one is within 10% of it.
    pub(crate) fn two_million(&self) -> Option<&SpeedRow> {
        self.rows
            .iter()
            .filter(|r| r.input_tokens.abs_diff(2_000_000) <= 200_000)
            .min_by_key(|r| r.input_tokens.abs_diff(2_000_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_sessions_are_deterministic_and_valid() {
        let a = synthetic_session(200, 3);
        assert_eq!(a, synthetic_session(200, 3));
        assert_ne!(a, synthetic_session(200, 4));
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(crate::optimizer::parse::parse_records(&text).unwrap(), a);
        let total = a.messages.len()
            + a.tool_outputs.len()
            + a.errors.len()
            + a.files.len()
            + a.diffs.len()
            + a.test_results.len()
            + a.decisions.len();
        assert_eq!(total, 200);
        assert!(!a.decisions.is_empty() && !a.test_results.is_empty() && !a.diffs.is_empty());
    }

    #[test]
    fn about_thirty_tokens_a_record() {
        let session = synthetic_session(1000, 1);
        let tokens = Tokenizer::O200kBase.count(&raw_context(&session));
        assert!((25_000..40_000).contains(&tokens), "{tokens}");
    }
}
