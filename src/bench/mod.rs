//! The optimizer benchmark: scenarios with labelled records run under three strategies
//! (raw, dedupe + truncate, ctxopt) and measured; and the speed benchmark on synthetic
//! sessions. `ctxopt bench` is the front end.
//!
//! - [`scenario`]: the scenario files and their checks;
//! - [`generate`]: the `generate` directive (large deterministic text from a seed);
//! - [`strategy`]: the three strategies;
//! - [`metrics`]: what is measured, and how;
//! - [`report`]: all scenarios × strategies, as a table, JSON and Markdown;
//! - [`speed`]: synthetic sessions and build timings;
//! - [`real`]: real trajectories cut mid-work, ctxopt against [`baseline`]s (tail,
//!   head + tail, dedupe + truncation, BM25 retrieval);
//! - [`session_cut`] and [`interactive`]: real interactive sessions (Claude Code, Codex CLI,
//!   Gemini CLI) cut after a share of their tool calls, the hook's answer after a compaction
//!   against baselines of its size; [`paired`]: ctxopt against each baseline cut by cut,
//!   with the sign test of the cuts where they disagree.

pub(crate) mod baseline;
pub(crate) mod generate;
pub mod interactive;
pub mod metrics;
pub mod paired;
pub mod real;
pub mod report;
pub mod scenario;
pub mod session_cut;
pub mod speed;
pub mod strategy;
