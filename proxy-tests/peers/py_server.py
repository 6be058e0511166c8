"""A tiny MCP server on the Python SDK (`mcp` 2.3.0), served over stdio.

The interop tests drive it with the SDK's high-level `Client`, which probes `server/discover` and,
because this server answers it, runs the whole session in the stateless 2026-07-28 revision (no
`initialize`). The server identifies itself with an inline base64 icon, so every result carries a
`_meta` server-identity envelope: the frames a proxy logs have a non-zero `meta_tokens`.

Usage: python py_server.py                      (stdio)
       python py_server.py --http PORT [--json]  (Streamable HTTP at http://127.0.0.1:PORT/mcp;
                                                  --json: answers as JSON, not event streams)

`PY_SERVER_ECHO_DESCRIPTION`, when set, replaces the `echo` tool's description: the same server
with one tool redefined, for the tests of a catalog that changed between sessions.

`PY_SERVER_BLOB_TOOL=1` adds the tool `blob(size)`, whose result is one text of `size` characters
(numbered 16-byte records, so a lost, repeated or reordered piece shows): the large result of the
remote benchmark and of the test that a large event-stream answer arrives whole. Off by default,
so the catalog the other tests record stays as it is.
"""

import base64
import functools
import os
import struct
import sys
import zlib

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Icon


def _solid_png(size: int, rgb: tuple[int, int, int]) -> bytes:
    """A deterministic solid-colour PNG, built without any imaging library."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * size
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(row * size, 9))
        + chunk(b"IEND", b"")
    )


ICON = Icon(
    src="data:image/png;base64," + base64.b64encode(_solid_png(48, (32, 96, 160))).decode(),
    mime_type="image/png",
    sizes=["48x48"],
)

server = MCPServer(
    name="ctxopt-test-py-server",
    title="ctxopt test server (Python SDK)",
    version="1.0.0",
    icons=[ICON],
    instructions="A fixed test server for the ctxopt proxy's interop tests.",
)


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool(description=os.environ.get("PY_SERVER_ECHO_DESCRIPTION"))
def echo(text: str) -> str:
    """Returns the text unchanged."""
    return text


@server.tool()
async def count_words(text: str, ctx: Context) -> dict[str, int]:
    """Counts the words of a text, reporting progress per word."""
    words = text.split()
    for done in range(1, len(words) + 1):
        await ctx.report_progress(done, len(words))
    return {"words": len(words), "characters": len(text)}


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason as its error text."""
    raise ToolError(reason)


if os.environ.get("PY_SERVER_BLOB_TOOL") == "1":

    @functools.lru_cache(maxsize=4)
    def _blob(size: int) -> str:
        records = "".join(f"{i:015d}\n" for i in range(size // 16 + 1))
        return records[:size]

    @server.tool(structured_output=False)
    def blob(size: int) -> str:
        """Returns a text of `size` characters: numbered 16-byte records."""
        return _blob(size)


@server.resource("fixture://greeting", mime_type="text/plain")
def greeting() -> str:
    """A fixed greeting."""
    return "hello from the python test server"


@server.prompt()
def summarize(topic: str) -> str:
    """Asks for a summary of a topic."""
    return f"Summarize what is known about {topic} in three sentences."


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--http"] and len(args) in (2, 3) and args[2:] in ([], ["--json"]):
        server.run("streamable-http", port=int(args[1]), json_response=args[2:] == ["--json"])
    elif not args:
        server.run("stdio")
    else:
        sys.exit(f"usage: {sys.argv[0]} [--http PORT [--json]]")
