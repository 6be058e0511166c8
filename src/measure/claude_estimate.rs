//! An estimate, never a count, of what Claude's tokenizer makes of a tool list and of JSON
//! text, fitted on public paired counts.
//!
//! Anthropic publishes no offline tokenizer for its current models. The public paired counts
//! (`fixtures/real-world/claude-paired-counts/`, from the lopster568/loadline run of
//! 2026-08-18, Apache-2.0) give, for twelve real tool lists, the exact `o200k_base` count and
//! what Anthropic's `count_tokens` endpoint said for model `claude-opus-5`, both for the list
//! as JSON text and for the tools passed as the API's native `tools` parameter. Two linear
//! models are fitted on eight of those servers (the split is fixed in that folder's
//! `SOURCE.md`, by a rule set before fitting) and their error is measured on the other four:
//!
//! - **native tools**: `a + b × o200k(native text)`, where the native text is the tools as a
//!   client passes them to the API (`name`, `description`, `input_schema`: the tool's
//!   `inputSchema` with same-document `$ref`s inlined, `{"type":"object","properties":{}}`
//!   when it has none) as compact JSON. `a` holds what the endpoint adds to any request
//!   carrying tools (its tool-use preamble and the one-message request).
//! - **JSON text**: `c × o200k(text)`, fitted on the tool lists counted as message text; used
//!   for tool results, which reach the model as JSON text.
//!
//! The figures model the tokenizer generation of [`MODEL`]; another generation counts
//! differently (Anthropic says its newest counts about 30 % more for the same text).

use serde::Serialize;
use serde_json::{json, Map, Value};

use super::canonical::{resolve_tool_refs, to_compact};
use crate::tokenizer::Tokenizer;

/// The model whose tokenizer the paired counts were taken with.
pub const MODEL: &str = "claude-opus-5";

/// The fitted factors (see the module docs): each minimises the squared relative error over
/// the fit servers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Factors {
    /// `a`: tokens the endpoint adds to a request carrying tools.
    pub native_base: f64,
    /// `b`: Claude tokens per o200k token of the native tools text.
    pub native_per_token: f64,
    /// `c`: Claude tokens per o200k token of JSON text.
    pub json_per_token: f64,
}

/// The factors `ctxopt` ships, fitted on the eight fit servers (a test refits them from the
/// fixtures).
pub const FACTORS: Factors = Factors {
    native_base: 196.4,
    native_per_token: 1.7473,
    json_per_token: 1.6247,
};

/// The error of [`FACTORS`] on the four held-out servers: the mean and the largest
/// absolute difference from the published count, in percent of it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct HeldOutError {
    /// Native tools: mean absolute error, percent.
    pub native_mean_pct: f64,
    /// Native tools: largest absolute error, percent.
    pub native_max_pct: f64,
    /// JSON text: mean absolute error, percent.
    pub json_mean_pct: f64,
    /// JSON text: largest absolute error, percent.
    pub json_max_pct: f64,
}

/// The held-out error of [`FACTORS`], as printed beside every estimate (one decimal).
pub const HELD_OUT_ERROR: HeldOutError = HeldOutError {
    native_mean_pct: 1.5,
    native_max_pct: 1.9,
    json_mean_pct: 1.7,
    json_max_pct: 4.1,
};

/// What every figure of a table of estimates is: the tokenizer generation and the held-out
/// error of both kinds.
pub fn label() -> String {
    let e = HELD_OUT_ERROR;
    format!(
        "estimates for the {MODEL} tokenizer from o200k, not counts; held-out error: native tools \
         {:.1} % mean, {:.1} % max; JSON text {:.1} % mean, {:.1} % max",
        e.native_mean_pct, e.native_max_pct, e.json_mean_pct, e.json_max_pct
    )
}

/// The tools as a client passes them in the API's native `tools` parameter, as compact JSON.
pub fn native_tools_text(tools: &[Value]) -> String {
    let native: Vec<Value> = tools
        .iter()
        .map(|tool| {
            let (resolved, _) = resolve_tool_refs(tool);
            let mut out = Map::new();
            out.insert(
                "name".into(),
                resolved.get("name").cloned().unwrap_or(Value::Null),
            );
            if let Some(d) = resolved
                .get("description")
                .and_then(Value::as_str)
                .filter(|d| !d.is_empty())
            {
                out.insert("description".into(), Value::String(d.to_owned()));
            }
            out.insert(
                "input_schema".into(),
                resolved
                    .get("inputSchema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
            );
            Value::Object(out)
        })
        .collect();
    to_compact(&Value::Array(native))
}

/// An estimate of Claude's count beside the exact o200k count it is made from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaudeEstimate {
    /// The tokenizer generation modelled ([`MODEL`]).
    pub model: &'static str,
    /// What is estimated: `native tools` (a tool list as the API's `tools` parameter) or
    /// `JSON text`.
    pub basis: &'static str,
    /// The exact `o200k_base` count of that text.
    pub o200k_tokens: u64,
    /// The estimated Claude tokens: not a count.
    pub estimated_tokens: u64,
    /// Mean absolute error on the held-out servers, percent.
    pub held_out_mean_error_pct: f64,
    /// Largest absolute error on the held-out servers, percent.
    pub held_out_max_error_pct: f64,
}

