//! Which tool outputs are a file's content, for every importer: shell commands that read a
//! file ([`shell`]) and MCP tool calls that read one ([`mcp_tool`]); and where a change that
//! does not say where it is goes in what was seen of a file ([`seek`]).

pub(crate) mod mcp_tool;
pub(crate) mod seek;
pub(crate) mod shell;
