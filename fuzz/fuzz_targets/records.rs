//! Fuzz target `records`: the property is `ctxopt::fuzz_checks::records`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::records(data));
