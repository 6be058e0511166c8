//! `ctxopt export --otlp URL LOG…`: frame logs recorded earlier, sent as the same
//! OpenTelemetry spans and metrics the proxy exports live.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use ctxopt::otel::log_spans::{self, Output};
use ctxopt::otel::{ExportConfig, Exporter};
use ctxopt::store::{self, StoreLocation};

/// Arguments of `ctxopt export`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The collector's OTLP/HTTP base URL (`/v1/traces` and `/v1/metrics` are appended),
    /// e.g. http://127.0.0.1:4318. The standard OTEL_EXPORTER_OTLP_* variables give the
    /// headers, timeout and resource.
    #[arg(long, value_name = "URL")]
    otlp: String,
    /// Put tool arguments and results into the spans (after redaction, with the same rules and key as the frame log). They
    /// can hold file contents and secrets; off by default.
    #[arg(long)]
    capture_content: bool,
    /// Frame logs written by ctxopt-proxy.
    #[arg(required = true, value_name = "FRAME-LOG")]
    logs: Vec<PathBuf>,
}

/// Runs `ctxopt export`: exit 0 when the collector took every span, 1 when some were
/// dropped.
pub(crate) fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = ExportConfig::from_env(Some(&args.otlp), args.capture_content)?
        .context("export is disabled (OTEL_SDK_DISABLED=true, or OTEL_TRACES_EXPORTER and OTEL_METRICS_EXPORTER are none)")?;
    let exporter = Exporter::start(&config)?;
    // Captured content is redacted with the key of the default store, so placeholders
    // compare with the frame log's and the store's.
    let content = config.capture_content.then(|| {
        let location = StoreLocation::default_file().unwrap_or(StoreLocation::Memory);
        Arc::new(store::redactor_for(&location))
    });
    let (mut sessions, mut skipped) = (0, 0);
    for log in &args.logs {
        let stats = log_spans::replay(log, content.clone(), &mut |out| match out {
            Output::Span(span) => exporter.send(*span),
            Output::Metrics(metrics) => exporter.send_metrics(metrics),
        })
        .with_context(|| format!("reading {}", log.display()))?;
        sessions += stats.sessions;
        skipped += stats.bad_lines + stats.headless_frames;
        if stats.bad_lines + stats.headless_frames > 0 {
            eprintln!(
                "ctxopt export: {}: skipped {} line(s) that are not frame-log records and {} frame(s) before any header",
                log.display(),
                stats.bad_lines,
                stats.headless_frames
            );
        }
    }
    let report = exporter.finish(None);
    eprintln!(
        "ctxopt export: {} spans from {sessions} session(s) sent to {}; {} dropped{}",
        report.sent,
        args.otlp,
        report.dropped,
        if skipped > 0 {
            "; some log lines skipped (above)"
        } else {
            ""
        }
    );
    match report.problem() {
        Some(problem) => {
            eprintln!("ctxopt export: {problem}");
            Ok(ExitCode::from(1))
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
