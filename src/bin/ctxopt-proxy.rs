//! `ctxopt-proxy [OPTIONS] -- <command> [args…]`: wraps an MCP stdio server.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("ctxopt-proxy: not built yet");
    ExitCode::from(2)
}
