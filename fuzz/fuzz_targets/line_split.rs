//! Fuzz target `line_split`: the property is `ctxopt::fuzz_checks::line_split`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::line_split(data));
