//! ctxopt: a transparent MCP wire-tap proxy with token accounting, and a deterministic
//! context optimizer.
//!
//! # Layout
//! - [`protocol`]: the MCP envelope (revisions, `_meta` keys, eras, JSON-RPC error codes).
//! - [`tokenizer`]: token counting shared by every part (o200k_base by default).
//! - [`framelog`]: the frame-log records (a public format) and their writer.
//! - [`relay`]: the byte-exact stdio relay between an MCP client and a server, and its tap;
//!   it defines the traits the rest plugs into it by ([`relay::FrameSink`],
//!   [`relay::FrameHandler`]) and knows nothing of the store or the optimizer.
//! - [`upstream`]: servers reached over the network (Streamable HTTP, `--url`), relayed as a
//!   [`relay::Remote`].
//! - [`records`]: the records format (the optimizer's input, a public interface) and the
//!   session record the store keeps.
//! - [`optimizer`]: records in, a budgeted, provenance-tagged context out.
//! - [`fuzz_checks`]: the properties the fuzz targets (`fuzz/`) check, shared with the
//!   test that replays their corpus.
//! - [`import`]: other tools' session formats converted into records, MCP tool results
//!   among them ([`import::mcp`]), and the `tools/call` pairs of a frame log.
//! - [`hooks`]: Claude Code and Gemini CLI hooks that inject a budgeted context.
//! - [`clients`]: MCP clients' config files edited in place (`wrap`, `unwrap`, `hooks`).
//! - [`redact`]: secrets replaced by keyed placeholders in what is written to disk.
//! - [`store`]: the persistent SQLite store of session records, scoped by workspace.
//! - [`injected`]: the injected tools (`build_context`, …) over the store, and `ctxopt serve`.
//! - [`proxy`]: the relay's traits implemented for the proxy (tool results into the store,
//!   the injected tools answered on the wire).
//! - [`compact`]: oversized tool results compacted on the wire, and served back whole.
//! - [`bench`](mod@bench): the optimizer benchmark (scenarios × strategies, and speed).
//! - [`diagnostics`]: the binaries' own diagnostics (`tracing`, `CTXOPT_LOG`).
//! - [`measure`]: reports over frame logs (`report`), tool-list footprints (`audit`), and
//!   the tool-call gap between what a client says and what the wire shows (`gap`).
//! - [`otel`]: frame pairs as OpenTelemetry spans and metrics, exported over OTLP/HTTP.

pub mod bench;
pub mod clients;
pub(crate) mod compact;
pub mod diagnostics;
pub mod evidence;
pub mod framelog;
pub mod fuzz_checks;
pub mod hooks;
pub mod import;
pub mod injected;
pub mod measure;
pub mod optimizer;
pub mod otel;
mod private_file;
pub mod protocol;
pub mod proxy;
pub mod records;
pub mod redact;
pub mod relay;
pub mod store;
mod sync;
pub mod tokenizer;
pub mod upstream;
