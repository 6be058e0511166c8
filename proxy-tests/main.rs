//! Integration and interop tests: one test binary, one module per area.

mod bridge;
mod cli_output;
mod compaction;
mod compaction_surface;
mod compaction_watch;
mod dependencies;
mod diagnostics;
mod exit_codes;
mod frame_log;
mod hermetic;
mod hooks;
mod inject;
mod interop;
mod layering;
mod measure_audit;
mod measure_gap;
mod measure_report;
mod no_network;
mod otel;
mod redaction;
mod relay_defects;
mod relay_faults;
mod relay_stream;
mod scenarios;
mod support;
mod wrap;
