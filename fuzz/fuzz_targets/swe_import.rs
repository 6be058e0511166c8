//! Fuzz target `swe_import`: the property is `ctxopt::fuzz_checks::swe_import`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::swe_import(data));
