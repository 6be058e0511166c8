//! Helpers shared by the proxy's integration tests: running `ctxopt-proxy` around the
//! fixture server or any command, and reading a frame log validated against its schema.

pub(crate) mod command;
pub(crate) mod frames;
pub(crate) mod log;
pub(crate) mod peers;
pub(crate) mod proxy;

use std::time::{Duration, Instant};

/// Calls `check` every `every` until it gives a value, which it returns; `None` once `limit`
/// has passed without one. The one way the tests wait for another process.
pub(crate) fn poll_until<T>(
    limit: Duration,
    every: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(value) = check() {
            return Some(value);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(every);
    }
}

/// A `_meta` block like the stateless revision's server identity envelope, with an inline
/// base64 icon of `icon_bytes` bytes.
pub(crate) fn meta_with_icon(icon_bytes: usize) -> String {
    let icon: String = (0..icon_bytes.div_ceil(3) * 4)
        .map(|i| b"QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0NTY3ODkrLw"[i % 46] as char)
        .collect();
    format!(
        r#"{{"io.modelcontextprotocol/serverInfo":{{"name":"fixture","version":"1.0.0","icons":[{{"src":"data:image/png;base64,{icon}","mimeType":"image/png"}}]}}}}"#
    )
}
