//! The bridge between the wire and the optimizer: tool results flow into the store
//! ([`ingest`]), and the injected tools (`build_context` and friends) answer from it.

pub mod content;
pub mod file_reads;
pub mod handlers;
pub mod ingest;
pub mod inject;
pub mod tools;
