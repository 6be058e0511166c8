//! Fuzz target `redact`: the property is `ctxopt::fuzz_checks::redact`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ctxopt::fuzz_checks::redact(data));
