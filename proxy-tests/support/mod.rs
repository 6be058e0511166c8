//! Helpers shared by the proxy's integration tests: running `ctxopt-proxy` around the
//! fixture server or any command, and reading a frame log validated against its schema.

pub(crate) mod command;
pub(crate) mod frames;
pub(crate) mod log;
pub(crate) mod peers;
pub(crate) mod proxy;

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
