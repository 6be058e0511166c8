//! Integration and interop tests: one test binary, one module per area.
mod scenarios;
