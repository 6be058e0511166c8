//! Fuzz target `meta_strip`: the property is `ctxopt::fuzz_checks::meta_strip`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::meta_strip(data));
