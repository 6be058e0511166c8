//! Which tool outputs are a file's content, for every importer: shell commands that read a
//! file ([`shell`]) and MCP tool calls that read one ([`mcp_tool`]).

pub(crate) mod mcp_tool;
pub(crate) mod shell;
