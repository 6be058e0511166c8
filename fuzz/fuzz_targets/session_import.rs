//! Fuzz target `session_import`: the property is `ctxopt::fuzz_checks::session_import`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::session_import(data));
