//! Integration and interop tests: one test binary, one module per area.
mod measure_audit;
mod measure_gap;
mod measure_report;