impl ClaudeEstimate {
    /// `~N Claude tokens as <basis> (estimate for the <model> tokenizer from M o200k tokens;
    /// held-out error …)`.
    pub fn line(&self) -> String {
        format!(
            "~{} Claude tokens as {} (estimate for the {} tokenizer from {} o200k tokens; \
             held-out error {:.1} % mean, {:.1} % max; not a count)",
            self.estimated_tokens,
            self.basis,
            self.model,
            self.o200k_tokens,
            self.held_out_mean_error_pct,
            self.held_out_max_error_pct
        )
    }
}

/// The estimated Claude tokens of `tools` passed as the native tools parameter (nothing
/// for no tools: a request without tools carries no tool-use preamble).
pub fn tool_definitions(tools: &[Value]) -> ClaudeEstimate {
    let o200k = Tokenizer::O200kBase.count(&native_tools_text(tools)) as u64;
    ClaudeEstimate {
        model: MODEL,
        basis: "native tools",
        o200k_tokens: o200k,
        estimated_tokens: if tools.is_empty() {
            0
        } else {
            (FACTORS.native_base + FACTORS.native_per_token * o200k as f64).round() as u64
        },
        held_out_mean_error_pct: HELD_OUT_ERROR.native_mean_pct,
        held_out_max_error_pct: HELD_OUT_ERROR.native_max_pct,
    }
}

