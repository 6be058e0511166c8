//! Integration and interop tests: one test binary, one module per area.

mod frame_log;
mod relay_faults;
mod support;
