//! Fuzz target `id_extraction`: the property is `ctxopt::fuzz_checks::id_extraction`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::id_extraction(data));