/// The estimated Claude tokens of JSON text that counts `o200k_tokens` in `o200k_base`.
pub fn json_text(o200k_tokens: u64) -> ClaudeEstimate {
    ClaudeEstimate {
        model: MODEL,
        basis: "JSON text",
        o200k_tokens,
        estimated_tokens: (FACTORS.json_per_token * o200k_tokens as f64).round() as u64,
        held_out_mean_error_pct: HELD_OUT_ERROR.json_mean_pct,
        held_out_max_error_pct: HELD_OUT_ERROR.json_max_pct,
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::measure::toollist;

    /// One server of the paired counts: its id, its tools (from its capture), and the
    /// published o200k JSON count, Claude JSON count and Claude native-tools count.
    struct Paired {
        id: String,
        tools: Vec<Value>,
        o200k_json: f64,
        claude_json: f64,
        claude_native: f64,
    }

    fn paired() -> Vec<Paired> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real-world");
        let latest: Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("claude-paired-counts/latest.json")).unwrap(),
        )
        .unwrap();
        let mut out: Vec<Paired> = latest["servers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["status"] == "ok" && s["counts"]["claude"]["available"] == true)
            .map(|s| {
                let id = s["id"].as_str().unwrap().to_owned();
                assert_eq!(s["counts"]["claude"]["model"], MODEL);
                let capture = root.join(format!("tier1-tools-list/{id}-wire.jsonl"));
                let text = std::fs::read_to_string(&capture).unwrap();
                let number = |v: &Value| v.as_f64().unwrap();
                Paired {
                    tools: toollist::from_capture(&text).unwrap().tools,
                    o200k_json: number(&s["counts"]["openai_o200k"]["total_schema_tokens"]),
                    claude_json: number(&s["counts"]["claude"]["total_schema_tokens"]),
                    claude_native: number(&s["counts"]["claude"]["native_tools_param_tokens"]),
                    id,
                }
            })
            .collect();
        out.sort_by(|a, b| a.id.cmp(&b.id));
        out
    }

    /// The split of `SOURCE.md`: sorted by id, every third held out.
    fn split(all: Vec<Paired>) -> (Vec<Paired>, Vec<Paired>) {
        let (mut fit, mut held) = (Vec::new(), Vec::new());
        for (i, p) in all.into_iter().enumerate() {
            if (i + 1) % 3 == 0 {
                held.push(p);
            } else {
                fit.push(p);
            }
        }
        (fit, held)
    }

    fn native_x(p: &Paired) -> f64 {
        Tokenizer::O200kBase.count(&native_tools_text(&p.tools)) as f64
    }

    /// Mean and largest absolute error in percent.
    fn errors(pairs: impl Iterator<Item = (f64, f64)>) -> (f64, f64) {
        let pct: Vec<f64> = pairs
            .map(|(estimate, truth)| (estimate - truth).abs() / truth * 100.0)
            .collect();
        let mean = pct.iter().sum::<f64>() / pct.len() as f64;
        (mean, pct.iter().cloned().fold(0.0, f64::max))
    }

    /// The line `y = a + b x` that minimises the squared *relative* error
    /// `Σ ((a + b x − y) / y)²` (so a large server does not outweigh the small ones).
    fn relative_least_squares(points: &[(f64, f64)]) -> (f64, f64) {
        let w = |y: f64| 1.0 / (y * y);
        let (sw, swx, swy) = points
            .iter()
            .fold((0.0, 0.0, 0.0), |(sw, swx, swy), (x, y)| {
                (sw + w(*y), swx + w(*y) * x, swy + w(*y) * y)
            });
        let (mx, my) = (swx / sw, swy / sw);
        let (sxy, sxx) = points.iter().fold((0.0, 0.0), |(sxy, sxx), (x, y)| {
            (
                sxy + w(*y) * (x - mx) * (y - my),
                sxx + w(*y) * (x - mx) * (x - mx),
            )
        });
        let b = sxy / sxx;
        (my - b * mx, b)
    }

    /// The ratio `y = c x` that minimises the squared relative error: `Σ(x/y) / Σ(x/y)²`.
    fn relative_ratio(points: &[(f64, f64)]) -> f64 {
        let (s1, s2) = points.iter().fold((0.0, 0.0), |(s1, s2), (x, y)| {
            (s1 + x / y, s2 + (x / y) * (x / y))
        });
        s1 / s2
    }

    /// The factors fitted on `fit`.
    fn fit(fit: &[Paired]) -> Factors {
        let (native_base, native_per_token) = relative_least_squares(
            &fit.iter()
                .map(|p| (native_x(p), p.claude_native))
                .collect::<Vec<_>>(),
        );
        let json_per_token = relative_ratio(
            &fit.iter()
                .map(|p| (p.o200k_json, p.claude_json))
                .collect::<Vec<_>>(),
        );
        Factors {
            native_base,
            native_per_token,
            json_per_token,
        }
    }

    /// The error of `factors` on `held`, rounded to one decimal as it is printed.
    fn held_out_error(factors: Factors, held: &[Paired]) -> HeldOutError {
        let round = |v: f64| (v * 10.0).round() / 10.0;
        let native = errors(held.iter().map(|p| {
            (
                factors.native_base + factors.native_per_token * native_x(p),
                p.claude_native,
            )
        }));
        let json = errors(
            held.iter()
                .map(|p| (factors.json_per_token * p.o200k_json, p.claude_json)),
        );
        HeldOutError {
            native_mean_pct: round(native.0),
            native_max_pct: round(native.1),
            json_mean_pct: round(json.0),
            json_max_pct: round(json.1),
        }
    }

    #[test]
    fn the_split_is_the_one_source_md_fixed_before_fitting() {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/real-world/claude-paired-counts/SOURCE.md"),
        )
        .unwrap();
        let held_in_source: Vec<&str> = text
            .lines()
            .filter_map(|l| l.strip_suffix("| held out |"))
            .filter_map(|l| l.rsplit('|').next().map(str::trim))
            .collect();
        let (fit, held) = split(paired());
        assert_eq!(fit.len(), 8);
        assert_eq!(held_in_source.len(), 4, "SOURCE.md lists four held out");
        assert_eq!(
            held.iter().map(|p| p.id.as_str()).collect::<Vec<_>>(),
            held_in_source
        );
    }

    #[test]
    fn the_shipped_factors_are_the_fit_of_the_fit_servers() {
        let (fit_half, _) = split(paired());
        let fitted = fit(&fit_half);
        let round = |v: f64, places: i32| (v * 10f64.powi(places)).round() / 10f64.powi(places);
        assert_eq!(
            Factors {
                native_base: round(fitted.native_base, 1),
                native_per_token: round(fitted.native_per_token, 4),
                json_per_token: round(fitted.json_per_token, 4),
            },
            FACTORS,
            "the shipped factors are not the fit of the fixtures' fit servers"
        );
    }

    #[test]
    fn the_shipped_factors_reproduce_the_held_out_error_printed_beside_them() {
        let (_, held) = split(paired());
        assert_eq!(
            held_out_error(FACTORS, &held),
            HELD_OUT_ERROR,
            "the shipped factors no longer reproduce the documented held-out error"
        );
    }

    /// Canary: the held-out check can fail: factors 3 % off, or fitted on the held-out
    /// servers themselves, give another error than the one printed.
    #[test]
    fn canary_other_factors_do_not_reproduce_the_held_out_error() {
        let (_, held) = split(paired());
        let off = Factors {
            native_per_token: FACTORS.native_per_token * 1.03,
            json_per_token: FACTORS.json_per_token * 1.03,
            ..FACTORS
        };
        assert_ne!(held_out_error(off, &held), HELD_OUT_ERROR);
        assert_ne!(held_out_error(fit(&held), &held), HELD_OUT_ERROR);
    }

    #[test]
    fn a_tool_without_a_schema_gets_the_empty_object_and_no_tools_cost_nothing() {
        assert_eq!(
            native_tools_text(&[json!({"name": "ping", "title": "Ping", "annotations": {}})]),
            r#"[{"name":"ping","input_schema":{"type":"object","properties":{}}}]"#
        );
        assert_eq!(tool_definitions(&[]).estimated_tokens, 0);
        let one = tool_definitions(&[json!({"name": "ping"})]);
        assert!(one.estimated_tokens > one.o200k_tokens);
        assert_eq!(json_text(1000).estimated_tokens, 1625);
    }
}
